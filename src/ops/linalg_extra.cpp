// ef::linalg's LU solves and tridiagonal / banded systems (expm, which loops, is in
// src/function/linalg_expm.cpp): the factorization
// and the tridiagonal solve dispatch their ops (src/ops/linalg_extra_op.cpp); the rest compose
// ops, so they trace, differentiate and vmap.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/linalg.h"
#include "eagerflow/ops/ops.h"
#include "ops/linalg_extra_op.h"
#include "ops/linalg_checks.h"

namespace ef::linalg {
using detail::expect_float;
using detail::known_dim;
using detail::eye_like;
namespace {

constexpr std::int64_t kAll = std::numeric_limits<std::int64_t>::max();

// x's entries along `axis` moved by `by` (result[i] = x[i + by]), zeros shifted in.
Tensor shifted(const Tensor& x, int axis, std::int64_t by) {
  int a = axis < 0 ? x.rank() + axis : axis;
  std::vector<std::int64_t> begin(static_cast<std::size_t>(a + 1), 0), end(static_cast<std::size_t>(a + 1), kAll);
  std::vector<std::pair<std::int64_t, std::int64_t>> pads(static_cast<std::size_t>(x.rank()), {0, 0});
  std::int64_t n = x.shape()[a], k = std::min<std::int64_t>(by < 0 ? -by : by, n);
  if (by >= 0) begin.back() = k;
  else end.back() = n - k;
  pads[static_cast<std::size_t>(a)] = by >= 0 ? std::pair{std::int64_t{0}, k} : std::pair{k, std::int64_t{0}};
  return pad(slice(x, begin, end), pads);
}

// Row i of [..., rows, m] as [..., m].
Tensor row(const Tensor& x, std::int64_t i) {
  std::vector<std::int64_t> begin(static_cast<std::size_t>(x.rank() - 1), 0), end(begin.size(), kAll);
  begin.back() = i;
  end.back() = i + 1;
  return squeeze(slice(x, begin, end), {-2});
}

// The permutation matrices P with (P x)[i] = x[perm[i]], in x's dtype.
Tensor permutation_matrix(const Tensor& perm, std::int64_t n, DType dtype, const char* op) {
  if (!perm.defined() || (perm.dtype() != DType::int32 && perm.dtype() != DType::int64))
    fail(kWrongType, op,
         "perm must be int32 or int64, got " + (perm.defined() ? perm.spec().str() : std::string("undefined")));
  if (perm.rank() < 1 || (perm.shape()[perm.rank() - 1] != n && perm.shape()[perm.rank() - 1] != kDynamic))
    fail(op, "perm " + perm.spec().str() + " must have the matrix's " + std::to_string(n) + " rows in its last axis");
  return one_hot(perm, n, dtype);
}

void expect_lu(const Tensor& lower_upper, const char* op) {
  expect_float(lower_upper, op, "lower_upper", 2);
  if (known_dim(lower_upper, -1, op) != known_dim(lower_upper, -2, op))
    fail(op, "lower_upper must be square matrices, got " + lower_upper.spec().str());
}

Tensor unit_lower(const Tensor& lu) { return set_diag(tril(lu, -1), ones_like(diag_part(lu))); }

}  // namespace

// ---------------------------------------------------------------- LU
std::pair<Tensor, Tensor> lu(const Tensor& a, DType index_dtype) {
  if (index_dtype != DType::int32 && index_dtype != DType::int64)
    fail(kWrongType, "linalg.lu", "output_idx_type must be int32 or int64, got " + std::string(name_of(index_dtype)));
  std::vector<Tensor> r = dispatch(Lu(), std::vector<Tensor>{a});
  return {r[0], index_dtype == DType::int32 ? r[1] : cast(r[1], index_dtype)};
}

Tensor lu_solve(const Tensor& lower_upper, const Tensor& perm, const Tensor& rhs) {
  constexpr const char* op = "linalg.lu_solve";
  expect_lu(lower_upper, op);
  expect_float(rhs, op, "rhs", 2);
  if (known_dim(rhs, -2, op) != known_dim(lower_upper, -1, op))
    fail(op, "rhs " + rhs.spec().str() + " must have the rows of lower_upper " + lower_upper.spec().str());
  Tensor p = permutation_matrix(perm, known_dim(lower_upper, -1, op), lower_upper.dtype(), op);
  Tensor y = triangular_solve(unit_lower(lower_upper), matmul(p, rhs), /*lower=*/true);
  return triangular_solve(lower_upper, y, /*lower=*/false);
}

Tensor lu_reconstruct(const Tensor& lower_upper, const Tensor& perm) {
  constexpr const char* op = "linalg.lu_reconstruct";
  expect_lu(lower_upper, op);
  Tensor p = permutation_matrix(perm, known_dim(lower_upper, -1, op), lower_upper.dtype(), op);
  return matmul(p, matmul(unit_lower(lower_upper), triu(lower_upper)), /*transpose_a=*/true);
}

Tensor lu_matrix_inverse(const Tensor& lower_upper, const Tensor& perm) {
  expect_lu(lower_upper, "linalg.lu_matrix_inverse");
  return lu_solve(lower_upper, perm, eye_like(lower_upper));
}

Tensor sqrtm(const Tensor& a) { return dispatch1(MatrixSquareRoot(), {a}); }

// ---------------------------------------------------------------- tridiagonal and banded
Tensor tridiagonal_solve(const Tensor& diagonals, const Tensor& rhs, bool partial_pivoting) {
  return dispatch1(TridiagonalSolve(partial_pivoting), {diagonals, rhs});
}

Tensor tridiagonal_matmul(const Tensor& diagonals, const Tensor& rhs) {
  constexpr const char* op = "linalg.tridiagonal_matmul";
  expect_float(diagonals, op, "diagonals", 2);
  expect_float(rhs, op, "rhs", 2);
  if (known_dim(diagonals, -2, op) != 3)
    fail(op, "Expected 3 diagonals got " + std::to_string(diagonals.shape()[diagonals.rank() - 2]));
  if (known_dim(diagonals, -1, op) != known_dim(rhs, -2, op))
    fail(op, "diagonals " + diagonals.spec().str() + " and rhs " + rhs.spec().str() + " differ in the matrix size");
  auto column = [&](std::int64_t i) { return expand_dims(row(diagonals, i), -1); };
  return column(0) * shifted(rhs, -2, 1) + column(1) * rhs + column(2) * shifted(rhs, -2, -1);
}

Tensor banded_triangular_solve(const Tensor& bands, const Tensor& rhs, bool lower, bool adjoint) {
  constexpr const char* op = "linalg.banded_triangular_solve";
  expect_float(bands, op, "bands", 2);
  expect_float(rhs, op, "rhs", 2);
  std::int64_t k = known_dim(bands, -2, op), m = known_dim(bands, -1, op);
  if (k < 1) fail(op, "bands must hold the diagonal, got " + bands.spec().str());
  if (known_dim(rhs, -2, op) != m)
    fail(op, "bands " + bands.spec().str() + " and rhs " + rhs.spec().str() + " differ in the matrix size");
  // The dense triangle: band j's entry i goes to column i - j (lower) or i + j (upper), so
  // diag(band) moves j columns left or right.
  std::int64_t diagonal_row = lower ? 0 : k - 1;
  Tensor main = row(bands, diagonal_row);
  // A zero on the diagonal cannot be solved: TF's error, not a silent Inf.
  main = main + 0.0 * check_numerics(1.0 / main, std::string(op) + ": Input matrix is not invertible");
  Tensor dense = diag(main);
  for (std::int64_t j = 1; j < k; ++j) {
    Tensor d = diag(row(bands, lower ? j : k - 1 - j));
    dense = dense + shifted(d, -1, lower ? j : -j);
  }
  return triangular_solve(dense, rhs, lower, adjoint);
}

}  // namespace ef::linalg
