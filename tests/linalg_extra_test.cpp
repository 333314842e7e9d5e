// ef::linalg's LU, expm, tridiagonal and banded solves (src/ops/linalg_extra*.cpp) against float64
// references computed here, gradients by central differences, eager == traced.
#include <eagerflow/autodiff/grad.h>
#include <eagerflow/function/function.h>
#include <eagerflow/ops/linalg.h>

#include <cmath>
#include <functional>

#include "test_util.h"

namespace {

using namespace ef;
using ef::testing::expect_error;
using ef::testing::expect_tensor_near;

Tensor mat(std::vector<double> v, std::int64_t rows, std::int64_t cols) { return tensor(v, Shape{rows, cols}); }

// d sum(w * f(x)) / dx by central differences, against ef::grad.
void expect_gradient(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, double tol = 1e-6) {
  Tensor w = ef::testing::randn(f(x).shape(), 99);
  auto loss = [&](const Tensor& v) { return sum(f(v) * w); };
  std::vector<double> xs = x.to_vector<double>(), numeric(xs.size());
  const double h = 1e-6;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::vector<double> up = xs, down = xs;
    up[i] += h;
    down[i] -= h;
    numeric[i] = (loss(tensor(up, x.shape())).item<double>() - loss(tensor(down, x.shape())).item<double>()) / (2 * h);
  }
  expect_tensor_near(grad(loss)(x), tensor(numeric, x.shape()), tol);
}

// The dense tridiagonal matrix of compact diagonals [3, m] (float64 reference).
std::vector<double> dense_tridiagonal(const std::vector<double>& d, std::int64_t m) {
  std::vector<double> a(static_cast<std::size_t>(m * m), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    a[i * m + i] = d[m + i];
    if (i + 1 < m) a[i * m + i + 1] = d[i];
    if (i > 0) a[i * m + i - 1] = d[2 * m + i];
  }
  return a;
}

TEST(LinalgExtra, LuFactorsWithTfsPermutation) {
  Tensor a = mat({1, 2, 3, 4, 5, 6, 7, 8, 10}, 3, 3);
  auto [lu, p] = linalg::lu(a);
  EXPECT_EQ(p.dtype(), DType::int32);
  EXPECT_EQ(p.to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, 0, 1}));  // partial pivoting's row order
  // L U holds a's rows perm[i], in order.
  Tensor l = linalg::set_diag(tril(lu, -1), ones(Shape{3}, DType::float64)), u = triu(lu);
  expect_tensor_near(matmul(l, u), gather(a, p, 0), 1e-12);
  expect_tensor_near(linalg::lu_reconstruct(lu, p), a, 1e-12);
  expect_tensor_near(linalg::lu_matrix_inverse(lu, p), linalg::inv(a), 1e-12);
  Tensor b = mat({1, 2, 3, 4, 5, 6}, 3, 2);
  expect_tensor_near(matmul(a, linalg::lu_solve(lu, p, b)), b, 1e-12);
  EXPECT_EQ(linalg::lu(a, DType::int64).second.dtype(), DType::int64);
}

TEST(LinalgExtra, LuBatchesAndRefusesBadInput) {
  Tensor a = ef::testing::randn(Shape{2, 3, 4, 4}, 3);
  auto [lu, p] = linalg::lu(a);
  EXPECT_EQ(p.shape(), (Shape{2, 3, 4}));
  expect_tensor_near(linalg::lu_reconstruct(lu, p), a, 1e-12);
  Tensor rhs = ef::testing::randn(Shape{2, 3, 4, 2}, 4);
  expect_tensor_near(matmul(a, linalg::lu_solve(lu, p, rhs)), rhs, 1e-10);
  expect_error([] { linalg::lu(zeros(Shape{2, 2}, DType::float64)); }, {"not invertible"});
  expect_error([] { linalg::lu(ones(Shape{2, 3}, DType::float64)); }, {"square"});
  expect_error([] { linalg::lu(ones(Shape{2, 2}, DType::int32)); }, {"float32 or float64"});
  expect_error([&] { linalg::lu_solve(lu, p, ones(Shape{2, 3, 5, 1}, DType::float64)); }, {"rhs"});
  expect_error([&] { linalg::lu_reconstruct(lu, cast(p, DType::float64)); }, {"perm"});
}

