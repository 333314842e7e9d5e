// Variables and layers: capture by reference, ordered assignments, creation rules, naming.
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

TEST(Variable, EagerAssignKeepsEarlierReads) {
  Variable v(tensor({1.f, 2.f}), "v");
  Tensor before = v.value();
  v.assign(tensor({5.f, 6.f}));
  v.assign_add(tensor({1.f, 1.f}));
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{6, 7}));
  EXPECT_EQ(before.to_vector<float>(), (std::vector<float>{1, 2}));
  v.assign_sub(tensor({6.f, 7.f}));
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{0, 0}));
  expect_error([&] { v.assign(ones({3})); }, {"[assign]", "float32[3]", "'v' float32[2]"});
  expect_error([&] { v.assign(ones({2}, DType::int32)); }, {"[assign]", "int32[2]"});
  expect_error([] { Variable u; u.value(); }, {"undefined"});
}

TEST(Variable, GraphsReadTheCurrentValue) {
  Variable w(tensor({2.f}), "w");
  auto f = function([&](const Tensor& x) { return x * w; });
  EXPECT_EQ(f(tensor({3.f})).item<float>(), 6.f);
  w.assign(tensor({10.f}));
  EXPECT_EQ(f(tensor({3.f})).item<float>(), 30.f) << "variables are captured by reference, not as constants";
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(Variable, AssignmentsInGraphsAreOrderedEffects) {
  Variable counter(scalar(0.f), "counter");
  auto step = function([&](const Tensor& x) {
    Tensor before = counter.value();
    counter.assign_add(x);
    Tensor after = counter.value();  // reads after the assignment see it
    return std::make_pair(before, after);
  });
  for (int i = 0; i < 3; ++i) {
    auto [b, a] = step(scalar(1.f));
    EXPECT_EQ(b.item<float>(), static_cast<float>(i));
    EXPECT_EQ(a.item<float>(), static_cast<float>(i + 1));
  }
  EXPECT_EQ(counter.value().item<float>(), 3.f);
  auto train = function([&](const Tensor& x) { counter.assign(x); });  // no outputs: kept for its effect
  train(scalar(42.f));
  EXPECT_EQ(counter.value().item<float>(), 42.f);
}

TEST(Variable, CreationRulesInsideFunctions) {
  std::vector<Variable> made;
  auto f = function(
      [&](const Tensor& x) {
        made.emplace_back(zeros({1}), "late_" + std::to_string(x.dim(0)));
        return x;
      },
      {.name = "maker"});
  f(ones({1}));  // first trace: allowed
  EXPECT_EQ(made.size(), 1u);
  expect_error([&] { f(ones({2})); }, {"[function maker]", "variable 'late_2'", "later trace", "first trace"});
  EXPECT_EQ(f.tracing_count(), 1) << "the failed trace left no cache entry";

  auto g = function([&](const Tensor& x) {
    Variable bad(x * 2.0f, "from_input");
    return x;
  }, {.name = "symbolic_init"});
  expect_error([&] { g(ones({2})); }, {"[function symbolic_init]", "'from_input'", "symbolic input", "shape or an eager value"});
}

namespace {
class Block : public nn::Layer {
 public:
  Tensor call(const Tensor& x) override { return second_(first_(x)); }
  nn::Dense first_{8, "relu"};
  nn::Dense second_{4};
};
class Outer : public nn::Layer {
 public:
  Tensor call(const Tensor& x) override { return block_(x); }
  Block block_;
};
}  // namespace

TEST(Layer, NamesPathsAndWeights) {
  Outer outer;
  EXPECT_EQ(outer.weights().size(), 0u);
  Tensor y = outer(ones({3, 5}));
  EXPECT_EQ(y.shape(), Shape({3, 4}));
  ASSERT_EQ(outer.weights().size(), 4u);
  std::string prefix = outer.name() + "/" + outer.block_.name() + "/";
  EXPECT_EQ(outer.name().rfind("outer", 0), 0u);
  EXPECT_EQ(outer.block_.name().rfind("block", 0), 0u);
  EXPECT_EQ(outer.weights()[0].name(), prefix + outer.block_.first_.name() + "/kernel");
  EXPECT_EQ(outer.weights()[3].name(), prefix + outer.block_.second_.name() + "/bias");
  EXPECT_EQ(outer.trainable_weights().size(), 4u);
  EXPECT_NE(outer.block_.first_.name(), outer.block_.second_.name()) << "dense, dense_1: unique names";
  EXPECT_EQ(outer.layers().size(), 1u);
  EXPECT_EQ(outer.block_.layers().size(), 2u);
}

TEST(Layer, DenseMatchesKerasDefaults) {
  random::set_seed(3);
  nn::Dense d(64);
  d(ones({2, 100}));
  EXPECT_EQ(d.bias().value().to_vector<float>(), std::vector<float>(64, 0.f));
  float limit = std::sqrt(6.f / (100 + 64));
  auto k = d.kernel().value().to_vector<float>();
  float lo = *std::min_element(k.begin(), k.end()), hi = *std::max_element(k.begin(), k.end());
  EXPECT_GE(lo, -limit);
  EXPECT_LE(hi, limit);
  EXPECT_LT(lo, -0.9f * limit);
  EXPECT_GT(hi, 0.9f * limit);
  nn::Dense no_bias(3, "sigmoid", false);
  Tensor y = no_bias(ones({2, 4}));
  EXPECT_EQ(no_bias.weights().size(), 1u);
  for (float v : y.to_vector<float>()) { EXPECT_GT(v, 0.f); EXPECT_LT(v, 1.f); }
}

TEST(Layer, ErrorsNameTheLayerPath) {
  Outer outer;
  outer(ones({3, 5}));
  try {
    outer(ones({3, 6}));
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("float32[3,6]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(in layer " + outer.name() + "/" + outer.block_.name() + "/" + outer.block_.first_.name() + ")"),
              std::string::npos) << msg;
  }
  nn::Dense d(2);
  expect_error([&] { d(ones({3})); }, {"rank >= 2", "[3]"});
  expect_error([] { nn::Dense(0); }, {"[dense]", "units"});
  expect_error([] { nn::Dense(2, "swish_typo"); }, {"unknown activation", "swish_typo"});
}

TEST(Layer, BuildsFromSymbolicShapeInsideTrace) {
  nn::Dense d(3);
  auto f = function(d);
  f(ones({2, 4}));
  EXPECT_TRUE(d.built());
  EXPECT_EQ(d.kernel().shape(), Shape({4, 3}));
  // A dynamic feature dim cannot size the kernel.
  nn::Dense e(3);
  auto g = function(e, {.input_signature = std::vector<TensorSpec>{{DType::float32, {2, kDynamic}}}});
  expect_error([&] { g(ones({2, 4})); }, {"last dim of the input must be known", "[2,?]"});
}

namespace {
class MakesTemporaries : public nn::Layer {
 public:
  Tensor call(const Tensor& x) override {
    nn::Dense temporary(2);  // a bad habit (new weights every call), but it must not crash
    return temporary(x);
  }
};
}  // namespace

TEST(Layer, SubLayersDestroyedFirstUnlinkThemselves) {
  MakesTemporaries layer;
  layer(ones({1, 3}));
  layer(ones({1, 3}));
  EXPECT_TRUE(layer.layers().empty());
  EXPECT_TRUE(layer.weights().empty());
  auto parent = std::make_unique<Outer>();
  (*parent)(ones({2, 5}));
  Block& child = parent->block_;
  EXPECT_EQ(child.layers().size(), 2u);
  parent.reset();  // children die with their parent; nothing dangles
}
