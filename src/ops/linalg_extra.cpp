// ef::linalg's LU solves, matrix exponential and tridiagonal / banded systems: the factorization
// and the tridiagonal solve dispatch their ops (src/ops/linalg_extra_op.cpp); the rest compose
// ops, so they trace, differentiate and vmap.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/function/control_flow.h"
#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/linalg.h"
#include "eagerflow/ops/ops.h"
#include "ops/linalg_extra_op.h"

namespace ef::linalg {
namespace {

constexpr std::int64_t kAll = std::numeric_limits<std::int64_t>::max();

void expect_float(const Tensor& a, const char* op, const char* what, int min_rank) {
  if (!a.defined()) fail(op, std::string("got an undefined ") + what);
  if (a.dtype() != DType::float32 && a.dtype() != DType::float64)
    fail(kWrongType, op, std::string("takes float32 or float64 ") + what + ", got " + a.spec().str());
  if (a.rank() < min_rank)
    fail(op, std::string(what) + " must have rank >= " + std::to_string(min_rank) + ", got " + a.spec().str());
}

std::int64_t known_dim(const Tensor& a, int axis, const char* op) {
  std::int64_t d = a.shape()[axis < 0 ? a.rank() + axis : axis];
  if (d == kDynamic) fail(ErrorCode::unimplemented, op, "needs known matrix dims, got " + a.spec().str());
  return d;
}

Tensor eye_like(const Tensor& a) { return diag(ones_like(diag_part(a))); }

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

// ---------------------------------------------------------------- expm
namespace {

// The Pade approximant's odd part u = a * (sum b[2i+1] a^2i) and even part v = sum b[2i] a^2i
// for the coefficients b (b[0] first), from the powers a^2, a^4, ... in `even`.
std::pair<Tensor, Tensor> pade(const Tensor& a, const Tensor& eye, const std::vector<Tensor>& even,
                               const std::vector<double>& b) {
  Tensor odd = eye * b[1], ev = eye * b[0];
  for (std::size_t i = 1; 2 * i < b.size(); ++i) {
    odd = odd + even[i - 1] * b[2 * i + 1];
    ev = ev + even[i - 1] * b[2 * i];
  }
  return {matmul(a, odd), ev};
}

// Order 13 groups its terms (Higham 2005, eq. 10.33) to need a^2, a^4, a^6 only.
std::pair<Tensor, Tensor> pade13(const Tensor& a, const Tensor& eye) {
  // clang-format off
  constexpr std::array<double, 14> b{64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                                     129060195264000.0,   10559470521600.0,    670442572800.0,     33522128640.0,
                                     1323241920.0,        40840800.0,          960960.0,           16380.0,
                                     182.0,               1.0};
  // clang-format on
  Tensor a2 = matmul(a, a), a4 = matmul(a2, a2), a6 = matmul(a4, a2);
  Tensor u_inner = matmul(a6, a6 * b[13] + a4 * b[11] + a2 * b[9]) + a6 * b[7] + a4 * b[5] + a2 * b[3] + eye * b[1];
  Tensor v = matmul(a6, a6 * b[12] + a4 * b[10] + a2 * b[8]) + a6 * b[6] + a4 * b[4] + a2 * b[2] + eye * b[0];
  return {matmul(a, u_inner), v};
}

const std::vector<std::vector<double>>& pade_coefficients() {  // orders 3, 5, 7, 9
  static const std::vector<std::vector<double>> c{
      {120.0, 60.0, 12.0, 1.0},
      {30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0},
      {17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0},
      {17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0}};
  return c;
}

}  // namespace

Tensor expm(const Tensor& input) {
  constexpr const char* op = "linalg.expm";
  expect_float(input, op, "matrices", 2);
  if (known_dim(input, -1, op) != known_dim(input, -2, op))
    fail(op, "takes square matrices, got " + input.spec().str());
  const bool f64 = input.dtype() == DType::float64;
  Tensor eye = eye_like(input);
  Tensor l1 = expand_dims(max(sum(abs(input), {-2}), {-1}, /*keepdims=*/true), -1);  // [..., 1, 1]
  // Each matrix takes the lowest order whose bound its 1-norm meets; past the last bound the
  // matrix is scaled by 2^-s and the result squared s times (Higham 2005's thetas, TF's choice of s).
  std::vector<double> bounds = f64 ? std::vector<double>{1.495585217958292e-2, 2.539398330063230e-1,
                                                         9.504178996162932e-1, 2.097847961257068}
                                   : std::vector<double>{4.258730016922831e-1, 1.880152677804762};
  double max_norm = f64 ? 5.371920351148152 : 3.925724783138660;
  // Inf or NaN anywhere makes the whole result NaN (as TF's); the computation runs on zeros
  // instead, so that neither the squaring count nor the solve sees them.
  Tensor finite = all(equal(l1 * 0.0, zeros_like(l1)));
  Tensor a = where(finite, input, zeros_like(input));
  Tensor safe_l1 = where(finite, l1, zeros_like(l1));
  Tensor squarings = stop_gradient(maximum(floor(log(safe_l1 / max_norm) / std::log(2.0)), zeros_like(l1)));
  Tensor scaled = a / pow(full_like(squarings, 2.0), squarings);
  std::vector<Tensor> even{matmul(a, a)};
  std::size_t low_orders = bounds.size();  // the orders below the scaled one
  for (std::size_t i = 1; i < (f64 ? 4u : 2u); ++i) even.push_back(matmul(even.back(), even[0]));
  std::vector<std::pair<Tensor, Tensor>> uv;
  for (std::size_t i = 0; i < low_orders; ++i) uv.push_back(pade(a, eye, even, pade_coefficients()[i]));
  if (f64) {
    uv.push_back(pade13(scaled, eye));
  } else {
    Tensor s2 = matmul(scaled, scaled), s4 = matmul(s2, s2), s6 = matmul(s4, s2);
    uv.push_back(pade(scaled, eye, {s2, s4, s6}, pade_coefficients()[2]));
  }
  Tensor u = uv.back().first, v = uv.back().second;
  for (std::size_t i = low_orders; i-- > 0;) {
    Tensor take = l1 < bounds[i];
    u = where(take, uv[i].first, u);
    v = where(take, uv[i].second, v);
  }
  Tensor r = solve(v - u, v + u);
  Tensor most = max(squarings);
  std::vector<Tensor> done = while_loop(
      [most](const std::vector<Tensor>& vars) { return vars[0] < most; },
      [squarings](const std::vector<Tensor>& vars) {
        return std::vector<Tensor>{vars[0] + 1.0, where(vars[0] < squarings, matmul(vars[1], vars[1]), vars[1])};
      },
      {zeros_like(most), r});
  return where(finite, done[1], full_like(done[1], std::numeric_limits<double>::quiet_NaN()));
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
