// Keras' mixed_bfloat16 policy: variables float32, computation bfloat16, losses float32,
// gradients float32 at the variables, per-layer float32 overrides, saving, MNIST accuracy.
#include "test_util.h"

using namespace ef;
using ef::testing::CaptureStdout;
using ef::testing::expect_error;

namespace {

// Sets the global policy for a scope (and restores float32 after it, also on failure).
class PolicyScope {
 public:
  explicit PolicyScope(const std::string& name) { nn::set_global_policy(nn::DTypePolicy(name)); }
  ~PolicyScope() { nn::set_global_policy(nn::DTypePolicy("float32")); }
};

std::string mnist_dir() {
  auto dir = data::find_mnist(EF_SHARED_DATA_DIR "/mnist");
  if (!dir) ADD_FAILURE() << "MNIST not found in " EF_SHARED_DATA_DIR "/mnist";
  return dir.value_or("");
}

std::shared_ptr<train::Sequential> mlp(std::int64_t hidden) {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Flatten>();
  model->add<nn::Dense>(hidden, "relu");
  model->add<nn::Dense>(10);
  return model;
}

}  // namespace

TEST(DTypePolicy, NamesAndDtypes) {
  nn::DTypePolicy mixed("mixed_bfloat16");
  EXPECT_EQ(mixed.name(), "mixed_bfloat16");
  EXPECT_EQ(mixed.compute_dtype(), DType::bfloat16);
  EXPECT_EQ(mixed.variable_dtype(), DType::float32);
  EXPECT_TRUE(mixed.is_mixed());
  nn::DTypePolicy f32;
  EXPECT_EQ(f32.name(), "float32");
  EXPECT_FALSE(f32.is_mixed());
  EXPECT_EQ(nn::DTypePolicy("bfloat16").variable_dtype(), DType::bfloat16);
  EXPECT_EQ(nn::DTypePolicy("float64").compute_dtype(), DType::float64);
  expect_error([] { nn::DTypePolicy("mixed_float16"); }, {"[dtype_policy]", "float16", "mixed_bfloat16"});
  expect_error([] { nn::DTypePolicy("int32"); }, {"[dtype_policy]", "unknown policy 'int32'"});
  expect_error([] { nn::DTypePolicy("bf16"); }, {"unknown policy 'bf16'"});
  EXPECT_EQ(nn::global_policy().name(), "float32");
}

TEST(MixedPrecision, LayersComputeInBf16WithFloat32Variables) {
  PolicyScope policy("mixed_bfloat16");
  EXPECT_EQ(nn::global_policy().name(), "mixed_bfloat16");
  nn::Dense dense(4, "relu");
  EXPECT_EQ(dense.dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(dense.compute_dtype(), DType::bfloat16);
  Tensor x = ones({2, 3});
  Tensor y = dense(x);
  EXPECT_EQ(y.dtype(), DType::bfloat16);
  for (const auto& w : dense.weights()) EXPECT_EQ(w.dtype(), DType::float32) << w.name();
  // The same numbers as float32 on bfloat16-rounded weights, within bfloat16's rounding.
  Tensor k = cast(cast(Tensor(dense.weights()[0]), DType::bfloat16), DType::float32);
  auto want = relu(matmul(x, k)).to_vector<float>();
  auto got = cast(y, DType::float32).to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-2 * (1 + std::fabs(want[i])));
  // Outside a layer call the variables read as float32.
  EXPECT_EQ(Tensor(dense.weights()[0]).dtype(), DType::float32);
  // A float32 layer (Keras' dtype='float32' on the last softmax) casts bfloat16 inputs back.
  nn::Activation softmax("softmax");
  softmax.set_dtype_policy("float32");
  EXPECT_EQ(softmax(y).dtype(), DType::float32);
}

TEST(MixedPrecision, GradientsArriveFloat32AndTheOptimizerKeepsFloat32) {
  PolicyScope policy("mixed_bfloat16");
  random::set_seed(3);
  auto model = mlp(16);
  Tensor x = random::uniform({8, 4, 4}), y = tensor<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7});
  model->compile(std::make_shared<optim::Adam>(1e-2), train::SparseCategoricalCrossentropy(true), {"accuracy"});
  GradientTape tape;
  Tensor logits = (*model)(x);
  EXPECT_EQ(logits.dtype(), DType::bfloat16);
  Tensor loss = train::SparseCategoricalCrossentropy(true)(y, logits);
  EXPECT_EQ(loss.dtype(), DType::float32);  // losses compute in float32
  auto grads = tape.gradient(loss, model->trainable_weights());
  ASSERT_EQ(grads.size(), 4u);
  for (const auto& g : grads) {
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(g.dtype(), DType::float32);
  }
  CaptureStdout quiet;
  auto h = model->fit(x, y, {.batch_size = 8, .epochs = 5, .verbose = 0});
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
  for (const auto& w : model->weights()) EXPECT_EQ(w.dtype(), DType::float32) << w.name();
  EXPECT_EQ(model->tracing_count(), 1);
}

