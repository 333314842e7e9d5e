// Keras' mixed_bfloat16 policy: variables float32, computation bfloat16, losses float32,
// gradients float32 at the variables, per-layer float32 overrides, saving (weights, and the
// policy in layer configs), every layer kind in fit, MNIST accuracy of an MLP and a CNN.
#include "ef_test_paths.h"
#include <functional>

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
  nn::DTypePolicy half("mixed_float16");  // Keras' float16 policy (compile adds loss scaling)
  EXPECT_EQ(half.compute_dtype(), DType::float16);
  EXPECT_EQ(half.variable_dtype(), DType::float32);
  expect_error([] { nn::DTypePolicy("mixed_int8"); }, {"[dtype_policy]", "unknown policy 'mixed_int8'", "mixed_bfloat16"});
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

// Validation accuracy under float32 and under mixed_bfloat16 (the same seed, data and steps):
// trained on the first `n` MNIST test images, validated on the rest.
namespace {

struct MnistRun {
  std::function<std::shared_ptr<train::Sequential>()> model;
  std::int64_t n, batch_size;
  int epochs;
  double learning_rate;
  std::uint64_t seed;
};

std::pair<double, double> float32_and_mixed_accuracy(const MnistRun& r) {
  data::Digits d = data::load_mnist_test(mnist_dir());
  Tensor x = slice(d.images, {0}, {r.n}), y = slice(d.labels, {0}, {r.n});
  Tensor xv = slice(d.images, {r.n}, {10000}), yv = slice(d.labels, {r.n}, {10000});
  auto run = [&](const std::string& policy_name) {
    PolicyScope policy(policy_name);
    random::set_seed(r.seed);
    auto model = r.model();
    model->compile(std::make_shared<optim::Adam>(r.learning_rate), train::SparseCategoricalCrossentropy(true), {"accuracy"});
    CaptureStdout quiet;
    model->fit(x, y, {.batch_size = r.batch_size, .epochs = r.epochs, .verbose = 0});
    EXPECT_EQ(model->tracing_count(), 1);
    EXPECT_EQ((*model)(slice(xv, {0}, {2})).dtype(), policy_name == "float32" ? DType::float32 : DType::bfloat16);
    return model->evaluate(xv, yv, 1000)["accuracy"];
  };
  return {run("float32"), run("mixed_bfloat16")};
}

}  // namespace

TEST(MixedPrecision, MnistMlpReachesFloat32AccuracyWithinHalfAPoint) {
  auto [f32, mixed] = float32_and_mixed_accuracy({[] { return mlp(256); }, 8000, 128, 4, 1e-3, 11});
  EXPECT_GE(f32, 0.94);
  EXPECT_GE(mixed, f32 - 0.005) << "float32 " << f32 << ", mixed_bfloat16 " << mixed;
}

TEST(MixedPrecision, MnistCnnReachesFloat32AccuracyWithinHalfAPoint) {
  // A small CNN (conv8-pool-conv16-pool-dense10) on 6,000 images, 3 epochs: a few seconds.
  auto cnn = [] {
    auto model = std::make_shared<train::Sequential>();
    model->add<nn::Reshape>(Shape{28, 28, 1});
    model->add<nn::Conv2D>(8, Stride2{3, 3}, nn::Conv2DOptions{.activation = "relu"});
    model->add<nn::MaxPool2D>();
    model->add<nn::Conv2D>(16, Stride2{3, 3}, nn::Conv2DOptions{.activation = "relu"});
    model->add<nn::MaxPool2D>();
    model->add<nn::Flatten>();
    model->add<nn::Dense>(10);
    return model;
  };
  auto [f32, mixed] = float32_and_mixed_accuracy({cnn, 6000, 64, 3, 2e-3, 12});
  EXPECT_GE(f32, 0.95);
  EXPECT_GE(mixed, f32 - 0.005) << "float32 " << f32 << ", mixed_bfloat16 " << mixed;
}

// ---------------------------------------------------------------- every layer kind
// Recurrent (SimpleRNN, LSTM, GRU, Bidirectional), convolutions (Conv1D, Conv2D,
// Conv2DTranspose), normalization, Embedding, Dropout, MultiHeadAttention, pooling, the losses and
// metrics, fit / evaluate / predict, and saving: a model saved under the policy loads mixed under
// float32, per-layer overrides kept.
namespace {

// Self-attention with a residual connection and LayerNormalization (a transformer block's
// first half), as a layer for Sequential.
class AttentionBlock : public nn::Layer {
 public:
  AttentionBlock() : attention_(std::make_shared<nn::MultiHeadAttention>(2, 4)), norm_(std::make_shared<nn::LayerNormalization>()) {}

