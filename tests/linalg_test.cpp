// ef::linalg (eagerflow/ops/linalg.h): decompositions against their defining identities,
// compositions against hand-computed values, errors with kinds, eager == traced, saving.
// Gradients of every decomposition are checked by central differences in the op table.
#include <eagerflow/ops/linalg.h>
#include <eagerflow/function/function.h>
#include <eagerflow/saving/saved_model.h>

#include <cmath>
#include <filesystem>

#include "test_util.h"

namespace {

using namespace ef;
using ef::testing::expect_error;
using ef::testing::expect_tensor_near;

Tensor mat(std::vector<double> v, std::int64_t rows, std::int64_t cols) { return tensor(v, Shape{rows, cols}); }
Tensor eye3() { return linalg::diag(ones(Shape{3}, DType::float64)); }
Tensor spd(std::uint64_t seed) {
  Tensor x = ef::testing::randn(Shape{2, 3, 3}, seed);
  return matmul(x, x, false, true) + eye3();
}

TEST(Linalg, CholeskyReproducesTheMatrixAndIsLower) {
  Tensor a = spd(1);
  Tensor l = linalg::cholesky(a);
  expect_tensor_near(matmul(l, l, false, true), a, 1e-12);
  expect_tensor_near(linalg::band_part(l, -1, 0), l, 0);
  // Only the lower triangle is read.
  expect_tensor_near(linalg::cholesky(linalg::band_part(a, -1, 0)), l, 1e-15);
  Error err("");
  try {
    linalg::cholesky(mat({1, 2, 2, 1}, 2, 2));
  } catch (const Error& e) {
    err = e;
  }
  EXPECT_EQ(err.code(), ErrorCode::invalid_argument);
  EXPECT_NE(std::string(err.what()).find("not symmetric positive definite"), std::string::npos) << err.what();
}

TEST(Linalg, SolvesInverseAndDeterminants) {
  Tensor a = mat({4, 1, 2, 0, 3, 1, 1, 0, 2}, 3, 3), b = mat({1, 2, 3, 4, 5, 6}, 3, 2);
  expect_tensor_near(matmul(a, linalg::solve(a, b)), b, 1e-12);
  expect_tensor_near(matmul(a, linalg::solve(a, b, /*adjoint=*/true), true), b, 1e-12);
  expect_tensor_near(matmul(a, linalg::inv(a)), eye3(), 1e-12);
  EXPECT_NEAR(linalg::det(a).item<double>(), 4 * 6 + 1 * 1 + 2 * -3, 1e-12);  // 19
  auto [sign, logabs] = linalg::slogdet(-a);
  EXPECT_EQ(sign.item<double>(), -1.0);
  EXPECT_NEAR(logabs.item<double>(), std::log(19.0), 1e-12);
  auto [zsign, zlog] = linalg::slogdet(zeros(Shape{2, 2}, DType::float64));
  EXPECT_EQ(zsign.item<double>(), 0.0);
  EXPECT_TRUE(std::isinf(zlog.item<double>()) && zlog.item<double>() < 0);
  EXPECT_NEAR(linalg::logdet(spd(2)).to_vector<double>()[1], std::log(linalg::det(spd(2)).to_vector<double>()[1]), 1e-10);
  expect_error([&] { linalg::solve(zeros(Shape{2, 2}, DType::float64), ones(Shape{2, 1}, DType::float64)); }, {"not invertible"});
  expect_error([&] { linalg::solve(a, ones(Shape{2, 1}, DType::float64)); }, {"rhs", "rows"});
  expect_error([&] { linalg::solve(a, ones(Shape{3, 1}, DType::float32)); }, {"dtype"});
  expect_error([&] { linalg::inv(ones(Shape{2, 3}, DType::float64)); }, {"square"});
  expect_error([&] { linalg::det(ones(Shape{3}, DType::float64)); }, {"rank >= 2"});
  expect_error([&] { linalg::cholesky(ones(Shape{2, 2}, DType::int32)); }, {"float32 or float64"});
}

TEST(Linalg, TriangularSolvesReadOneTriangle) {
  Tensor t = mat({2, 9, 9, 1, 3, 9, 4, 5, 6}, 3, 3), b = mat({2, 7, 44}, 3, 1);
  Tensor x = linalg::triangular_solve(t, b);  // the 9s above the diagonal are not read
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2, 5}));
  Tensor u = transpose(t, {1, 0});
  expect_tensor_near(linalg::triangular_solve(u, b, /*lower=*/false, /*adjoint=*/true), x, 1e-15);
  expect_tensor_near(linalg::cholesky_solve(linalg::cholesky(spd(3)), ef::testing::randn(Shape{2, 3, 2}, 4)),
                     linalg::solve(spd(3), ef::testing::randn(Shape{2, 3, 2}, 4)), 1e-10);
}