TEST(MixedPrecision, TracedEqualsEager) {
  PolicyScope policy("mixed_bfloat16");
  random::set_seed(4);
  nn::Dense dense(5, "tanh");
  Tensor x = random::uniform({3, 7});
  Tensor eager = dense(x);
  auto f = function([&](const Tensor& v) { return dense(v); });
  Tensor traced = f(x);
  ASSERT_EQ(traced.dtype(), DType::bfloat16);
  EXPECT_EQ(cast(traced, DType::float32).to_vector<float>(), cast(eager, DType::float32).to_vector<float>());
  f(x);
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(MixedPrecision, ConvBatchNormAndPoolingRunUnderTheMixedPolicy) {
  PolicyScope policy("mixed_bfloat16");
  random::set_seed(5);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Reshape>(Shape{8, 8, 1});
  model->add<nn::Conv2D>(4, Stride2{3, 3}, nn::Conv2DOptions{.padding = "same", .activation = "relu"});
  model->add<nn::BatchNormalization>();
  model->add<nn::MaxPool2D>();
  model->add<nn::Flatten>();
  model->add<nn::Dropout>(0.25);
  model->add<nn::Dense>(3);
  Tensor x = random::uniform({6, 8, 8}), y = tensor<std::int64_t>({0, 1, 2, 0, 1, 2});
  EXPECT_EQ((*model)(x).dtype(), DType::bfloat16);
  model->compile(std::make_shared<optim::SGD>(0.05), train::SparseCategoricalCrossentropy(true));
  CaptureStdout quiet;
  auto h = model->fit(x, y, {.batch_size = 6, .epochs = 4, .verbose = 0});
  EXPECT_TRUE(std::isfinite(h.history["loss"].back()));
  for (const auto& w : model->weights()) EXPECT_EQ(w.dtype(), DType::float32) << w.name();
}

TEST(MixedPrecision, SavedWeightsAreFloat32AndLoadUnderEitherPolicy) {
  auto dir = ef::testing::fresh_temp_dir("mixed_save");
  std::string path = (dir / "w.safetensors").string();
  Tensor x = random::uniform({4, 3, 3}, 0.0, 1.0, DType::float32, 7);
  Tensor mixed_out;
  {
    PolicyScope policy("mixed_bfloat16");
    auto model = mlp(8);
    mixed_out = (*model)(x);
    model->save_weights(path);
  }
  io::TensorFile file = io::load_safetensors(path);
  ASSERT_FALSE(file.tensors.empty());
  for (const auto& t : file.tensors) EXPECT_EQ(t.value.dtype(), DType::float32) << t.name;
  auto f32_model = mlp(8);
  f32_model->build(Shape{kDynamic, 3, 3});
  f32_model->load_weights(path);
  auto a = cast(mixed_out, DType::float32).to_vector<float>(), b = (*f32_model)(x).to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.03 * (1 + std::fabs(b[i])));
  PolicyScope policy("mixed_bfloat16");
  auto mixed_model = mlp(8);
  mixed_model->build(Shape{kDynamic, 3, 3});
  mixed_model->load_weights(path);
  EXPECT_EQ(cast((*mixed_model)(x), DType::float32).to_vector<float>(), a);
}

TEST(MixedPrecision, MnistMlpReachesFloat32AccuracyWithinHalfAPoint) {
  data::Digits d = data::load_mnist_test(mnist_dir());
  Tensor x = slice(d.images, {0}, {8000}), y = slice(d.labels, {0}, {8000});
  Tensor xv = slice(d.images, {8000}, {10000}), yv = slice(d.labels, {8000}, {10000});
  auto run = [&](const std::string& policy_name) {
    PolicyScope policy(policy_name);
    random::set_seed(11);
    auto model = mlp(256);
    model->compile(std::make_shared<optim::Adam>(1e-3), train::SparseCategoricalCrossentropy(true), {"accuracy"});
    CaptureStdout quiet;
    model->fit(x, y, {.batch_size = 128, .epochs = 4, .verbose = 0});
    EXPECT_EQ(model->tracing_count(), 1);
    return model->evaluate(xv, yv, 1000)["accuracy"];
  };
  double f32 = run("float32"), mixed = run("mixed_bfloat16");
  EXPECT_GE(f32, 0.94);
  EXPECT_GE(mixed, f32 - 0.005) << "float32 " << f32 << ", mixed_bfloat16 " << mixed;
}
