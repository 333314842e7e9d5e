// tf.random's parameterized draws and candidate samplers (eagerflow/ops/random_dists.h): the
// distributions' moments within tolerances from the sample size, supports, shapes, seeds, the
// gamma draw's implicit gradient, and TF's expected-count formulas.
#include <cmath>
#include <set>

#include "eagerflow/ops/random_dists.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

struct Moments {
  double mean = 0, var = 0;
};

// Mean and variance of column j of a [n, k] tensor.
Moments moments(const Tensor& t, std::int64_t j = 0) {
  Tensor d = cast(t, DType::float64);
  std::int64_t k = t.rank() == 1 ? 1 : t.shape()[1], n = t.shape()[0];
  auto v = d.to_vector<double>();
  Moments m;
  for (std::int64_t i = 0; i < n; ++i) m.mean += v[static_cast<std::size_t>(i * k + j)];
  m.mean /= static_cast<double>(n);
  for (std::int64_t i = 0; i < n; ++i) m.var += std::pow(v[static_cast<std::size_t>(i * k + j)] - m.mean, 2);
  m.var /= static_cast<double>(n - 1);
  return m;
}

// The mean within 5 standard errors, the variance within 5 of its standard errors (using the
// distribution's fourth central moment mu4).
void expect_moments(const Moments& m, double mean, double var, double mu4, std::int64_t n, const std::string& what) {
  double se_mean = std::sqrt(var / static_cast<double>(n)),
         se_var = std::sqrt((mu4 - var * var) / static_cast<double>(n));
  EXPECT_NEAR(m.mean, mean, 5 * se_mean) << what;
  EXPECT_NEAR(m.var, var, 5 * se_var) << what;
}

constexpr std::int64_t kN = 40000;

}  // namespace

TEST(RandomExtra, GammaShapeMomentsAndRate) {
  // shape + broadcast(alpha, beta).shape; Gamma(a, rate b): mean a/b, variance a/b^2, mu4 3a(a+2)/b^4.
  Tensor alpha = tensor(std::vector<float>{0.3f, 4.0f}), beta = tensor(std::vector<float>{2.0f, 0.5f});
  Tensor x = random::gamma({kN}, alpha, beta, 3);
  ASSERT_EQ(x.shape(), (Shape{kN, 2}));
  EXPECT_EQ(x.dtype(), DType::float32);
  double a[] = {0.3, 4.0}, b[] = {2.0, 0.5};
  for (int j = 0; j < 2; ++j)
    expect_moments(moments(x, j), a[j] / b[j], a[j] / (b[j] * b[j]), 3 * a[j] * (a[j] + 2) / std::pow(b[j], 4), kN,
                   "alpha " + std::to_string(a[j]));
  EXPECT_EQ(
      random::gamma({2, 3}, tensor(std::vector<float>{1, 2}), reshape(tensor(std::vector<float>{1, 2, 3}), Shape{3, 1}))
          .shape(),
      (Shape{2, 3, 3, 2}));
}

TEST(RandomExtra, GammaDrawsStayPositiveAndBadAlphaIsNaN) {
  Tensor tiny = random::gamma({1000}, scalar<float>(1e-3f), Tensor(), 5);
  for (float v : tiny.to_vector<float>()) EXPECT_GE(v, std::numeric_limits<float>::min());
  for (float v : random::gamma({3}, scalar<float>(-1.0f)).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(random::gamma({2}, scalar<float>(0.0f)).to_vector<float>()[0], std::numeric_limits<float>::min());
}

TEST(RandomExtra, GammaGradMatchesTFsValues) {
  // TF 2.21's random_gamma_grad(alpha, sample): float64, the last two float32 (so less exact).
  Tensor a = tensor(std::vector<double>{0.5, 1.0, 2.0, 100.0, 1e-3, 1000.0, 2.0});
  Tensor x = tensor(std::vector<double>{0.3, 1.0, 2.5, 90.0, 1e-200, 1100.0, 30.0});
  std::vector<double> want = {1.00980195, 1.17356303, 1.21231929, 0.949825950, 4.59941447e-195, 1.0486008, 3.1121032};
  auto got = random::random_gamma_grad(a, x).to_vector<double>();
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], (i < 5 ? 1e-6 : 3e-5) * std::abs(want[i])) << i;
}

