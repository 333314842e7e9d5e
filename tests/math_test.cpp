// ef::math (eagerflow/ops/math.h): TF's tf.math compositions against double-precision
// references, their gradients, special values, and eager == traced.
#include <eagerflow/ops/math.h>

#include <cmath>
#include <limits>

#include "test_util.h"

namespace {

using namespace ef;
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> values(const Tensor& t) { return cast(t, DType::float64).to_vector<double>(); }

TEST(Math, Log1pIsAccurateForTinyAndLargeValues) {
  Tensor x = tensor(std::vector<double>{1e-20, -1e-10, 1e-5, 0.5, -0.5, 10.0, 1e30, kInf, -1.0}, Shape{9});
  std::vector<double> got = values(math::log1p(x));
  std::vector<double> want{std::log1p(1e-20), std::log1p(-1e-10), std::log1p(1e-5), std::log1p(0.5), std::log1p(-0.5),
                           std::log1p(10.0), std::log1p(1e30), kInf, -kInf};
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) EXPECT_EQ(got[i], want[i]) << i;
    else EXPECT_NEAR(got[i], want[i], 4e-16 * std::abs(want[i])) << i;
  }
  // float32 too: log(1 + 1e-10f) would be 0.
  EXPECT_NEAR(math::log1p(scalar(1e-10f)).item<float>(), 1e-10f, 1e-17f);
}

TEST(Math, SoftplusStaysAccurateFarFromZero) {
  Tensor x = tensor(std::vector<double>{-40.0, -20.0, 0.0, 3.0, 50.0, 1000.0}, Shape{6});
  std::vector<double> got = values(math::softplus(x));
  for (std::size_t i = 0; i < got.size(); ++i) {
    double v = x.to_vector<double>()[i];
    double want = v > 30 ? v + std::exp(-v) : std::log1p(std::exp(v));
    EXPECT_NEAR(got[i], want, 1e-15 * std::max(1.0, std::abs(want))) << v;
  }
  // Its gradient is the sigmoid (away from the kink of relu at 0).
  Tensor p = tensor(std::vector<double>{-3.0, -0.5, 0.7, 4.0}, Shape{4});
  GradientTape tape;
  tape.watch(p);
  Tensor g = tape.gradient(sum(math::softplus(p)), p);
  std::vector<double> gv = values(g);
  for (std::size_t i = 0; i < gv.size(); ++i) {
    double v = p.to_vector<double>()[i];
    EXPECT_NEAR(gv[i], 1 / (1 + std::exp(-v)), 1e-14);
  }
}

TEST(Math, ReduceProdHandlesZerosSignsAndEmptyAxes) {
  Tensor x = tensor(std::vector<double>{2, -3, 0, 4, 0.5, -1}, Shape{2, 3});
  EXPECT_EQ(values(math::reduce_prod(x)), std::vector<double>{0.0});
  EXPECT_EQ(values(math::reduce_prod(x, {1})), (std::vector<double>{0.0, -2.0}));
  EXPECT_EQ(values(math::reduce_prod(x, {0}, true)), (std::vector<double>{8.0, -1.5, 0.0}));
  EXPECT_EQ(math::reduce_prod(x, {0}, true).shape(), Shape({1, 3}));
  EXPECT_EQ(values(math::reduce_prod(zeros(Shape{2, 0}, DType::float64), {1})), (std::vector<double>{1.0, 1.0}));
  // d/dx of a product is the product of the others, zeros included.
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(math::reduce_prod(x, {1})), x);
  EXPECT_EQ(values(g), (std::vector<double>{0.0, 0.0, -6.0, -0.5, -4.0, 2.0}));
}

TEST(Math, ReduceLogsumexpIsStableAndKeepsMinusInfinity) {
  Tensor x = tensor(std::vector<double>{1000, 1000, -kInf, -kInf, 1, 2}, Shape{3, 2});
  std::vector<double> got = values(math::reduce_logsumexp(x, {1}));
  EXPECT_NEAR(got[0], 1000 + std::log(2.0), 1e-12);
  EXPECT_EQ(got[1], -kInf);
  EXPECT_NEAR(got[2], std::log(std::exp(1.0) + std::exp(2.0)), 1e-15);
  GradientTape tape;
  Tensor y = tensor(std::vector<double>{1, 2, 3}, Shape{3});
  tape.watch(y);
  std::vector<double> g = values(tape.gradient(math::reduce_logsumexp(y), y));  // the softmax
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(g[static_cast<std::size_t>(i)], std::exp(i + 1.0) / z, 1e-15);
}