TEST(LinalgExtra, LuSolveAndInverseDifferentiateThroughTheFactors) {
  Tensor a = mat({4, 1, 2, 0.5, 3, 1, 1, 0.2, 2}, 3, 3);
  auto [lu, p] = linalg::lu(a);
  Tensor b = mat({1, 2, 3, 4, 5, 6}, 3, 2);
  expect_gradient([&](const Tensor& x) { return linalg::lu_solve(x, p, b); }, lu);
  expect_gradient([&](const Tensor& x) { return linalg::lu_solve(lu, p, x); }, b);
  expect_gradient([&](const Tensor& x) { return linalg::lu_matrix_inverse(x, p); }, lu);
  expect_gradient([&](const Tensor& x) { return linalg::lu_reconstruct(x, p); }, lu);
}

// exp(a) by its Taylor series in float64 (enough terms for a small norm).
Tensor taylor_expm(const std::vector<double>& a, std::int64_t n) {
  std::vector<double> result(static_cast<std::size_t>(n * n), 0.0), term(result.size(), 0.0);
  for (std::int64_t i = 0; i < n; ++i) result[i * n + i] = term[i * n + i] = 1.0;
  for (int k = 1; k < 40; ++k) {
    std::vector<double> next(term.size(), 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t l = 0; l < n; ++l) next[i * n + j] += term[i * n + l] * a[l * n + j] / k;
    term = next;
    for (std::size_t i = 0; i < term.size(); ++i) result[i] += term[i];
  }
  return tensor(result, Shape{n, n});
}

TEST(LinalgExtra, ExpmMatchesTaylorSeriesAndClosedForms) {
  // Norms below, between and above the Pade orders' bounds (the last needs squaring).
  for (double scale : {0.005, 0.1, 0.5, 1.5, 4.0}) {
    std::vector<double> a = ef::testing::randn(Shape{4, 4}, 7).to_vector<double>();
    for (double& v : a) v *= scale / 4;
    expect_tensor_near(linalg::expm(tensor(a, Shape{4, 4})), taylor_expm(a, 4),
                       1e-11 * std::max(1.0, std::exp(scale * 2)));
  }
  // A rotation generator: exp = [[cos t, -sin t], [sin t, cos t]]; t = 100 needs 1-norm scaling. TF's count
  // of squarings (floor, where Higham rounds up) leaves t = 10 unscaled at twice the order-13 bound: TF's
  // own error there is 3e-9, and ours the same.
  for (double t : {0.3, 10.0, 100.0}) {
    Tensor r = linalg::expm(mat({0, -t, t, 0}, 2, 2));
    expect_tensor_near(r, mat({std::cos(t), -std::sin(t), std::sin(t), std::cos(t)}, 2, 2), t == 0.3 ? 1e-14 : 1e-8);
  }
  expect_tensor_near(linalg::expm(mat({0, 1, 0, 0}, 2, 2)), mat({1, 1, 0, 1}, 2, 2), 1e-15);  // nilpotent
  expect_tensor_near(linalg::expm(mat({3, 0, 0, -20}, 2, 2)), mat({std::exp(3.0), 0, 0, std::exp(-20.0)}, 2, 2),
                     1e-12 * std::exp(3.0));
  // A batch whose matrices need different orders and squarings.
  Tensor batch = stack({mat({0, -0.01, 0.01, 0}, 2, 2), mat({0, -30, 30, 0}, 2, 2)}, 0);
  Tensor got = linalg::expm(batch);
  expect_tensor_near(
      slice(got, {1}, {2}),
      reshape(mat({std::cos(30.0), -std::sin(30.0), std::sin(30.0), std::cos(30.0)}, 2, 2), Shape{1, 2, 2}), 1e-8);
  expect_tensor_near(slice(got, {0}, {1}), reshape(linalg::expm(mat({0, -0.01, 0.01, 0}, 2, 2)), Shape{1, 2, 2}),
                     1e-15);
  // float32 takes its own orders and bounds.
  Tensor a32 = cast(mat({0, -10, 10, 0}, 2, 2), DType::float32);
  EXPECT_EQ(linalg::expm(a32).dtype(), DType::float32);
  expect_tensor_near(cast(linalg::expm(a32), DType::float64),
                     mat({std::cos(10.0), -std::sin(10.0), std::sin(10.0), std::cos(10.0)}, 2, 2), 1e-4);
  // Inf or NaN in: NaN out (as TF), not an endless squaring.
  std::vector<double> bad = linalg::expm(mat({INFINITY, 0, 0, 1}, 2, 2)).to_vector<double>();
  for (double v : bad) EXPECT_TRUE(std::isnan(v));
  expect_error([] { linalg::expm(ones(Shape{2, 3}, DType::float64)); }, {"square"});
  expect_error([] { linalg::expm(ones(Shape{2, 2}, DType::int32)); }, {"float32 or float64"});
}

