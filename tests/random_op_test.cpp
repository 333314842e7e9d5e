// Random draws are ops with state: traced functions draw fresh numbers on every call, and
// ef::random::set_seed makes whole runs repeat.
#include "test_util.h"

using namespace ef;

TEST(RandomOp, TracedDrawsChangeOnEveryCall) {
  random::set_seed(5);
  auto f = function([](const Tensor& x) { return x + random::uniform({4}); });
  Tensor a = f(zeros({4})), b = f(zeros({4}));
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_NE(a.to_vector<float>(), b.to_vector<float>());
  for (float v : a.to_vector<float>()) EXPECT_TRUE(v >= 0.0f && v < 1.0f);
}

TEST(RandomOp, SetSeedRepeatsATracedRun) {
  auto run = [] {
    random::set_seed(42);
    auto f = function([](const Tensor& x) { return x * random::normal({3}); });
    std::vector<float> out;
    for (int i = 0; i < 3; ++i)
      for (float v : f(ones({3})).to_vector<float>()) out.push_back(v);
    return out;
  };
  EXPECT_EQ(run(), run());
}

TEST(RandomOp, SeededOpsDrawOneSequenceEagerlyAndTracedAlike) {
  // Eager calls of a seeded op (a new op each call) draw a fresh set each time...
  random::set_seed(1);
  std::vector<std::vector<float>> eager;
  for (int i = 0; i < 3; ++i) eager.push_back(random::uniform({5}, 0.0, 1.0, DType::float32, 7).to_vector<float>());
  EXPECT_NE(eager[0], eager[1]);
  EXPECT_NE(eager[1], eager[2]);
  // ...and a traced function draws the same sequence, whatever the global seed.
  random::set_seed(2);
  auto f = function([](const Tensor& x) { return x + random::uniform({5}, 0.0, 1.0, DType::float32, 7); });
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f(zeros({5})).to_vector<float>(), eager[static_cast<std::size_t>(i)]) << "call " << i;
  // set_seed restarts the sequence.
  random::set_seed(3);
  EXPECT_EQ(random::uniform({5}, 0.0, 1.0, DType::float32, 7).to_vector<float>(), eager[0]);
}

TEST(RandomOp, StatelessDrawsRepeatForASeed) {
  Tensor a = random::stateless_uniform({6}, 11), b = random::stateless_uniform({6}, 11);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_NE(a.to_vector<float>(), random::stateless_uniform({6}, 12).to_vector<float>());
  auto f = function([](const Tensor& x) { return x + random::stateless_normal({6}, 4); });
  EXPECT_EQ(f(zeros({6})).to_vector<float>(), f(zeros({6})).to_vector<float>());
  EXPECT_EQ(f(zeros({6})).to_vector<float>(), random::stateless_normal({6}, 4).to_vector<float>());
}

TEST(RandomOp, SeededDropoutMasksDifferPerStepAndEagerMatchesTraced) {
  auto masks = [](bool traced) {
    random::set_seed(9);
    nn::Dropout drop(0.5, 123);
    std::function<Tensor(const Tensor&)> step = [&](const Tensor& x) { return drop(x, true); };
    auto f = function(step);
    std::vector<std::vector<float>> out;
    for (int i = 0; i < 3; ++i) out.push_back((traced ? f(ones({16})) : step(ones({16}))).to_vector<float>());
    return out;
  };
  auto eager = masks(false), traced = masks(true);
  EXPECT_NE(eager[0], eager[1]);
  EXPECT_EQ(eager, traced);
}

TEST(RandomOp, DropoutMaskWithADynamicBatch) {
  // uniform_like takes its shape at run time: a dropout mask for any batch size.
  auto dropout = function(
      [](const Tensor& x) { return where(random::uniform_like(x) < 0.5f, x * 2.0f, zeros_like(x)); },
      FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 8}}}});
  Tensor a = dropout(ones({3, 8})), b = dropout(ones({5, 8}));
  EXPECT_EQ(a.shape(), (Shape{3, 8}));
  EXPECT_EQ(b.shape(), (Shape{5, 8}));
  EXPECT_EQ(dropout.tracing_count(), 1);
  int kept = 0;
  for (float v : b.to_vector<float>()) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f);
    kept += v == 2.0f;
  }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 40);
}