TEST(Math, MomentsNormsAndCounts) {
  Tensor x = tensor(std::vector<double>{1, 2, 3, 4, 5, 7}, Shape{2, 3});
  EXPECT_NEAR(values(math::reduce_variance(x))[0], 35.0 / 9.0, 1e-14);  // mean 11/3, mean of squares 52/3
  std::vector<double> var_rows = values(math::reduce_variance(x, {1}));
  EXPECT_NEAR(var_rows[0], 2.0 / 3.0, 1e-15);
  EXPECT_NEAR(var_rows[1], 14.0 / 9.0, 1e-14);  // mean 16/3: deviations -4/3, -1/3, 5/3
  EXPECT_NEAR(values(math::reduce_std(x, {1}))[0], std::sqrt(2.0 / 3.0), 1e-15);
  EXPECT_NEAR(values(math::reduce_euclidean_norm(x))[0], std::sqrt(104.0), 1e-13);
  Tensor n = math::count_nonzero(tensor(std::vector<double>{0, kNaN, -0.0, 2}, Shape{4}));
  EXPECT_EQ(n.dtype(), DType::int64);
  EXPECT_EQ(n.item<std::int64_t>(), 2);  // NaN counts, -0 does not
  std::vector<double> unit = values(math::l2_normalize(tensor(std::vector<double>{3, 4}, Shape{2})));
  EXPECT_NEAR(unit[0], 0.6, 1e-15);
  EXPECT_NEAR(unit[1], 0.8, 1e-15);
  EXPECT_EQ(values(math::l2_normalize(zeros(Shape{2}, DType::float64))), (std::vector<double>{0.0, 0.0}));
}

TEST(Math, SafeDivisionsAndTests) {
  Tensor x = tensor(std::vector<double>{1, kInf, kNaN, 6}, Shape{4});
  Tensor y = tensor(std::vector<double>{0, 0, 0, 3}, Shape{4});
  EXPECT_EQ(values(math::divide_no_nan(x, y)), (std::vector<double>{0, 0, 0, 2}));
  EXPECT_EQ(values(math::multiply_no_nan(x, y)), (std::vector<double>{0, 0, 0, 18}));
  EXPECT_EQ(values(math::xlogy(tensor(std::vector<double>{0, 2}, Shape{2}), tensor(std::vector<double>{0, kInf}, Shape{2}))),
            (std::vector<double>{0, kInf}));
  // The no-NaN forms keep gradients finite where y is 0.
  GradientTape tape;
  tape.watch(x);
  tape.watch(y);
  std::vector<Tensor> g = tape.gradient(sum(math::divide_no_nan(scalar_like(y, 1.0) + y * 0.0, y)), std::vector<Tensor>{x, y});
  for (double v : values(g[1])) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(cast(math::is_nan(x), DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 1, 0}));
  EXPECT_EQ(cast(math::is_inf(x), DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 0, 0}));
  EXPECT_EQ(cast(math::is_finite(x), DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 0, 0, 1}));
  ef::testing::expect_error([] { math::is_nan(tensor(std::vector<std::int32_t>{1}, Shape{1})); }, {"is_nan", "floating"});
  ef::testing::expect_error([] { math::logical_xor(scalar(1.0f), scalar(0.0f)); }, {"logical_xor", "bool"});
}

TEST(Math, SignHasNoGradientAndKeepsNaN) {
  Tensor x = tensor(std::vector<double>{-2, 0, 3, kNaN}, Shape{4});
  std::vector<double> s = values(math::sign(x));
  EXPECT_EQ(s[0], -1);
  EXPECT_EQ(s[1], 0);
  EXPECT_EQ(s[2], 1);
  EXPECT_TRUE(std::isnan(s[3]));
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(math::sign(x) * 5.0), x);
  for (double v : values(g)) EXPECT_EQ(v, 0.0);
  EXPECT_EQ(math::sign(tensor(std::vector<std::int32_t>{-5, 0, 7}, Shape{3})).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{-1, 0, 1}));
}

TEST(Math, TracedEqualsEager) {
  Tensor x = tensor(std::vector<float>{-3.5f, 0.25f, 1.5f, 7.0f, -0.5f, 2.0f}, Shape{2, 3});
  auto all = [](const Tensor& a) {
    return std::vector<Tensor>{math::log1p(abs(a)), math::softplus(a), math::reduce_prod(a, {1}),
                               math::reduce_logsumexp(a, {0}), math::reduce_std(a), math::sign(a),
                               math::l2_normalize(a, {1}), math::count_nonzero(a)};
  };
  std::vector<Tensor> eager = all(x);
  auto f = function([&](const std::vector<Tensor>& xs) { return all(xs[0]); });
  std::vector<Tensor> traced = f(std::vector<Tensor>{x});
  ASSERT_EQ(traced.size(), eager.size());
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(values(traced[i]), values(eager[i])) << i;
}

TEST(Math, LinspaceEndsExactlyAtStop) {
  Tensor l = math::linspace(scalar(0.1), scalar(0.7), 7);
  std::vector<double> v = values(l);
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(l.dtype(), DType::float64);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(v[static_cast<std::size_t>(i)], 0.1 + i * 0.1, 1e-15) << i;
  EXPECT_EQ(v[0], 0.1);
  EXPECT_EQ(v[6], 0.7);  // stop itself, not 0.1 + 6 * 0.1
  EXPECT_EQ(values(math::linspace(scalar(3.0f), scalar(9.0f), 1)), std::vector<double>{3.0});
  EXPECT_EQ(math::linspace(scalar(3.0f), scalar(9.0f), 0).shape(), (Shape{0}));
  // Integer endpoints give float64, as TF's.
  EXPECT_EQ(math::linspace(scalar(std::int32_t{1}), scalar(std::int32_t{3}), 3).dtype(), DType::float64);
  EXPECT_THROW(math::linspace(scalar(0.0f), scalar(1.0f), -2), Error);
}

