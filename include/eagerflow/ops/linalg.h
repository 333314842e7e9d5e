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

// ---- LU, the matrix exponential, tridiagonal and banded systems (src/ops/linalg_extra.cpp) ----
// (lu, perm): a's rows perm[i] are the rows of L U, L unit lower triangular (below lu's
// diagonal) and U upper (on and above it); perm in index_dtype (int32 or int64). A singular
// matrix is an INVALID_ARGUMENT error. Not differentiable (as TF's).
std::pair<Tensor, Tensor> lu(const Tensor& a, DType index_dtype = DType::int32);
// From lu's results: x with a x = rhs; a itself; a^-1. Differentiable in lower_upper and rhs.
Tensor lu_solve(const Tensor& lower_upper, const Tensor& perm, const Tensor& rhs);
Tensor lu_reconstruct(const Tensor& lower_upper, const Tensor& perm);
Tensor lu_matrix_inverse(const Tensor& lower_upper, const Tensor& perm);
// exp(a) of square matrices: scaling and squaring with a Pade approximant (Higham 2005), the
// order and the number of squarings chosen per matrix from its 1-norm. NaN for a matrix that
// holds Inf or NaN.
Tensor expm(const Tensor& a);
// The principal square root s (s s = a) of real square matrices, by the real Schur form (as TF's);
// NaN for a matrix with a negative real eigenvalue (it has no real square root).
Tensor sqrtm(const Tensor& a);
// TF's compact diagonals [..., 3, m]: superdiagonal (last entry unused), diagonal, subdiagonal
// (first entry unused). x with A x = rhs [..., m, k]; NaN where A cannot be solved.
Tensor tridiagonal_solve(const Tensor& diagonals, const Tensor& rhs, bool partial_pivoting = true);
Tensor tridiagonal_matmul(const Tensor& diagonals, const Tensor& rhs);  // A rhs
// bands [..., k, m]: lower, row j is the j-th subdiagonal (entry i is a[i, i - j]); upper, row
// k - 1 - j is the j-th superdiagonal (entry i is a[i, i + j]). x with a x = rhs (a^T when adjoint).
Tensor banded_triangular_solve(const Tensor& bands, const Tensor& rhs, bool lower = true, bool adjoint = false);

}  // namespace ef::linalg
