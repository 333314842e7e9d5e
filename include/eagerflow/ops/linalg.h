#pragma once
// ef::linalg: TensorFlow's tf.linalg on float32/float64 matrices in the last two axes (leading
// axes are a batch). The decompositions are ops whose kernels call LAPACK (OpenBLAS, through
// LAPACKE) and whose gradients are TF's formulas; the rest are compositions of ops. All of them
// trace, differentiate where TF does, vmap and save like any op. Include this header on its own
// (it is not part of eagerflow.h).
#include <cstdint>
#include <utility>

#include "eagerflow/core/tensor.h"

namespace ef::linalg {

// ---- decompositions and solvers (LAPACK) ----
// Lower-triangular L with L L^T = a (only a's lower triangle is read); a matrix that is not
// positive definite is an INVALID_ARGUMENT error.
Tensor cholesky(const Tensor& a);
// x with a x = rhs (a^T x = rhs when adjoint); a singular matrix is an INVALID_ARGUMENT error.
Tensor solve(const Tensor& matrix, const Tensor& rhs, bool adjoint = false);
// x with tri(a) x = rhs for the lower (or upper) triangle of a; a^T when adjoint.
Tensor triangular_solve(const Tensor& matrix, const Tensor& rhs, bool lower = true, bool adjoint = false);
// (sign, log|det a|): a singular matrix gives (0, -inf).
std::pair<Tensor, Tensor> slogdet(const Tensor& a);
// Eigenvalues ascending and eigenvectors (columns) of a symmetric matrix (its lower triangle).
std::pair<Tensor, Tensor> eigh(const Tensor& a);
Tensor eigvalsh(const Tensor& a);
// a = u diag(s) v^T, s descending. full_matrices: u [m, m] and v [n, n]; else [m, k], [n, k].
struct Svd {
  Tensor s, u, v;
};
Svd svd(const Tensor& a, bool full_matrices = false);
Tensor singular_values(const Tensor& a);
// a = q r, q with orthonormal columns ([m, k] or [m, m] with full_matrices), r upper triangular.
std::pair<Tensor, Tensor> qr(const Tensor& a, bool full_matrices = false);

// ---- compositions ----
Tensor inv(const Tensor& a, bool adjoint = false);
Tensor det(const Tensor& a);
Tensor logdet(const Tensor& a);  // of a symmetric positive definite matrix (via cholesky)
// Least squares: argmin |a x - rhs|^2 + l2 |x|^2 (normal equations through cholesky, as TF's fast path).
Tensor lstsq(const Tensor& matrix, const Tensor& rhs, double l2_regularizer = 0.0);
Tensor cholesky_solve(const Tensor& chol, const Tensor& rhs);
Tensor pinv(const Tensor& a, double rcond = -1.0);  // rcond < 0: 10 * max(m, n) * epsilon
// The band of num_lower sub- and num_upper super-diagonals (negative: all of them).
Tensor band_part(const Tensor& a, std::int64_t num_lower, std::int64_t num_upper);
Tensor diag(const Tensor& diagonal);       // [..., n] -> [..., n, n]
Tensor diag_part(const Tensor& a);         // [..., m, n] -> [..., min(m, n)]
Tensor set_diag(const Tensor& a, const Tensor& diagonal);
Tensor trace(const Tensor& a);             // [..., m, n] -> [...]
Tensor adjoint(const Tensor& a);           // the last two axes swapped (real dtypes)
Tensor matvec(const Tensor& a, const Tensor& b, bool transpose_a = false);
Tensor cross(const Tensor& a, const Tensor& b);  // of 3-vectors in the last axis
// TF's tensordot: sum over a's last `axes` axes against b's first ones.
Tensor tensordot(const Tensor& a, const Tensor& b, int axes);
Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int>& a_axes, const std::vector<int>& b_axes);

}  // namespace ef::linalg