TEST(RandomExtra, GammaGradientInAlphaAndBetaIsTheMeansDerivative) {
  // E[x] = alpha / beta, so d mean(x)/d alpha = 1/beta and d mean(x)/d beta = -alpha/beta^2;
  // d mean(x^2)/d alpha = (2 alpha + 1)/beta^2.
  for (double alpha : {0.4, 3.0}) {
    Tensor a = scalar<double>(alpha), b = scalar<double>(2.0);
    GradientTape tape;
    tape.watch(a);
    tape.watch(b);
    Tensor x = random::gamma({kN}, a, b, 17);
    Tensor m = mean(x), m2 = mean(x * x);
    auto g = tape.gradient(m, std::vector<Tensor>{a, b});
    EXPECT_NEAR(g[0].item<double>(), 0.5, 0.03) << alpha;
    EXPECT_NEAR(g[1].item<double>(), -alpha / 4, 0.03 * alpha) << alpha;
    GradientTape tape2;
    tape2.watch(a);
    Tensor y = random::stateless_gamma({kN}, 9, a);
    EXPECT_NEAR(tape2.gradient(mean(y * y), a).item<double>(), 2 * alpha + 1, 0.05 * (2 * alpha + 1)) << alpha;
  }
}

TEST(RandomExtra, PoissonMomentsSupportAndDtypes) {
  Tensor lam = tensor(std::vector<float>{0.7f, 4.0f, 35.0f, 900.0f});
  Tensor x = random::poisson({kN}, lam, DType::int64, 2);
  ASSERT_EQ(x.shape(), (Shape{kN, 4}));
  EXPECT_EQ(x.dtype(), DType::int64);
  for (auto v : x.to_vector<std::int64_t>()) EXPECT_GE(v, 0);
  double l[] = {0.7, 4.0, 35.0, 900.0};
  for (int j = 0; j < 4; ++j)
    expect_moments(moments(x, j), l[j], l[j], l[j] * (1 + 3 * l[j]), kN, "lam " + std::to_string(l[j]));
  Tensor f = random::stateless_poisson({5}, 3, scalar<float>(3.0f), DType::float32);
  for (float v : f.to_vector<float>()) EXPECT_EQ(v, std::floor(v));
  for (auto v : random::poisson({4}, scalar<float>(-1.0f), DType::int32).to_vector<std::int32_t>()) EXPECT_EQ(v, 0);
  expect_error([] { random::poisson({2}, scalar<float>(1.0f), DType::bool_); }, {"random_poisson", "bool"});
}

TEST(RandomExtra, BinomialMomentsAndSupport) {
  Tensor counts = tensor(std::vector<double>{20, 20, 5000, 7}),
         probs = tensor(std::vector<double>{0.1, 0.85, 0.4, 1.5});
  Tensor x = random::stateless_binomial({kN, 4}, 4, counts, probs, DType::int32);
  ASSERT_EQ(x.shape(), (Shape{kN, 4}));
  double n[] = {20, 20, 5000}, p[] = {0.1, 0.85, 0.4};
  for (int j = 0; j < 3; ++j) {
    double v = n[j] * p[j] * (1 - p[j]);
    expect_moments(moments(x, j), n[j] * p[j], v, v * (1 + 3 * (n[j] - 2) * p[j] * (1 - p[j])), kN, std::to_string(j));
  }
  auto xs = x.to_vector<std::int32_t>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_GE(xs[i], 0);
    EXPECT_LE(xs[i], i % 4 == 2 ? 5000 : 20);
    if (i % 4 == 3) {
      EXPECT_EQ(xs[i], 7);  // probs clipped to 1
    }
  }
  expect_error([] { random::stateless_binomial({3}, 1, scalar<double>(5), scalar<float>(0.5f)); }, {"one dtype"});
  expect_error(
      [] {
        random::stateless_binomial({3}, 1, tensor(std::vector<float>{1, 2}), scalar<float>(0.5f));
      },
      {"must end with"});
}