TEST(LinalgExtra, ExpmGradientByCentralDifferences) {
  Tensor small = ef::testing::randn(Shape{3, 3}, 21) * 0.3;
  expect_gradient([](const Tensor& x) { return linalg::expm(x); }, small);
  Tensor large = ef::testing::randn(Shape{3, 3}, 22) * 4.0;  // squared several times
  expect_gradient([](const Tensor& x) { return linalg::expm(x); }, large, 1e-5);
}

TEST(LinalgExtra, SqrtmIsThePrincipalRealRoot) {
  // Symmetric positive definite: v sqrt(e) v^T from eigh.
  Tensor x = ef::testing::randn(Shape{2, 4, 4}, 61);
  Tensor a = matmul(x, x, false, true) + linalg::diag(ones(Shape{4}, DType::float64));
  auto [e, v] = linalg::eigh(a);
  expect_tensor_near(linalg::sqrtm(a), matmul(v * expand_dims(sqrt(e), -2), v, false, true), 1e-11);
  // Complex eigenvalues 1 +- 2i: the root has eigenvalues of positive real part (TF's values).
  expect_tensor_near(linalg::sqrtm(mat({1, -2, 2, 1}, 2, 2)),
                     mat({1.27201965, -0.78615138, 0.78615138, 1.27201965}, 2, 2), 1e-8);
  // A general real matrix with real and complex eigenvalues: the root squares back.
  Tensor g = ef::testing::randn(Shape{5, 5}, 62) + linalg::diag(ones(Shape{5}, DType::float64) * 4.0);
  Tensor s = linalg::sqrtm(g);
  expect_tensor_near(matmul(s, s), g, 1e-11);
  Tensor g32 = cast(g, DType::float32);
  EXPECT_EQ(linalg::sqrtm(g32).dtype(), DType::float32);
  expect_tensor_near(cast(linalg::sqrtm(g32), DType::float64), s, 1e-5);
  for (double val : linalg::sqrtm(mat({-1, 0, 0, 4}, 2, 2)).to_vector<double>()) EXPECT_TRUE(std::isnan(val));
  expect_error([] { linalg::sqrtm(ones(Shape{2, 3}, DType::float64)); }, {"square"});
  expect_gradient([](const Tensor& m) { return linalg::sqrtm(m); }, g);
  expect_gradient([](const Tensor& m) { return linalg::sqrtm(m); }, a, 1e-5);
  auto f = function([](const Tensor& m) { return linalg::sqrtm(m) * 2.0; });
  expect_tensor_near(f(g), s * 2.0, 1e-12);
}

TEST(LinalgExtra, TridiagonalSolveMatchesTheDenseSolve) {
  const std::int64_t m = 5;
  std::vector<double> d = ef::testing::randn(Shape{3, m}, 31).to_vector<double>();
  for (std::int64_t i = 0; i < m; ++i) d[m + i] += 4.0;
  Tensor diags = tensor(d, Shape{3, m}), dense = tensor(dense_tridiagonal(d, m), Shape{m, m});
  Tensor rhs = ef::testing::randn(Shape{m, 2}, 32);
  for (bool pivoting : {true, false}) {
    expect_tensor_near(linalg::tridiagonal_solve(diags, rhs, pivoting), linalg::solve(dense, rhs), 1e-12);
    expect_gradient([&](const Tensor& x) { return linalg::tridiagonal_solve(x, rhs, pivoting); }, diags);
    expect_gradient([&](const Tensor& x) { return linalg::tridiagonal_solve(diags, x, pivoting); }, rhs);
  }
  expect_tensor_near(linalg::tridiagonal_matmul(diags, rhs), matmul(dense, rhs), 1e-12);
  expect_gradient([&](const Tensor& x) { return linalg::tridiagonal_matmul(x, rhs); }, diags);
  expect_gradient([&](const Tensor& x) { return linalg::tridiagonal_matmul(diags, x); }, rhs);
  // Batched: each system its own.
  Tensor bd = stack({diags, diags * 2.0}, 0), br = stack({rhs, rhs}, 0);
  expect_tensor_near(linalg::tridiagonal_solve(bd, br),
                     stack({linalg::solve(dense, rhs), linalg::solve(dense * 2.0, rhs)}, 0), 1e-12);
}