TEST(RandomOp, TwoDrawsInOneGraphAreNotMerged) {
  auto f = function([](const Tensor& x) { return random::uniform({64}) - random::uniform({64}) + x; });
  Tensor d = f(zeros({64}));
  EXPECT_GT(max(abs(d)).item<float>(), 0.0f);
}

TEST(RandomOp, BadArgumentsAreErrors) {
  ef::testing::expect_error([] { random::uniform({2}, 1.0, 1.0); }, {"random.uniform", "minval < maxval"});
  ef::testing::expect_error([] { random::normal({2}, 0.0, -1.0); }, {"random.normal", "stddev"});
  ef::testing::expect_error([] { random::uniform({2}, 0.0, 1.0, DType::int32); }, {"random.uniform", "floating"});
  ef::testing::expect_error([] { random::uniform({-1, 2}); }, {"random_uniform", "static shape"});
}

TEST(RandomOp, GeneratorStateCarriesTheSeededSequences) {
  random::set_seed(4);
  random::uniform({3}, 0.0, 1.0, DType::float32, 77);
  random::GeneratorState saved = random::get_global_state();
  ASSERT_EQ(saved.seeded.size(), 1u);
  EXPECT_EQ(saved.seeded[0], (std::pair<std::uint64_t, std::uint64_t>{77, 1}));
  auto next = random::uniform({3}, 0.0, 1.0, DType::float32, 77).to_vector<float>();
  auto unseeded = random::uniform({3}).to_vector<float>();
  random::set_seed(99);  // another run in between
  random::uniform({3}, 0.0, 1.0, DType::float32, 77);
  random::set_global_state(saved);
  EXPECT_EQ(random::uniform({3}, 0.0, 1.0, DType::float32, 77).to_vector<float>(), next);
  EXPECT_EQ(random::uniform({3}).to_vector<float>(), unseeded);
}

TEST(RandomOp, TruncatedNormalStaysWithinTwoDeviationsWithNormalMoments) {
  random::set_seed(3);
  Tensor z = random::truncated_normal({200000}, 1.0, 0.5, DType::float64);
  std::vector<double> v = z.to_vector<double>();
  double mean = 0, sq = 0;
  for (double x : v) {
    EXPECT_TRUE(x >= 0.0 && x <= 2.0) << x;  // mean +- 2 stddev
    mean += x;
  }
  mean /= static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  double sd = std::sqrt(sq / static_cast<double>(v.size()));
  // A standard normal cut at +-2 has standard deviation 0.87962566.
  EXPECT_NEAR(mean, 1.0, 0.005);
  EXPECT_NEAR(sd, 0.5 * 0.87962566, 0.005);
  // Draws beyond 2 deviations are redrawn, not clipped: no mass piles up at the bounds.
  std::size_t at_bound = 0;
  for (double x : v) at_bound += (x == 0.0 || x == 2.0);
  EXPECT_EQ(at_bound, 0u);
}

TEST(RandomOp, TruncatedNormalIsStatelessOrSeededAndTraces) {
  EXPECT_EQ(random::stateless_truncated_normal({64}, 9).to_vector<float>(), random::stateless_truncated_normal({64}, 9).to_vector<float>());
  EXPECT_NE(random::stateless_truncated_normal({64}, 9).to_vector<float>(), random::stateless_truncated_normal({64}, 10).to_vector<float>());
  auto f = function([](const Tensor& x) { return x + random::truncated_normal({8}); });
  random::set_seed(1);
  Tensor a = f(zeros({8})), b = f(zeros({8}));
  EXPECT_EQ(f.tracing_count(), 1);
  EXPECT_NE(a.to_vector<float>(), b.to_vector<float>());
  for (float x : a.to_vector<float>()) EXPECT_LE(std::abs(x), 2.0f);
  EXPECT_THROW(random::truncated_normal({2}, 0.0, -1.0), Error);
  EXPECT_THROW(random::truncated_normal({2}, 0.0, 1.0, DType::int32), Error);
}