TEST(RandomExtra, ParameterizedTruncatedNormalMomentsAndBounds) {
  // [lo, hi] in standard units: around the mode, one-sided, a far tail, a short interval.
  std::vector<double> mu = {0, 1, -2, 3}, sd = {1, 2, 0.5, 1}, lo = {-2, 1, 0, 3.1}, hi = {2, INFINITY, 3, 3.3};
  Tensor x = random::stateless_parameterized_truncated_normal({kN, 4}, 8, tensor(mu), tensor(sd), tensor(lo),
                                                              tensor(hi));
  auto phi = [](double z) { return std::isinf(z) ? 0.0 : std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI); };
  auto Phi = [](double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); };
  auto xs = x.to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    EXPECT_GE(xs[i], lo[i % 4]);
    EXPECT_LE(xs[i], hi[i % 4]);
  }
  for (std::size_t j = 0; j < 4; ++j) {
    double a = (lo[j] - mu[j]) / sd[j], b = (hi[j] - mu[j]) / sd[j], z = Phi(b) - Phi(a);
    double r = (phi(a) - phi(b)) / z;
    double bphi = std::isinf(b) ? 0.0 : b * phi(b);
    double var = sd[j] * sd[j] * (1 + (a * phi(a) - bphi) / z - r * r);
    // mu4 <= 3 var^2 for these (truncation thins the tails): a safe bound for the tolerance.
    expect_moments(moments(x, static_cast<std::int64_t>(j)), mu[j] + sd[j] * r, var, 3 * var * var, kN,
                   std::to_string(j));
  }
  expect_error(
      [] {
        random::stateless_parameterized_truncated_normal({2}, 1, scalar<float>(0), scalar<float>(0), scalar<float>(-1),
                                                         scalar<float>(1));
      },
      {"invalid parameters", "stddev"});
  expect_error(
      [] {
        random::stateless_parameterized_truncated_normal({2}, 1, scalar<float>(0), scalar<float>(1), scalar<float>(1),
                                                         scalar<float>(1));
      },
      {"invalid parameters", "minval"});
}

TEST(RandomExtra, StatelessDrawsArePureFunctionsOfTheSeedEagerAndTraced) {
  Tensor alpha = tensor(std::vector<float>{0.5f, 2.0f, 9.0f});
  auto draw = [](const Tensor& a) {
    return concat(
        {random::stateless_gamma({4, 3}, 21, a), cast(random::stateless_poisson({4, 3}, 21, a), DType::float32),
         cast(random::stateless_binomial({4, 3}, 21, a * 3.0f, a / 10.0f), DType::float32),
         random::stateless_parameterized_truncated_normal({4, 3}, 21, a, a, -a, a * 2.0f)},
        0);
  };
  auto eager = draw(alpha).to_vector<float>();
  EXPECT_EQ(draw(alpha).to_vector<float>(), eager);
  auto f = function(draw);
  EXPECT_EQ(f(alpha).to_vector<float>(), eager);
  EXPECT_EQ(f(alpha).to_vector<float>(), eager);
  EXPECT_NE(random::stateless_gamma({4, 3}, 22, alpha).to_vector<float>(),
            random::stateless_gamma({4, 3}, 21, alpha).to_vector<float>());
}

TEST(RandomExtra, StatefulDrawsChangePerCallAndRepeatAfterSetSeed) {
  auto run = [] {
    random::set_seed(4);
    auto f = function([](const Tensor& lam) { return random::poisson({6}, lam, DType::float32, 5); });
    std::vector<float> out;
    for (int i = 0; i < 2; ++i)
      for (float v : f(scalar<float>(50.0f)).to_vector<float>()) out.push_back(v);
    return out;
  };
  auto a = run();
  EXPECT_EQ(run(), a);
  EXPECT_NE(std::vector<float>(a.begin(), a.begin() + 6), std::vector<float>(a.begin() + 6, a.end()));
}