TEST(Math, EyeMeshgridShapesAndValues) {
  Tensor e = math::eye(2, 3, DType::int32);
  EXPECT_EQ(e.shape(), (Shape{2, 3}));
  EXPECT_EQ(e.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(math::eye(3).dtype(), DType::float32);
  EXPECT_EQ(values(math::eye(3)), (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
  Tensor x = tensor(std::vector<float>{1, 2, 3}, Shape{3});
  Tensor y = tensor(std::vector<float>{10, 20}, Shape{2});
  std::vector<Tensor> xy = math::meshgrid({x, y});  // Cartesian: [len(y), len(x)]
  ASSERT_EQ(xy.size(), 2u);
  EXPECT_EQ(xy[0].shape(), (Shape{2, 3}));
  EXPECT_EQ(values(xy[0]), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(values(xy[1]), (std::vector<double>{10, 10, 10, 20, 20, 20}));
  std::vector<Tensor> ij = math::meshgrid({x, y}, "ij");  // matrix: [len(x), len(y)]
  EXPECT_EQ(ij[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values(ij[0]), (std::vector<double>{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(values(ij[1]), (std::vector<double>{10, 20, 10, 20, 10, 20}));
  EXPECT_THROW(math::meshgrid({x, y}, "yx"), Error);
}

TEST(Math, VectorAndMatrixNorms) {
  Tensor m = tensor(std::vector<double>{1, -2, 3, -4, 5, -6}, Shape{2, 3});
  EXPECT_NEAR(math::norm(m).item<double>(), std::sqrt(91.0), 1e-12);
  EXPECT_EQ(values(math::norm(m, "1", {1})), (std::vector<double>{6, 15}));
  EXPECT_EQ(values(math::norm(m, "inf", {0})), (std::vector<double>{4, 5, 6}));
  EXPECT_NEAR(math::norm(m, "3", {1}).to_vector<double>()[0], std::cbrt(1 + 8 + 27.0), 1e-12);
  // Matrix norms over two axes: 1 is the largest column sum, inf the largest row sum.
  EXPECT_EQ(math::norm(m, "1", {0, 1}).item<double>(), 9.0);
  EXPECT_EQ(math::norm(m, "inf", {0, 1}).item<double>(), 15.0);
  EXPECT_EQ(math::norm(m, "inf", {0, 1}, /*keepdims=*/true).shape(), (Shape{1, 1}));
  EXPECT_THROW(math::norm(m, "-1", {1}), Error);
  EXPECT_THROW(math::norm(m, "nuclear", {0, 1}), Error);
  // d||x||/dx = x / ||x||.
  Tensor v = tensor(std::vector<double>{3, 4}, Shape{2});
  GradientTape tape;
  tape.watch(v);
  Tensor g = tape.gradient(math::norm(v), v);
  EXPECT_NEAR(values(g)[0], 0.6, 1e-15);
  EXPECT_NEAR(values(g)[1], 0.8, 1e-15);
}

TEST(Math, ClipByNormAndGlobalNorm) {
  Tensor x = tensor(std::vector<double>{3, 4}, Shape{2});
  EXPECT_EQ(values(math::clip_by_norm(x, 1.0)), (std::vector<double>{0.6, 0.8}));
  EXPECT_EQ(values(math::clip_by_norm(x, 10.0)), (std::vector<double>{3, 4}));
  // A zero tensor stays zero with a zero (not NaN) gradient.
  Tensor z = tensor(std::vector<double>{0, 0}, Shape{2});
  GradientTape tape;
  tape.watch(z);
  Tensor g = tape.gradient(sum(math::clip_by_norm(z, 1.0)), z);
  for (double v : values(g)) EXPECT_FALSE(std::isnan(v));
  Tensor a = tensor(std::vector<float>{3, 0}, Shape{2});
  Tensor b = tensor(std::vector<float>{4}, Shape{1});
  auto [clipped, global] = math::clip_by_global_norm({a, Tensor(), b}, 2.5);
  EXPECT_NEAR(global.item<float>(), 5.0f, 1e-6f);
  ASSERT_EQ(clipped.size(), 3u);
  EXPECT_FALSE(clipped[1].defined());
  EXPECT_NEAR(values(clipped[0])[0], 1.5, 1e-6);
  EXPECT_NEAR(values(clipped[2])[0], 2.0, 1e-6);
  auto [nan_clipped, inf_norm] = math::clip_by_global_norm({tensor(std::vector<float>{std::numeric_limits<float>::infinity(), 1.0f}, Shape{2})}, 1.0);
  EXPECT_TRUE(std::isinf(inf_norm.item<float>()));
  for (double v : values(nan_clipped[0])) EXPECT_TRUE(std::isnan(v));
}

}  // namespace
