// Keras' weight initializers (eagerflow/nn/initializers.h): each one's variance from its fans,
// the truncation at two standard deviations, seeded repeatability, names and errors.
#include <cmath>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

struct Stats {
  double mean, stddev, max_abs;
};

Stats stats_of(const Tensor& t) {
  auto v = cast(t, DType::float64).to_vector<double>();
  double m = 0, s = 0, mx = 0;
  for (double x : v) m += x;
  m /= static_cast<double>(v.size());
  for (double x : v) {
    s += (x - m) * (x - m);
    mx = std::max(mx, std::abs(x));
  }
  return {m, std::sqrt(s / static_cast<double>(v.size())), mx};
}

}  // namespace

TEST(Initializers, VarianceScalingFollowsKerasFans) {
  random::set_seed(7);
  // [3, 3, 64, 128]: receptive field 9, fan_in 576, fan_out 1152 (147k draws: std within ~0.5%).
  Shape conv{3, 3, 64, 128};
  const double fan_in = 576, fan_out = 1152, fan_avg = (fan_in + fan_out) / 2;
  struct Case {
    const char* name;
    nn::Initializer init;
    double stddev, bound;  // bound: the largest |value| allowed
  };
  std::vector<Case> cases = {
      {"he_normal", nn::he_normal_initializer(), std::sqrt(2 / fan_in), 2 * std::sqrt(2 / fan_in) / 0.87962566103423978},
      {"he_uniform", nn::he_uniform_initializer(), std::sqrt(2 / fan_in), std::sqrt(6 / fan_in)},
      {"lecun_normal", nn::lecun_normal_initializer(), std::sqrt(1 / fan_in), 2 * std::sqrt(1 / fan_in) / 0.87962566103423978},
      {"lecun_uniform", nn::lecun_uniform_initializer(), std::sqrt(1 / fan_in), std::sqrt(3 / fan_in)},
      {"glorot_normal", nn::glorot_normal_initializer(), std::sqrt(1 / fan_avg), 2 * std::sqrt(1 / fan_avg) / 0.87962566103423978},
      {"glorot_uniform", nn::glorot_uniform_initializer(), std::sqrt(1 / fan_avg), std::sqrt(3 / fan_avg)},
      {"fan_out normal", nn::variance_scaling_initializer(3.0, "fan_out", "untruncated_normal"), std::sqrt(3 / fan_out), 1e9},
  };
  for (const auto& c : cases) {
    Tensor w = c.init(conv, DType::float32);
    EXPECT_EQ(w.shape(), conv);
    EXPECT_EQ(w.dtype(), DType::float32);
    Stats s = stats_of(w);
    EXPECT_NEAR(s.stddev, c.stddev, 0.01 * c.stddev) << c.name;
    EXPECT_NEAR(s.mean, 0.0, 0.02 * c.stddev) << c.name;
    EXPECT_LE(s.max_abs, c.bound * (1 + 1e-6)) << c.name;
  }
  Stats t = stats_of(nn::truncated_normal_initializer(1.0, 0.5)(Shape{200000}, DType::float64));
  EXPECT_NEAR(t.mean, 1.0, 0.01);
  EXPECT_NEAR(t.stddev, 0.5 * 0.87962566103423978, 0.01);  // a normal cut at 2 stddev is narrower
  EXPECT_LE(t.max_abs, 2.0 + 1e-12);
}

TEST(Initializers, SeededOnesRepeatUnseededOnesDraw) {
  auto seeded = nn::he_normal_initializer(42);
  Tensor a = seeded(Shape{64, 32}, DType::float32), b = seeded(Shape{64, 32}, DType::float32);
  EXPECT_EQ(max(abs(a - b)).item<float>(), 0.0f) << "a seeded initializer gives the same values on every call";
  Tensor c = nn::he_normal_initializer(43)(Shape{64, 32}, DType::float32);
  EXPECT_GT(max(abs(a - c)).item<float>(), 0.0f);
  auto unseeded = nn::he_normal_initializer();
  EXPECT_GT(max(abs(unseeded(Shape{64, 32}, DType::float32) - unseeded(Shape{64, 32}, DType::float32))).item<float>(), 0.0f);
  Tensor id = nn::identity_initializer(2.0)(Shape{2, 3}, DType::float32);
  EXPECT_EQ(id.to_vector<float>(), (std::vector<float>{2, 0, 0, 0, 2, 0}));
}

TEST(Initializers, NamesAndErrors) {
  for (const char* name : {"zeros", "ones", "glorot_uniform", "glorot_normal", "he_normal", "he_uniform", "lecun_normal",
                           "lecun_uniform", "random_uniform", "random_normal", "truncated_normal", "identity"})
    EXPECT_EQ(nn::initializer_by_name(name)(Shape{4, 4}, DType::float32).shape(), (Shape{4, 4})) << name;
  expect_error([] { nn::initializer_by_name("he_nromal"); }, {"unknown initializer 'he_nromal'", "he_normal"});
  expect_error([] { nn::variance_scaling_initializer(1.0, "fan_sideways"); }, {"VarianceScaling", "mode"});
  expect_error([] { nn::variance_scaling_initializer(-1.0); }, {"VarianceScaling", "scale"});
  expect_error([] { nn::variance_scaling_initializer(1.0, "fan_in", "cauchy"); }, {"distribution"});
  expect_error([] { nn::identity_initializer()(Shape{2, 2, 2}, DType::float32); }, {"Identity", "2-D"});
  // A Dense layer takes one.
  nn::Dense d(8);
  d.kernel_initializer = nn::he_uniform_initializer(3);
  d(ones({2, 16}));
  EXPECT_LE(max(abs(Tensor(d.kernel()))).item<float>(), std::sqrt(6.0 / 16) + 1e-6);
}