TEST(Linalg, EighSvdQrSatisfyTheirIdentities) {
  Tensor a = spd(5);
  auto [e, v] = linalg::eigh(a);
  std::vector<double> ev = e.to_vector<double>();
  EXPECT_LE(ev[0], ev[1]);
  EXPECT_LE(ev[1], ev[2]);
  expect_tensor_near(matmul(v * expand_dims(e, -2), v, false, true), a, 1e-10);
  Tensor m = ef::testing::randn(Shape{2, 5, 3}, 6);
  linalg::Svd d = linalg::svd(m);
  EXPECT_EQ(d.u.shape(), (Shape{2, 5, 3}));
  EXPECT_EQ(d.v.shape(), (Shape{2, 3, 3}));
  expect_tensor_near(matmul(d.u * expand_dims(d.s, -2), d.v, false, true), m, 1e-10);
  expect_tensor_near(matmul(d.u, d.u, true), broadcast_to(eye3(), Shape{2, 3, 3}), 1e-12);
  linalg::Svd full = linalg::svd(m, /*full_matrices=*/true);
  EXPECT_EQ(full.u.shape(), (Shape{2, 5, 5}));
  expect_tensor_near(linalg::singular_values(m), d.s, 1e-12);
  auto [q, r] = linalg::qr(m);
  EXPECT_EQ(q.shape(), (Shape{2, 5, 3}));
  expect_tensor_near(matmul(q, r), m, 1e-12);
  expect_tensor_near(linalg::band_part(r, 0, -1), r, 0);
  auto [qf, rf] = linalg::qr(m, /*full_matrices=*/true);
  EXPECT_EQ(qf.shape(), (Shape{2, 5, 5}));
  EXPECT_EQ(rf.shape(), (Shape{2, 5, 3}));
  expect_tensor_near(matmul(qf, rf), m, 1e-12);
  // NaN in, NaN out (no LAPACK failure), matrix by matrix.
  Tensor bad = tensor(std::vector<double>{NAN, 0, 0, 1, 2, 0, 0, 3}, Shape{2, 2, 2});
  auto [be, bv] = linalg::eigh(bad);
  EXPECT_TRUE(std::isnan(be.to_vector<double>()[0]));
  EXPECT_EQ(be.to_vector<double>()[2], 2.0);
  EXPECT_TRUE(std::isnan(linalg::svd(bad).s.to_vector<double>()[1]));
  EXPECT_EQ(linalg::svd(bad).s.to_vector<double>()[2], 3.0);
  // Gradients not built yet say so.
  GradientTape tape;
  tape.watch(m);
  Tensor loss = sum(linalg::svd(m).u);
  expect_error([&] { tape.gradient(loss, m); }, {"singular vectors", "not supported"});
}

TEST(Linalg, CompositionsMatchHandValues) {
  Tensor a = mat({1, 2, 3, 4, 5, 6}, 2, 3);
  EXPECT_EQ(linalg::diag_part(a).to_vector<double>(), (std::vector<double>{1, 5}));
  EXPECT_EQ(linalg::trace(a).item<double>(), 6.0);
  EXPECT_EQ(linalg::set_diag(a, tensor(std::vector<double>{-1, -2}, Shape{2})).to_vector<double>(), (std::vector<double>{-1, 2, 3, 4, -2, 6}));
  EXPECT_EQ(linalg::band_part(mat({1, 2, 3, 4, 5, 6, 7, 8, 9}, 3, 3), 0, 1).to_vector<double>(), (std::vector<double>{1, 2, 0, 0, 5, 6, 0, 0, 9}));
  EXPECT_EQ(linalg::diag(tensor(std::vector<double>{7, 8}, Shape{2})).to_vector<double>(), (std::vector<double>{7, 0, 0, 8}));
  EXPECT_EQ(linalg::matvec(a, tensor(std::vector<double>{1, 1, 1}, Shape{3})).to_vector<double>(), (std::vector<double>{6, 15}));
  EXPECT_EQ(linalg::cross(tensor(std::vector<double>{1, 0, 0}, Shape{3}), tensor(std::vector<double>{0, 1, 0}, Shape{3})).to_vector<double>(),
            (std::vector<double>{0, 0, 1}));
  Tensor x = ef::testing::randn(Shape{2, 3, 4}, 7), y = ef::testing::randn(Shape{4, 3, 5}, 8);
  expect_tensor_near(linalg::tensordot(x, y, {1, 2}, {1, 0}), einsum("ijk,kjl->il", x, y), 1e-12);
  EXPECT_EQ(linalg::tensordot(x, ef::testing::randn(Shape{4, 6}, 9), 1).shape(), (Shape{2, 3, 6}));
  Tensor over = ef::testing::randn(Shape{6, 3}, 10), rhs = ef::testing::randn(Shape{6, 1}, 11);
  Tensor sol = linalg::lstsq(over, rhs);  // the residual is orthogonal to the columns
  expect_tensor_near(matmul(over, rhs - matmul(over, sol), true), zeros(Shape{3, 1}, DType::float64), 1e-10);
  expect_tensor_near(matmul(matmul(over, linalg::pinv(over)), over), over, 1e-10);
}

TEST(Linalg, TracedEqualsEagerAndSaves) {
  auto body = [](const Tensor& x) {
    Tensor a = matmul(x, x, false, true) + linalg::diag(ones(Shape{3}, DType::float64));
    auto [e, v] = linalg::eigh(a);
    return linalg::det(a) + sum(linalg::cholesky(a)) + sum(linalg::solve(a, x)) + sum(e) + sum(linalg::qr(x).second) +
           sum(linalg::svd(x).s) + linalg::slogdet(a).second + sum(linalg::triangular_solve(linalg::cholesky(a), x));
  };
  Tensor x = ef::testing::randn(Shape{3, 3}, 12);
  Tensor eager = body(x);
  auto f = function(body);
  expect_tensor_near(f(x), eager, 1e-12);
  auto dir = ef::testing::fresh_temp_dir("linalg");
  save(f, (dir / "m").string());
  expect_tensor_near(load((dir / "m").string())("serving_default", {x})[0], eager, 1e-12);
  std::filesystem::remove_all(dir);
}

}  // namespace