TEST(LinalgExtra, TridiagonalPivotingAndSingularSystems) {
  // A zero first pivot: solvable with row swaps, NaN without them (as TF's).
  std::vector<double> d{1, 1, 0, 0, 0, 1, 0, 1, 1};  // [[0, 1, 0], [1, 0, 1], [0, 1, 1]]
  Tensor diags = tensor(d, Shape{3, 3}), rhs = mat({1, 2, 3}, 3, 1);
  expect_tensor_near(linalg::tridiagonal_solve(diags, rhs),
                     linalg::solve(tensor(dense_tridiagonal(d, 3), Shape{3, 3}), rhs), 1e-12);
  for (double v : linalg::tridiagonal_solve(diags, rhs, false).to_vector<double>()) EXPECT_TRUE(std::isnan(v));
  for (double v : linalg::tridiagonal_solve(zeros(Shape{3, 3}, DType::float64), rhs).to_vector<double>())
    EXPECT_TRUE(std::isnan(v));
  expect_error([&] { linalg::tridiagonal_solve(ones(Shape{2, 3}, DType::float64), rhs); }, {"Expected 3 diagonals"});
  expect_error(
      [&] {
        linalg::tridiagonal_solve(diags, ones(Shape{4, 1}, DType::float64));
      },
      {"left-hand", "right-hand"});
  expect_error([&] { linalg::tridiagonal_solve(diags, ones(Shape{3, 1}, DType::float32)); }, {"dtype"});
}

TEST(LinalgExtra, BandedTriangularSolveMatchesTheDenseTriangle) {
  Tensor bands = mat({1, 2, 3, 4, 0.5, 1, 2, 3}, 2, 4), rhs = ef::testing::randn(Shape{4, 3}, 41);
  // Lower: row j is subdiagonal j, entry i at a[i, i - j].
  Tensor lower = mat({1, 0, 0, 0, 1, 2, 0, 0, 0, 2, 3, 0, 0, 0, 3, 4}, 4, 4);
  expect_tensor_near(linalg::banded_triangular_solve(bands, rhs), linalg::solve(lower, rhs), 1e-12);
  expect_tensor_near(linalg::banded_triangular_solve(bands, rhs, true, true), linalg::solve(lower, rhs, true), 1e-12);
  // Upper: the last row is the diagonal, row k - 1 - j superdiagonal j with entry i at a[i, i + j].
  Tensor upper = mat({0.5, 1, 0, 0, 0, 1, 2, 0, 0, 0, 2, 3, 0, 0, 0, 3}, 4, 4);
  Tensor up_bands = mat({1, 2, 3, 4, 0.5, 1, 2, 3}, 2, 4);
  expect_tensor_near(linalg::banded_triangular_solve(up_bands, rhs, false), linalg::solve(upper, rhs), 1e-12);
  expect_tensor_near(linalg::banded_triangular_solve(up_bands, rhs, false, true), linalg::solve(upper, rhs, true),
                     1e-12);
  expect_gradient([&](const Tensor& x) { return linalg::banded_triangular_solve(x, rhs); }, bands);
  expect_gradient([&](const Tensor& x) { return linalg::banded_triangular_solve(up_bands, x, false, true); }, rhs);
  expect_error([&] { linalg::banded_triangular_solve(mat({0, 1, 1, 1}, 1, 4), rhs); }, {"not invertible"});
  expect_error([&] { linalg::banded_triangular_solve(bands, ones(Shape{3, 1}, DType::float64)); }, {"matrix size"});
}

TEST(LinalgExtra, TracedEqualsEager) {
  auto body = [](const Tensor& x) {
    auto [lu, p] = linalg::lu(x + linalg::diag(ones(Shape{4}, DType::float64)) * 3.0);
    Tensor d = stack({slice(x, {0}, {1}), slice(x, {1}, {2}) + 5.0, slice(x, {2}, {3})}, 0);
    d = reshape(d, Shape{3, 4});
    return sum(linalg::expm(x * 3.0)) + sum(linalg::lu_solve(lu, p, x)) + sum(linalg::lu_matrix_inverse(lu, p)) +
           sum(linalg::tridiagonal_solve(d, x)) + sum(linalg::tridiagonal_matmul(d, x)) +
           sum(linalg::banded_triangular_solve(d + 6.0, x));
  };
  Tensor x = ef::testing::randn(Shape{4, 4}, 51);
  Tensor eager = body(x);
  auto f = function(body);
  expect_tensor_near(f(x), eager, 1e-10);
  expect_tensor_near(f(x * 0.1), body(x * 0.1), 1e-10);  // another norm: other squarings in the same graph
}

}  // namespace
