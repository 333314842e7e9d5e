#pragma once
// The complex ops (src/ops/complex_op.cpp): what ef::add, ef::exp, ef::abs, ef::matmul ... run
// for complex64 and complex128 tensors (eagerflow/ops/complex.h), each a kernel over
// std::complex elements with TF's gradient. Everything else on complex tensors is a
// composition of these with the ops that move elements.
#include <cstdint>

#include "eagerflow/ops/complex.h"
#include "eagerflow/ops/primitive.h"

namespace ef {

// z -> f(z), complex to complex.
enum class ComplexFn : std::uint8_t {
  neg, conj, exp, log, sqrt, rsqrt, square, reciprocal, sin, cos, tan, sinh, cosh, tanh,
  asin, acos, atan, asinh, acosh, atanh, sign, expm1, log1p
};

class ComplexUnary : public MergeablePrimitive<ComplexUnary> {
 public:
  explicit ComplexUnary(ComplexFn fn) : fn_(fn) {}
  const char* name() const override;
  bool takes_complex() const override { return true; }
  bool is_differentiable() const override { return fn_ != ComplexFn::sign; }
  ComplexFn fn() const { return fn_; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  ComplexFn fn_;
};

// z -> a real number: its real or imaginary part, modulus or argument.
enum class ComplexPartKind : std::uint8_t { real, imag, abs, angle };

class ComplexPart : public MergeablePrimitive<ComplexPart> {
 public:
  explicit ComplexPart(ComplexPartKind kind) : kind_(kind) {}
  const char* name() const override;
  bool takes_complex() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  ComplexPartKind kind_;
};

// (real, imag) -> real + i imag, broadcast.
class MakeComplex : public MergeablePrimitive<MakeComplex> {
 public:
  const char* name() const override { return "complex"; }
  bool takes_bfloat16() const override { return true; }  // refused by infer: TF's tf.complex takes float32/float64 only
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

// Two complex tensors of one dtype, broadcast; equal and not_equal give bools.
enum class ComplexBinaryKind : std::uint8_t { add, sub, mul, div, pow, equal, not_equal };

class ComplexBinary : public MergeablePrimitive<ComplexBinary> {
 public:
  explicit ComplexBinary(ComplexBinaryKind kind) : kind_(kind) {}
  const char* name() const override;
  bool takes_complex() const override { return true; }
  bool is_differentiable() const override {
    return kind_ != ComplexBinaryKind::equal && kind_ != ComplexBinaryKind::not_equal;
  }
  ComplexBinaryKind kind() const { return kind_; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  ComplexBinaryKind kind_;
};

// op(a) @ op(b) over the last two axes (leading axes broadcast), op each of transpose and
// conjugate as flagged (TF's adjoint_a is both): BLAS's cgemm / zgemm.
class ComplexMatMul : public MergeablePrimitive<ComplexMatMul> {
 public:
  ComplexMatMul(bool transpose_a, bool transpose_b, bool conj_a, bool conj_b)
      : ta_(transpose_a), tb_(transpose_b), ca_(conj_a), cb_(conj_b) {}
  const char* name() const override { return "complex_matmul"; }
  bool takes_complex() const override { return true; }
  OpParams parameters() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  bool ta_, tb_, ca_, cb_;
};

namespace detail {
// A defined complex tensor: where ef::add, ef::sum ... take the complex ops' path.
inline bool complex_input(const Tensor& t) { return t.defined() && is_complex(t.dtype()); }
// What ef::exp, ef::add, ef::abs, ef::matmul ... run for complex inputs.
Tensor complex_unary(ComplexFn fn, const Tensor& x);
Tensor complex_binary(ComplexBinaryKind kind, const Tensor& a, const Tensor& b);
Tensor complex_part(ComplexPartKind kind, const Tensor& x);
Tensor complex_matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, bool conj_a, bool conj_b);
// A linear real function applied to a complex tensor part by part: f(re) + i f(im) (sums,
// means, sum_to, where, the gradients of slice and gather); f itself for a real tensor.
template <class Fn>
Tensor by_parts(const Tensor& x, Fn&& f) {
  if (!is_complex(x.dtype())) return f(x);
  return ef::complex(f(ef::real(x)), f(ef::imag(x)));
}
// A complex tensor cast to another dtype (a real one takes the real part, as TF's tf.cast), or
// a real one cast to complex (imaginary part zero).
Tensor complex_cast(const Tensor& x, DType to);
}  // namespace detail

}  // namespace ef