TEST(RandomExtra, UniqueSamplersDrawDistinctCandidatesWithTFsExpectedCounts) {
  Tensor truth = reshape(tensor(std::vector<std::int64_t>{0, 7, 19, 3}), Shape{2, 2});
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u})
    for (int kind = 0; kind < 3; ++kind) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", sampler " + std::to_string(kind));
      random::CandidateSample s =
          kind == 0   ? random::uniform_candidate_sampler(truth, 2, 12, true, 20, seed)
          : kind == 1 ? random::log_uniform_candidate_sampler(truth, 2, 12, true, 20, seed)
                      : random::fixed_unigram_candidate_sampler(truth, 2, 12, true, 20, std::vector<double>(20, 2.0),
                                                                0.5, 0, 1, 0, seed);
      auto c = s.sampled_candidates.to_vector<std::int64_t>();
      EXPECT_EQ(std::set<std::int64_t>(c.begin(), c.end()).size(), 12u);
      // TF's expected count: p * num_sampled when the first num_sampled draws were distinct,
      // else 1 - (1 - p)^tries. Every candidate's count must give the same number of tries.
      auto p = [&](std::int64_t k) { return kind == 1 ? std::log((k + 2.0) / (k + 1.0)) / std::log(21.0) : 1.0 / 20; };
      auto tf_count = [](double q, std::int64_t tries) { return tries == 12 ? q * 12 : 1 - std::pow(1 - q, tries); };
      auto counts = s.sampled_expected_count.to_vector<float>();
      std::int64_t tries = 12;
      for (std::int64_t t = 12; t < 400; ++t)
        if (std::abs(tf_count(p(c[0]), t) - counts[0]) < std::abs(tf_count(p(c[0]), tries) - counts[0])) tries = t;
      for (std::size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(counts[i], tf_count(p(c[i]), tries), 1e-5) << i;
      auto t = s.true_expected_count.to_vector<float>();
      std::int64_t truth_ids[] = {0, 7, 19, 3};
      for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(t[i], tf_count(p(truth_ids[i]), tries), 1e-5) << i;
    }
  // Draws that are distinct at once take TF's other branch, p * num_sampled (not 1 - (1 - p)^3).
  auto few = random::uniform_candidate_sampler(truth, 2, 3, true, 1000, 1);
  for (float count : few.sampled_expected_count.to_vector<float>()) EXPECT_FLOAT_EQ(count, 3.0f / 1000);
}

TEST(RandomExtra, LogUniformFrequenciesAndCounts) {
  Tensor truth = reshape(tensor(std::vector<std::int64_t>{2}), Shape{1, 1});
  std::vector<double> freq(10, 0);
  const int calls = 400, per = 50;
  for (int i = 0; i < calls; ++i) {
    auto s = random::log_uniform_candidate_sampler(truth, 1, per, false, 10, 33);
    auto c = s.sampled_candidates.to_vector<std::int64_t>();
    auto e = s.sampled_expected_count.to_vector<float>();
    for (std::size_t j = 0; j < c.size(); ++j) {
      freq[static_cast<std::size_t>(c[j])] += 1;
      EXPECT_FLOAT_EQ(e[j], static_cast<float>(std::log((c[j] + 2.0) / (c[j] + 1.0)) / std::log(11.0)) * per);
    }
  }
  for (int k = 0; k < 10; ++k) {
    double p = std::log((k + 2.0) / (k + 1.0)) / std::log(11.0), n = calls * per;
    EXPECT_NEAR(freq[static_cast<std::size_t>(k)] / n, p, 5 * std::sqrt(p * (1 - p) / n)) << k;
  }
}

