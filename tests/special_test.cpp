// Special functions (eagerflow/ops/special.h) against <cmath> and defining identities.
#include <eagerflow/ops/special.h>

#include <cmath>

#include "test_util.h"

namespace {

using namespace ef;

std::vector<double> v(const Tensor& t) { return t.to_vector<double>(); }

TEST(Special, LgammaMatchesCmathIncludingReflectionAndPoles) {
  std::vector<double> xs{1e-3, 0.1, 0.5, 1.0, 2.5, 7.3, 30.0, 170.5, -0.5, -2.7, -10.3};
  std::vector<double> got = v(math::lgamma(tensor(xs, Shape{static_cast<std::int64_t>(xs.size())})));
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(got[i], std::lgamma(xs[i]), 2e-14 * std::max(1.0, std::abs(std::lgamma(xs[i])))) << xs[i];
  for (double pole : v(math::lgamma(tensor(std::vector<double>{0, -1, -2}, Shape{3})))) EXPECT_EQ(pole, INFINITY);
}

TEST(Special, DigammaIsTheDerivativeOfLgamma) {
  std::vector<double> xs{0.3, 1.0, 4.2, 25.0, -0.5, -3.3};
  Tensor x = tensor(xs, Shape{6});
  std::vector<double> d = v(math::digamma(x));
  for (std::size_t i = 0; i < xs.size(); ++i) {
    double h = 1e-5, numeric = (std::lgamma(xs[i] + h) - std::lgamma(xs[i] - h)) / (2 * h);
    EXPECT_NEAR(d[i], numeric, 1e-8 * std::max(1.0, std::abs(numeric))) << xs[i];
  }
  EXPECT_NEAR(v(math::digamma(scalar(1.0)))[0], -0.57721566490153286, 2e-14);  // -Euler's gamma
  EXPECT_TRUE(std::isnan(v(math::digamma(scalar(-2.0)))[0]));
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(math::lgamma(x)), x);
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(v(g)[i], d[i], 1e-10 * std::max(1.0, std::abs(d[i])));
  EXPECT_NEAR(v(math::lbeta(tensor(std::vector<double>{1, 2}, Shape{2})))[0], std::log(0.5), 2e-14);
}

TEST(Special, ErfinvInvertsErf) {
  std::vector<double> ys{-0.999999, -0.9, -0.3, 0.0, 1e-8, 0.5, 0.99, 0.9999999999};
  std::vector<double> xs = v(math::erfinv(tensor(ys, Shape{8})));
  for (std::size_t i = 0; i < ys.size(); ++i) EXPECT_NEAR(std::erf(xs[i]), ys[i], 2e-16) << ys[i];
  std::vector<double> edges = v(math::erfinv(tensor(std::vector<double>{1, -1, 1.5}, Shape{3})));
  EXPECT_EQ(edges[0], INFINITY);
  EXPECT_EQ(edges[1], -INFINITY);
  EXPECT_TRUE(std::isnan(edges[2]));
  EXPECT_NEAR(v(math::ndtri(scalar(0.975)))[0], 1.959963984540054, 1e-14);
  EXPECT_NEAR(v(math::erfcinv(scalar(0.5)))[0], 0.4769362762044699, 1e-15);
  EXPECT_NEAR(math::erfinv(scalar(0.5f)).item<float>(), 0.4769362762f, 1e-6f);
  EXPECT_THROW(math::lgamma(scalar(std::int32_t{3})), Error);
}

}  // namespace
