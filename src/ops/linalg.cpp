// ef::linalg's public functions: the decompositions dispatch their ops (src/ops/linalg_op.cpp);
// the rest are compositions of ops.
#include "eagerflow/ops/linalg.h"

#include <algorithm>
#include <limits>
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "ops/linalg_op.h"

namespace ef::linalg {
namespace {

void expect_float_matrices(const Tensor& a, const char* op, int min_rank = 2) {
  if (!a.defined()) fail(op, "got an undefined tensor");
  if (a.dtype() != DType::float32 && a.dtype() != DType::float64)
    fail(kWrongType, op, "takes float32 or float64 tensors, got " + a.spec().str());
  if (a.rank() < min_rank) fail(op, "needs rank >= " + std::to_string(min_rank) + ", got " + a.spec().str());
}

std::int64_t static_dim(const Tensor& a, int axis, const char* op) {
  std::int64_t d = a.shape()[axis < 0 ? a.rank() + axis : axis];
  if (d == kDynamic) fail(ErrorCode::unimplemented, op, "needs known matrix dims, got " + a.spec().str());
  return d;
}

// [rows, cols] int64 grids of the row and column index, for masks of the last two axes.
std::pair<Tensor, Tensor> index_grids(std::int64_t rows, std::int64_t cols) {
  Tensor r = reshape(arange(rows, DType::int64), Shape{rows, 1});
  Tensor c = reshape(arange(cols, DType::int64), Shape{1, cols});
  return {r, c};
}

// Identity matrices shaped like `like` (its last two dims square).
Tensor eye_batch(const Tensor& like) { return diag(ones_like(diag_part(like))); }

}  // namespace

Tensor cholesky(const Tensor& a) { return dispatch1(Cholesky(), {a}); }
Tensor solve(const Tensor& matrix, const Tensor& rhs, bool adjoint) { return dispatch1(MatrixSolve(adjoint), {matrix, rhs}); }
Tensor triangular_solve(const Tensor& matrix, const Tensor& rhs, bool lower, bool adjoint) {
  return dispatch1(TriangularSolve(lower, adjoint), {matrix, rhs});
}

std::pair<Tensor, Tensor> slogdet(const Tensor& a) {
  std::vector<Tensor> r = dispatch(LogAbsDet(), std::vector<Tensor>{a});
  return {r[0], r[1]};
}

std::pair<Tensor, Tensor> eigh(const Tensor& a) {
  std::vector<Tensor> r = dispatch(SelfAdjointEig(), std::vector<Tensor>{a});
  return {r[0], r[1]};
}
Tensor eigvalsh(const Tensor& a) { return eigh(a).first; }

Svd svd(const Tensor& a, bool full_matrices) {
  std::vector<Tensor> r = dispatch(SingularValueDecomposition(full_matrices), std::vector<Tensor>{a});
  return {r[0], r[1], r[2]};
}
Tensor singular_values(const Tensor& a) { return svd(a).s; }

std::pair<Tensor, Tensor> qr(const Tensor& a, bool full_matrices) {
  std::vector<Tensor> r = dispatch(Qr(full_matrices), std::vector<Tensor>{a});
  return {r[0], r[1]};
}

Tensor adjoint(const Tensor& a) {
  expect_float_matrices(a, "linalg.adjoint");
  std::vector<int> perm(static_cast<std::size_t>(a.rank()));
  for (int i = 0; i < a.rank(); ++i) perm[static_cast<std::size_t>(i)] = i;
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(a, perm);
}

Tensor inv(const Tensor& a, bool adjoint_a) {
  expect_float_matrices(a, "linalg.inv");
  if (static_dim(a, -2, "linalg.inv") != static_dim(a, -1, "linalg.inv"))
    fail("linalg.inv", "takes square matrices, got " + a.spec().str());
  return solve(a, eye_batch(a), adjoint_a);
}

Tensor det(const Tensor& a) {
  auto [sign, logabs] = slogdet(a);
  return sign * exp(logabs);
}

Tensor logdet(const Tensor& a) {
  // log det = 2 sum(log(diag(cholesky(a)))) for a symmetric positive definite a.
  return sum(log(diag_part(cholesky(a))), {-1}) * 2.0;
}

Tensor cholesky_solve(const Tensor& chol, const Tensor& rhs) {
  // chol chol^T x = rhs: two triangular solves.
  return triangular_solve(chol, triangular_solve(chol, rhs, /*lower=*/true), /*lower=*/true, /*adjoint=*/true);
}

Tensor lstsq(const Tensor& matrix, const Tensor& rhs, double l2_regularizer) {
  expect_float_matrices(matrix, "linalg.lstsq");
  if (!(l2_regularizer >= 0)) fail("linalg.lstsq", "l2_regularizer must be >= 0, got " + std::to_string(l2_regularizer));
  std::int64_t m = static_dim(matrix, -2, "linalg.lstsq"), n = static_dim(matrix, -1, "linalg.lstsq");
  if (m >= n) {  // overdetermined: (A^T A + l2 I) x = A^T b
    Tensor gram = matmul(matrix, matrix, /*transpose_a=*/true);
    if (l2_regularizer > 0) gram = gram + eye_batch(gram) * l2_regularizer;
    return cholesky_solve(cholesky(gram), matmul(matrix, rhs, /*transpose_a=*/true));
  }
  // underdetermined: the minimum-norm x = A^T (A A^T + l2 I)^-1 b
  Tensor gram = matmul(matrix, matrix, false, /*transpose_b=*/true);
  if (l2_regularizer > 0) gram = gram + eye_batch(gram) * l2_regularizer;
  return matmul(matrix, cholesky_solve(cholesky(gram), rhs), /*transpose_a=*/true);
}

Tensor pinv(const Tensor& a, double rcond) {
  expect_float_matrices(a, "linalg.pinv");
  std::int64_t m = static_dim(a, -2, "linalg.pinv"), n = static_dim(a, -1, "linalg.pinv");
  if (rcond < 0) {
    double eps = a.dtype() == DType::float32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
    rcond = 10.0 * static_cast<double>(std::max(m, n)) * eps;
  }
  Svd d = svd(a);
  // Singular values at most rcond * the largest are treated as zero.
  Tensor cutoff = max(d.s, {-1}, /*keepdims=*/true) * rcond;
  Tensor kept = d.s > cutoff;
  Tensor s_inv = where(kept, 1.0 / where(kept, d.s, ones_like(d.s)), zeros_like(d.s));
  return matmul(d.v * expand_dims(s_inv, -2), d.u, false, /*transpose_b=*/true);
}

Tensor band_part(const Tensor& a, std::int64_t num_lower, std::int64_t num_upper) {
  if (!a.defined() || a.rank() < 2) fail("linalg.band_part", "takes matrices (rank >= 2), got " + (a.defined() ? a.spec().str() : std::string("undefined")));
  std::int64_t rows = static_dim(a, -2, "linalg.band_part"), cols = static_dim(a, -1, "linalg.band_part");
  auto [r, c] = index_grids(rows, cols);
  Tensor keep = ones(Shape{rows, cols}, DType::bool_);
  if (num_lower >= 0) keep = logical_and(keep, (r - c) <= static_cast<double>(num_lower));
  if (num_upper >= 0) keep = logical_and(keep, (c - r) <= static_cast<double>(num_upper));
  return where(keep, a, zeros_like(a));
}

Tensor diag(const Tensor& diagonal) {
  if (!diagonal.defined() || diagonal.rank() < 1) fail("linalg.diag", "takes a tensor of rank >= 1 (the diagonals)");
  std::int64_t n = static_dim(diagonal, -1, "linalg.diag");
  auto [r, c] = index_grids(n, n);
  return where(equal(r, c), expand_dims(diagonal, -1), zeros_like(expand_dims(diagonal, -1)));
}

Tensor diag_part(const Tensor& a) {
  if (!a.defined() || a.rank() < 2) fail("linalg.diag_part", "takes matrices (rank >= 2)");
  std::int64_t rows = static_dim(a, -2, "linalg.diag_part"), cols = static_dim(a, -1, "linalg.diag_part");
  std::int64_t k = std::min(rows, cols);
  // Element (i, i) is element i * (cols + 1) of the flattened matrix.
  std::vector<std::int64_t> flat(a.shape().begin(), a.shape().end() - 2);
  flat.push_back(rows * cols);
  Tensor at = arange(0.0, static_cast<double>(k) * static_cast<double>(cols + 1), static_cast<double>(cols + 1), DType::int64);
  return gather(reshape(a, Shape(flat)), at, -1);
}

Tensor set_diag(const Tensor& a, const Tensor& diagonal) {
  if (!a.defined() || a.rank() < 2) fail("linalg.set_diag", "takes matrices (rank >= 2)");
  std::int64_t rows = static_dim(a, -2, "linalg.set_diag"), cols = static_dim(a, -1, "linalg.set_diag");
  std::int64_t k = std::min(rows, cols);
  if (diagonal.rank() != a.rank() - 1 || diagonal.shape()[diagonal.rank() - 1] != k)
    fail("linalg.set_diag", "the diagonal " + diagonal.spec().str() + " must be [..., " + std::to_string(k) + "] for " + a.spec().str());
  auto [r, c] = index_grids(rows, cols);
  // Column j of the diagonal row vector lands on (j, j); pad it to cols when rows < cols.
  Tensor d = diagonal;
  if (cols > k) {
    std::vector<std::pair<std::int64_t, std::int64_t>> widths(static_cast<std::size_t>(d.rank()), {0, 0});
    widths.back() = {0, cols - k};
    d = pad(d, widths);
  }
  return where(equal(r, c), expand_dims(d, -2), a);
}

Tensor trace(const Tensor& a) { return sum(diag_part(a), {-1}); }

Tensor matvec(const Tensor& a, const Tensor& b, bool transpose_a) {
  return squeeze(matmul(a, expand_dims(b, -1), transpose_a), {-1});
}

Tensor cross(const Tensor& a, const Tensor& b) {
  if (a.rank() < 1 || a.shape()[a.rank() - 1] != 3 || b.rank() < 1 || b.shape()[b.rank() - 1] != 3)
    fail("linalg.cross", "takes 3-vectors in the last axis, got " + a.spec().str() + " and " + b.spec().str());
  auto at = [](const Tensor& x, std::int64_t i) { return gather(x, tensor(std::vector<std::int64_t>{i}, Shape{}), -1); };
  Tensor x = at(a, 1) * at(b, 2) - at(a, 2) * at(b, 1);
  Tensor y = at(a, 2) * at(b, 0) - at(a, 0) * at(b, 2);
  Tensor z = at(a, 0) * at(b, 1) - at(a, 1) * at(b, 0);
  return stack({x, y, z}, -1);
}

Tensor tensordot(const Tensor& a, const Tensor& b, const std::vector<int>& a_axes, const std::vector<int>& b_axes) {
  if (a_axes.size() != b_axes.size())
    fail("tensordot", "a_axes and b_axes must have the same length, got " + std::to_string(a_axes.size()) + " and " + std::to_string(b_axes.size()));
  std::vector<int> ac, bc;
  for (int x : a_axes) ac.push_back(normalize_axis(x, a.rank(), "tensordot"));
  for (int x : b_axes) bc.push_back(normalize_axis(x, b.rank(), "tensordot"));
  for (std::size_t i = 0; i < ac.size(); ++i)
    if (a.shape()[ac[i]] != b.shape()[bc[i]])
      fail("tensordot", "contracted dims differ: " + a.spec().str() + " axis " + std::to_string(ac[i]) + " and " + b.spec().str() +
                            " axis " + std::to_string(bc[i]));
  // a's free axes then its contracted ones; b's contracted ones then its free ones; one matmul.
  std::vector<int> a_perm, b_perm;
  std::vector<std::int64_t> out_dims;
  std::int64_t free_a = 1, free_b = 1, inner = 1;
  for (int i = 0; i < a.rank(); ++i)
    if (std::find(ac.begin(), ac.end(), i) == ac.end()) { a_perm.push_back(i); free_a *= a.shape()[i]; out_dims.push_back(a.shape()[i]); }
  for (int i : ac) { a_perm.push_back(i); inner *= a.shape()[i]; }
  for (int i : bc) b_perm.push_back(i);
  for (int i = 0; i < b.rank(); ++i)
    if (std::find(bc.begin(), bc.end(), i) == bc.end()) { b_perm.push_back(i); free_b *= b.shape()[i]; out_dims.push_back(b.shape()[i]); }
  Tensor a2 = reshape(transpose(a, a_perm), Shape{free_a, inner});
  Tensor b2 = reshape(transpose(b, b_perm), Shape{inner, free_b});
  return reshape(matmul(a2, b2), Shape(out_dims));
}

Tensor tensordot(const Tensor& a, const Tensor& b, int axes) {
  if (axes < 0 || axes > a.rank() || axes > b.rank())
    fail("tensordot", "axes must be in [0, min(rank a, rank b)], got " + std::to_string(axes));
  std::vector<int> aa, ba;
  for (int i = 0; i < axes; ++i) {
    aa.push_back(a.rank() - axes + i);
    ba.push_back(i);
  }
  return tensordot(a, b, aa, ba);
}

}  // namespace ef::linalg
