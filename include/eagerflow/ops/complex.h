#pragma once
// Complex tensors (DType::complex64, DType::complex128): TF's tf.complex, tf.math.real/imag/
// conj/angle, and the FFTs of tf.signal. The arithmetic needs nothing new: ef::add, ef::mul,
// ef::div, ef::exp, ef::abs, ef::matmul, ef::sum, ef::cast and the others of ops.h take complex
// tensors and run the complex ops (src/ops/complex_op.h) for them; ops that only move elements
// (reshape, slice, concat, gather, transpose, cond, while) take them as they are.
//
// Gradients follow TF's convention: the gradient of a real loss L with respect to z = x + iy is
// dL/dx + i dL/dy, so a holomorphic f passes g * conj(f'(z)) back. Include this header on its
// own (it is not part of eagerflow.h).
#include <cstdint>
#include <utility>
#include <vector>

#include "eagerflow/core/complex_dtype.h"
#include "eagerflow/core/tensor.h"

namespace ef {

// real + i imag, broadcast; float32 parts make complex64, float64 parts complex128. The parts
// must have the same dtype (as TF's tf.complex).
Tensor complex(const Tensor& real, const Tensor& imag);
// The parts, float32 of complex64 and float64 of complex128. A real tensor is its own real part
// (and has imag zeros), as TF's tf.math.real/imag.
Tensor real(const Tensor& x);
Tensor imag(const Tensor& x);
// The complex conjugate (a real tensor is returned as it is).
Tensor conj(const Tensor& x);
// The argument atan2(imag, real); 0 or pi for a real tensor (TF's tf.math.angle).
Tensor angle(const Tensor& x);
// op(a) @ op(b), each operand transposed and/or conjugated as flagged (TF's adjoint_a is both);
// conjugating a real operand changes nothing.
Tensor matmul_conj(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, bool conj_a, bool conj_b);

namespace linalg {
// The eigenvalues and right eigenvectors (columns, unit norm) of general square matrices
// [..., n, n] (LAPACK's geev): complex64 for float32/complex64 input, complex128 otherwise, as
// TF's tf.linalg.eig. Not differentiable here (TF's gradient is not built).
std::pair<Tensor, Tensor> eig(const Tensor& a);
Tensor eigvals(const Tensor& a);
}  // namespace linalg

namespace signal {

// The discrete Fourier transforms of the innermost 1, 2 or 3 axes of a complex tensor
// (unnormalized forward; the inverse divides by the number of points), as TF's tf.signal.fft,
// ifft, fft2d, ifft2d, fft3d and ifft3d.
Tensor fft(const Tensor& x);
Tensor ifft(const Tensor& x);
Tensor fft2d(const Tensor& x);
Tensor ifft2d(const Tensor& x);
Tensor fft3d(const Tensor& x);
Tensor ifft3d(const Tensor& x);
// Real to complex over the innermost `fft_length.size()` axes (1 to 3): the input is cropped or
// zero-padded to fft_length and the last axis keeps fft_length.back() / 2 + 1 frequencies;
// empty fft_length: the input's own lengths. float32 gives complex64, float64 complex128.
Tensor rfft(const Tensor& x, std::vector<std::int64_t> fft_length = {}, int rank = 1);
// The inverse: complex frequencies (the last axis holding n / 2 + 1 of them) to n real points;
// empty fft_length: n = 2 * (last - 1).
Tensor irfft(const Tensor& x, std::vector<std::int64_t> fft_length = {}, int rank = 1);

}  // namespace signal
}  // namespace ef