 protected:
  Tensor call(const Tensor& x, bool training) override { return (*norm_)(x + (*attention_)(x, x, {.training = training})); }

 private:
  std::shared_ptr<nn::MultiHeadAttention> attention_;
  std::shared_ptr<nn::LayerNormalization> norm_;
};

struct Checked {
  std::vector<double> losses;
  DType output_dtype;
};

// Fits `model` for a few epochs under the policy the layers were made with, then checks what
// Keras' policy promises: variables float32 (weights, optimizer slots), one trace, finite
// decreasing loss, evaluate and predict agreeing with fit's model.
Checked fit_and_check(train::Sequential& model, const Tensor& x, const Tensor& y, train::LossRef loss,
                      std::vector<train::MetricRef> metrics, int epochs = 6) {
  model.compile(std::make_shared<optim::Adam>(1e-2), std::move(loss), std::move(metrics));
  CaptureStdout quiet;
  auto h = model.fit(x, y, {.batch_size = 8, .epochs = epochs, .shuffle = false, .verbose = 0});
  Checked c{h.history["loss"], model(x).dtype()};
  for (double l : c.losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(c.losses.back(), c.losses.front()) << "loss did not decrease";
  EXPECT_EQ(model.tracing_count(), 1);
  for (const auto& w : model.weights()) EXPECT_EQ(w.dtype(), DType::float32) << w.name();
  for (const auto& w : model.optimizer()->variables())  // slots float32 (the step counter is an integer)
    if (is_floating(w.dtype())) { EXPECT_EQ(w.dtype(), DType::float32) << w.name(); }
  auto logs = model.evaluate(x, y, 8);
  EXPECT_TRUE(std::isfinite(logs.at("loss")));
  Tensor p = model.predict(x, 8);
  EXPECT_EQ(p.dtype(), c.output_dtype);
  EXPECT_EQ(p.shape()[0], x.shape()[0]);
  return c;
}

Tensor tokens(std::int64_t n, std::int64_t steps, std::int64_t vocab, std::uint64_t seed) {
  return cast(floor(random::uniform({n, steps}, 0.0, static_cast<double>(vocab) - 1e-3, DType::float32, seed)),
              DType::int64);
}

// Labels the models can learn: from the first token (sequences) or the mean pixel (images).
Tensor first_token_class(const Tensor& t, std::int64_t classes) {
  return cast(floor(cast(slice(t, {0, 0}, {t.shape()[0], 1}), DType::float32) * (static_cast<double>(classes) / 20.0)),
              DType::int64);
}

}  // namespace

TEST(MixedPrecisionLayers, RecurrentLayersTrain) {
  PolicyScope policy("mixed_bfloat16");
  random::set_seed(21);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Embedding>(20, 8);
  model->add<nn::LSTM>(8, nn::RNNOptions{.return_sequences = true});
  model->add<nn::GRU>(8, nn::RNNOptions{.return_sequences = true});
  model->add(std::make_shared<nn::Bidirectional>(std::make_shared<nn::LSTM>(4, nn::RNNOptions{.return_sequences = true})));
  model->add<nn::SimpleRNN>(8);
  model->add<nn::Dense>(3);
  Tensor x = tokens(32, 6, 20, 1);
  Tensor y = reshape(first_token_class(x, 3), {32});
  auto c = fit_and_check(*model, x, y, train::SparseCategoricalCrossentropy(true), {"accuracy"});
  EXPECT_EQ(c.output_dtype, DType::bfloat16);
}

TEST(MixedPrecisionLayers, ScanPathRecurrentLayersTrain) {
  // The time loop as ef::scan (masks, or no fused primitive) rather than the fused op.
  PolicyScope policy("mixed_bfloat16");
  random::set_seed(22);
  auto model = std::make_shared<train::Sequential>();
  auto& emb = model->add<nn::Embedding>(20, 8);
  emb.mask_zero = true;
  model->add<nn::LSTM>(6, nn::RNNOptions{.return_sequences = true, .allow_fused = false});
  model->add<nn::GRU>(6, nn::RNNOptions{.reset_after = false});
  model->add<nn::Dense>(3);
  Tensor x = tokens(32, 5, 20, 2);
  Tensor y = reshape(first_token_class(x, 3), {32});
  auto c = fit_and_check(*model, x, y, train::SparseCategoricalCrossentropy(true), {"sparse_categorical_accuracy"});
  EXPECT_EQ(c.output_dtype, DType::bfloat16);
}

TEST(MixedPrecisionLayers, Conv1DPoolingAndAttentionTrain) {
  PolicyScope policy("mixed_bfloat16");
  random::set_seed(23);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Embedding>(20, 8);
  model->add<nn::Conv1D>(8, 3, nn::Conv1DOptions{.padding = "same", .activation = "relu"});
  model->add<nn::MaxPooling1D>(2);
  model->add<AttentionBlock>();
  model->add<nn::AveragePooling1D>(1);
  model->add<nn::GlobalAveragePooling1D>();
  model->add<nn::Dropout>(0.1);
  model->add<nn::Dense>(3);
  // Keras' advice for the last layer: a float32 softmax (the output is then float32).
  auto& softmax = model->add<nn::Activation>("softmax");
  softmax.set_dtype_policy("float32");
  Tensor x = tokens(32, 8, 20, 3);
  Tensor y = reshape(first_token_class(x, 3), {32});
  auto c = fit_and_check(*model, x, y, "sparse_categorical_crossentropy", {"accuracy", "sparse_top_k_categorical_accuracy"});
  EXPECT_EQ(c.output_dtype, DType::float32);
}

TEST(MixedPrecisionLayers, ConvTransposeNormalizationAndPooling2DTrain) {
  PolicyScope policy("mixed_bfloat16");
  random::set_seed(24);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Reshape>(Shape{8, 8, 1});
  model->add<nn::Conv2D>(4, Stride2{3, 3}, nn::Conv2DOptions{.padding = "same", .activation = "relu"});
  model->add<nn::BatchNormalization>();
  model->add<nn::MaxPool2D>();
  model->add<nn::Conv2DTranspose>(4, Stride2{2, 2}, nn::Conv2DTransposeOptions{.strides = {2, 2}});
  model->add<nn::AveragePooling2D>();
  model->add<nn::GlobalAveragePooling2D>();
  model->add<nn::LayerNormalization>();
  model->add<nn::Dense>(1, "sigmoid");
  Tensor x = random::uniform({32, 8, 8}, 0.0, 1.0, DType::float32, 4);
  Tensor y = cast(mean(x, {1, 2}) > 0.5, DType::float32);
  y = reshape(y, {32, 1});
  auto c = fit_and_check(*model, x, y, "binary_crossentropy", {"accuracy", "auc", "precision", "mse"});
  EXPECT_EQ(c.output_dtype, DType::bfloat16);
}

TEST(MixedPrecisionLayers, RegressionLossesAndMetrics) {
  PolicyScope policy("mixed_bfloat16");
  for (const char* loss : {"mse", "mae", "huber", "log_cosh"}) {
    random::set_seed(25);
    auto model = std::make_shared<train::Sequential>();
    model->add<nn::Dense>(8, "tanh");
    model->add<nn::Dense>(2);
    Tensor x = random::uniform({32, 4}, -1.0, 1.0, DType::float32, 5);
    Tensor y = matmul(x, tensor({{0.5f, -1.0f}, {1.0f, 0.25f}, {-0.5f, 0.5f}, {0.25f, 0.0f}}));
    SCOPED_TRACE(loss);
    auto c = fit_and_check(*model, x, y, loss, {"mae", "mse", "rmse"});
    EXPECT_EQ(c.output_dtype, DType::bfloat16);
  }
}

TEST(MixedPrecisionLayers, SavedModelKeepsThePolicyUnderAFloat32GlobalPolicy) {
  auto dir = ef::testing::fresh_temp_dir("mixed_policy_save");
  std::string path = (dir / "m.efmodel").string();
  Tensor x = tokens(4, 5, 20, 6);
  Tensor mixed_out;
  {
    PolicyScope policy("mixed_bfloat16");
    random::set_seed(26);
    auto model = std::make_shared<train::Sequential>();
    model->add<nn::Embedding>(20, 8);
    model->add<nn::LSTM>(8);
    model->add<nn::Dense>(3);
    model->add<nn::Activation>("softmax").set_dtype_policy("float32");
    mixed_out = (*model)(x);
    // The config holds the policy as Keras 3 writes it.
    auto config = model->stack()[1]->get_config();
    ASSERT_TRUE(config.has_value());
    const auto& dtype = config->config.map("dtype");
    EXPECT_EQ(dtype.text("class_name"), "DTypePolicy");
    EXPECT_EQ(dtype.text("module"), "keras");
    EXPECT_EQ(dtype.map("config").text("name"), "mixed_bfloat16");
    EXPECT_EQ(model->stack()[3]->get_config()->config.map("dtype").map("config").text("name"), "float32");
    save_model(*model, path);
  }
  ASSERT_EQ(nn::global_policy().name(), "float32");
  auto loaded = load_model(path);
  auto& seq = dynamic_cast<train::Sequential&>(*loaded);
  EXPECT_EQ(seq.stack()[0]->dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(seq.stack()[1]->dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(seq.stack()[3]->dtype_policy().name(), "float32");
  for (const auto& w : loaded->weights()) EXPECT_EQ(w.dtype(), DType::float32) << w.name();
  Tensor out = (*loaded)(x);
  EXPECT_EQ(out.dtype(), DType::float32);  // the float32 softmax
  EXPECT_EQ(out.to_vector<float>(), mixed_out.to_vector<float>());  // computed as when saved
  // A float32 model saved and loaded under the mixed global policy stays float32.
  std::string path32 = (dir / "m32.efmodel").string();
  auto f32 = std::make_shared<train::Sequential>();
  f32->add<nn::Dense>(3);
  (*f32)(ones({2, 4}));
  save_model(*f32, path32);
  PolicyScope policy("mixed_bfloat16");
  auto loaded32 = load_model(path32);
  EXPECT_EQ(dynamic_cast<train::Sequential&>(*loaded32).stack()[0]->dtype_policy().name(), "float32");
  EXPECT_EQ((*loaded32)(ones({2, 4})).dtype(), DType::float32);
}

TEST(MixedPrecisionLayers, PolicyConfigsReadBothKerasFormsAndRejectOthers) {
  nn::ConfigValue keras3 = nn::dtype_policy_config(nn::DTypePolicy("mixed_bfloat16"));
  EXPECT_EQ(nn::dtype_policy_from_config(keras3, "here").name(), "mixed_bfloat16");
  EXPECT_EQ(nn::dtype_policy_from_config(nn::ConfigValue("bfloat16"), "here").name(), "bfloat16");  // Keras 3.0
  // A config written before configs held the policy: the layer takes the global one.
  nn::LayerConfig saved = *nn::Dense(2, {}, true, "d").get_config();
  nn::LayerConfig old{"Dense", {}};
  for (const auto& [k, v] : saved.config.items())
    if (k != "dtype") old.config.set(k, v);
  ASSERT_EQ(saved.config.map("dtype").map("config").text("name"), "float32");
  {
    PolicyScope policy("mixed_bfloat16");
    EXPECT_EQ(nn::layer_from_config(old)->dtype_policy().name(), "mixed_bfloat16");
  }
  EXPECT_EQ(nn::layer_from_config(old)->dtype_policy().name(), "float32");
  auto with = [&](nn::ConfigValue dtype) {
    nn::LayerConfig c = old;
    c.config.set("dtype", std::move(dtype));
    return nn::layer_from_config(c);
  };
  EXPECT_EQ(with(keras3)->dtype_policy().name(), "mixed_bfloat16");
  ef::testing::expect_error([&] { with(nn::ConfigValue("mixed_float8")); }, {"layer 'd' (Dense)", "dtype", "mixed_float8"});
  ef::testing::expect_error([&] { with(nn::ConfigValue(3)); }, {"layer 'd' (Dense)", "dtype policy must be"});
  nn::ConfigMap quantized;
  quantized.set("class_name", "QuantizedDTypePolicy").set("config", nn::ConfigMap());
  ef::testing::expect_error([&] { with(quantized); }, {"QuantizedDTypePolicy"});
}

// Normalization returns its compute dtype, as Keras' does: bfloat16 under mixed_bfloat16 (the
// float32 result rounded), float64 under float64; float32 statistics either way.
TEST(MixedPrecision, NormalizationReturnsItsComputeDtype) {
  Tensor data = reshape(tensor<float>({1.0f, 2.0f, 3.0f, 4.0f, 10.0f, 20.0f, 30.0f, 40.0f}), {4, 2});
  auto reference = std::make_shared<nn::Normalization>();
  reference->adapt(data);
  Tensor want = (*reference)(data);
  ASSERT_EQ(want.dtype(), DType::float32);
  {
    PolicyScope policy("mixed_bfloat16");
    auto norm = std::make_shared<nn::Normalization>();
    norm->adapt(data);
    Tensor got = (*norm)(data);
    EXPECT_EQ(got.dtype(), DType::bfloat16);
    EXPECT_EQ(cast(got, DType::float32).to_vector<float>(), cast(cast(want, DType::bfloat16), DType::float32).to_vector<float>());
    for (const auto& w : norm->weights())  // mean and variance; the example count is int64
      if (is_floating(w.value().dtype())) { EXPECT_EQ(w.value().dtype(), DType::float32); }
  }
  {
    PolicyScope policy("float64");
    auto norm = std::make_shared<nn::Normalization>();
    norm->adapt(cast(data, DType::float64));
    Tensor got = (*norm)(cast(data, DType::float64));
    EXPECT_EQ(got.dtype(), DType::float64);
    std::vector<double> g = got.to_vector<double>();
    std::vector<float> w = want.to_vector<float>();
    for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-6);
  }
}