TEST(RandomExtra, FixedAndLearnedUnigramSamplers) {
  // Shard 0 of 2, 3 reserved ids (0 and 2 in this shard, weight 0); as TF's, the unigrams' ids
  // go on from 2 (this shard's reserved count): ids 2, 4, 6 take 9, 7, 1 -> weights 81, 49, 1.
  Tensor truth = reshape(tensor(std::vector<std::int64_t>{3, 1}), Shape{2, 1});
  auto s = random::fixed_unigram_candidate_sampler(truth, 1, 400, false, 5, {9, 3, 7, 5, 1}, 2.0, 3, 2, 0, 6);
  auto c = s.sampled_candidates.to_vector<std::int64_t>();
  double n2 = 0;
  for (auto v : c) {
    EXPECT_TRUE(v >= 2 && v <= 4) << v;
    n2 += v == 2;
  }
  EXPECT_NEAR(n2 / 400, 81.0 / 131, 5 * std::sqrt(81.0 / 131 * 50 / 131 / 400));
  auto t = s.true_expected_count.to_vector<float>();
  EXPECT_NEAR(t[0], 400 * 49.0 / 131, 1e-3);
  EXPECT_EQ(t[1], 0.0f);
  expect_error([&] { random::fixed_unigram_candidate_sampler(truth, 1, 2, false, 4, {1, 2, 3}); }, {"range_max is 4"});
  // Learned: weights start at 1 and grow by the true classes seen (the first call draws uniformly).
  // Its state lives per (shapes, seed) for the process: a seed of its own on every run of this test.
  static std::uint64_t learned_seed = 991;
  ++learned_seed;
  Tensor seen = reshape(tensor(std::vector<std::int64_t>{1, 3}), Shape{2, 1});
  auto first = random::learned_unigram_candidate_sampler(seen, 1, 3, false, 5, learned_seed);
  EXPECT_NEAR(first.true_expected_count.to_vector<float>()[0], 3 * 0.2, 1e-6);
  auto second = random::learned_unigram_candidate_sampler(seen, 1, 3, false, 5, learned_seed);
  EXPECT_NEAR(second.true_expected_count.to_vector<float>()[0], 3 * 2.0 / 7, 1e-6);
}

TEST(RandomExtra, AllSamplerAndErrors) {
  Tensor truth = reshape(tensor(std::vector<std::int64_t>{1, 3}), Shape{2, 1});
  auto s = random::all_candidate_sampler(truth, 1, 4, true);
  EXPECT_EQ(s.sampled_candidates.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(s.true_expected_count.to_vector<float>(), (std::vector<float>{1, 1}));
  expect_error([&] { random::all_candidate_sampler(truth, 1, 2, true); }, {"out of range"});
  expect_error([&] { random::uniform_candidate_sampler(truth, 1, 6, true, 5); }, {"num_sampled (6) <= range_max (5)"});
  expect_error([&] { random::uniform_candidate_sampler(truth, 2, 3, true, 5); }, {"num_true = 2"});
  expect_error([&] { random::uniform_candidate_sampler(cast(truth, DType::int32), 1, 3, true, 5); }, {"int64"});
  expect_error([&] { random::uniform_candidate_sampler(truth, 1, 0, true, 5); }, {"num_sampled"});
  // A traced sampler draws anew on every call.
  auto f = function(
      [](const Tensor& t) { return random::uniform_candidate_sampler(t, 1, 5, false, 1000).sampled_candidates; });
  EXPECT_NE(f(truth).to_vector<std::int64_t>(), f(truth).to_vector<std::int64_t>());
}

TEST(RandomExtra, PoissonRefusesNarrowIntegerDtypesAsTf) {
  for (ef::DType d : {ef::DType::int8, ef::DType::uint8, ef::DType::int16, ef::DType::uint16})
    EXPECT_THROW(ef::random::stateless_poisson({2}, 7, ef::tensor({1.f}), d), ef::Error) << ef::name_of(d);
  EXPECT_EQ(ef::random::stateless_poisson({2}, 7, ef::tensor({1.f}), ef::DType::int32).dtype(), ef::DType::int32);
}
