// Keras layers: shapes, errors that name the layer, training vs inference, and every layer's
// gradients (inputs and weights) against finite differences.
#include "ef_test_paths.h"
#include <functional>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

namespace {

// Checks d sum(layer(x) * w) / d(x and every trainable weight) against central differences
// along random directions, in float32 with a step suited to it.
void check_layer_gradients(const std::string& what, nn::Layer& layer, std::vector<Tensor> xs, bool training = false,
                           double tolerance = 2e-2) {
  SCOPED_TRACE(what);
  auto call = [&](const std::vector<Tensor>& in) { return in.size() == 1 ? layer(in[0], training) : layer(in, training); };
  Tensor y0 = call(xs);  // builds
  Tensor w = random::normal(y0.shape(), 0.0, 1.0, DType::float32, 77);
  auto loss = [&](const std::vector<Tensor>& in) { return sum(call(in) * w); };
  std::vector<Variable> weights = layer.trainable_weights();
  GradientTape tape;
  std::vector<GradientSource> sources;
  for (const auto& x : xs)
    if (is_floating(x.dtype())) {
      tape.watch(x);
      sources.emplace_back(x);
    }
  for (const auto& v : weights) sources.emplace_back(v);
  std::vector<Tensor> grads = tape.gradient(loss(xs), sources, GradientOptions{UnconnectedGradients::zero, {}});
  const double eps = 1e-2;
  std::size_t k = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (!is_floating(xs[i].dtype())) continue;
    Tensor v = random::normal(xs[i].shape(), 0.0, 1.0, DType::float32, 100 + i);
    auto at = [&](double s) {
      std::vector<Tensor> ys = xs;
      ys[i] = xs[i] + v * s;
      return static_cast<double>(loss(ys).item<float>());
    };
    double numeric = (at(eps) - at(-eps)) / (2 * eps);
    double analytic = sum(grads[k++] * v).item<float>();
    EXPECT_NEAR(analytic, numeric, tolerance * (1 + std::fabs(numeric))) << "input " << i;
  }
  for (const auto& var : weights) {
    Tensor base = Tensor(var).clone();
    Tensor v = random::normal(var.shape(), 0.0, 1.0, DType::float32, 300 + k);
    auto at = [&](double s) {
      var.assign(base + v * s);
      return static_cast<double>(loss(xs).item<float>());
    };
    double numeric = (at(eps) - at(-eps)) / (2 * eps);
    var.assign(base);
    double analytic = sum(grads[k++] * v).item<float>();
    EXPECT_NEAR(analytic, numeric, tolerance * (1 + std::fabs(numeric))) << "weight " << var.name();
  }
}

}  // namespace

TEST(Layers, EveryLayersGradientMatchesFiniteDifferences) {
  random::set_seed(21);
  nn::Dense dense(5, "tanh");
  check_layer_gradients("dense", dense, {random::normal({3, 4})});
  nn::Conv2D conv(4, {3, 3}, {.strides = {2, 1}, .padding = "same", .activation = "sigmoid"});
  check_layer_gradients("conv2d", conv, {random::normal({2, 6, 5, 3})});
  nn::MaxPool2D maxpool;
  check_layer_gradients("max_pool2d", maxpool, {random::normal({2, 4, 4, 2})});
  nn::AveragePooling2D avgpool({2, 2}, std::nullopt, "same");
  check_layer_gradients("average_pooling2d", avgpool, {random::normal({1, 5, 5, 2})});
  nn::GlobalAveragePooling2D gap;
  check_layer_gradients("global_average_pooling2d", gap, {random::normal({2, 3, 3, 4})});
  nn::BatchNormalization bn;
  check_layer_gradients("batch_normalization (training)", bn, {random::normal({8, 3})}, true);
  nn::LayerNormalization ln;
  check_layer_gradients("layer_normalization", ln, {random::normal({4, 6})});
  nn::Embedding emb(10, 3);
  check_layer_gradients("embedding", emb, {tensor(std::vector<std::int64_t>{1, 4, 4, 9})});
  nn::Add add;
  check_layer_gradients("add", add, {random::normal({2, 3}), random::normal({2, 3})});
  nn::Concatenate cat(-1);
  check_layer_gradients("concatenate", cat, {random::normal({2, 3}), random::normal({2, 2})});
  nn::Flatten flat;
  check_layer_gradients("flatten", flat, {random::normal({2, 3, 2})});
  nn::Reshape reshape_layer(Shape{3, -1});
  check_layer_gradients("reshape", reshape_layer, {random::normal({2, 6})});
  nn::Activation act("gelu");
  check_layer_gradients("activation", act, {random::normal({2, 3})});
}

TEST(Layers, ShapeErrorsNameTheLayerAndBothShapes) {
  nn::Conv2D conv(8, {3, 3}, {}, "feature_conv");
  expect_error([&] { conv(zeros({2, 28, 28})); }, {"feature_conv", "rank 4", "[2,28,28]"});
  conv(zeros({1, 8, 8, 3}));
  expect_error([&] { conv(zeros({1, 8, 8, 5})); }, {"feature_conv", "float32[1,8,8,5]", "3"});
  expect_error([] { nn::Conv2D c(4, {5, 5}); c(zeros({1, 3, 3, 1})); }, {"conv2d", "smaller than the window"});
  nn::Dense dense(4, {}, true, "head");
  dense(zeros({2, 6}));
  expect_error([&] { dense(zeros({2, 7})); }, {"head", "float32[2,7]"});
  nn::BatchNormalization bn(0.99, 1e-3, "bn");
  bn(zeros({2, 3}));
  expect_error([&] { bn(zeros({2, 4})); }, {"bn", "float32[2,4]", "3 features"});
  nn::Embedding emb(5, 2, "words");
  expect_error([&] { emb(zeros({3})); }, {"words", "integer ids"});
  expect_error([&] { emb(tensor(std::vector<std::int64_t>{7})); }, {"gather", "out of range"});
  nn::Reshape to_image(Shape{28, 28, 1}, "to_image");
  EXPECT_EQ(to_image(zeros({5, 784})).shape(), Shape({5, 28, 28, 1}));
  expect_error([&] { to_image(zeros({5, 780})); }, {"to_image", "float32[5,780]", "784"});
  expect_error([] { nn::Reshape r(Shape{-1, -1}); r(zeros({2, 4})); }, {"one -1"});
  expect_error([] { nn::Reshape r(Shape{3, -1}); r(zeros({2, 4})); }, {"cannot reshape"});
  auto traced = function(to_image, FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 784}}}});
  EXPECT_EQ(traced(zeros({3, 784})).shape(), Shape({3, 28, 28, 1}));  // the batch stays dynamic
  nn::Add add;
  expect_error([&] { add(std::vector<Tensor>{zeros({2})}); }, {"add", "at least 2 inputs"});
  expect_error([&] { add(std::vector<Tensor>{zeros({2}), zeros({3})}); }, {"add", "broadcast"});
}

TEST(Layers, BuildForMakesTheWeightsOnceForAShapeWithAnyBatch) {
  nn::Dense dense(4, {}, true, "head");
  dense.build_for(Shape{kDynamic, 6});
  ASSERT_TRUE(dense.built());
  ASSERT_EQ(dense.weights().size(), 2u);
  EXPECT_EQ(dense.weights()[0].shape(), Shape({6, 4}));
  Variable kernel = dense.weights()[0];
  EXPECT_EQ(dense(zeros({3, 6})).shape(), Shape({3, 4}));
  dense.build_for(Shape{kDynamic, 9});  // built: nothing again, and the call built nothing either
  ASSERT_EQ(dense.weights().size(), 2u);
  EXPECT_TRUE(dense.weights()[0].same_as(kernel));
  expect_error([&] { dense(zeros({2, 7})); }, {"head", "float32[2,7]"});

  nn::Conv2D conv(8, {3, 3}, {}, "feature_conv");
  expect_error([&] { conv.build_for(Shape{kDynamic, 28, 28}); }, {"feature_conv", "rank 4"});
  EXPECT_FALSE(conv.built());  // a build that failed leaves no weights, and a retry starts clean
  EXPECT_TRUE(conv.weights().empty());
  conv.build_for(Shape{kDynamic, 8, 8, 3});
  EXPECT_EQ(conv.weights()[0].shape(), Shape({3, 3, 3, 8}));

  nn::Add add;
  add.build_for(std::vector<Shape>{Shape{kDynamic, 2}, Shape{kDynamic, 2}});
  EXPECT_TRUE(add.built());
  expect_error([&] { add.build_for(std::vector<Shape>{}); }, {"no input shapes"});

  // A single-input layer called with two inputs fails, and is not left built without weights.
  nn::Dense once(2, {}, true, "once");
  expect_error([&] { once(std::vector<Tensor>{zeros({1, 3}), zeros({1, 3})}); }, {"once", "takes one input, got 2"});
  expect_error([&] { once(std::vector<Tensor>{}); }, {"once", "no inputs"});
  EXPECT_EQ(once(ones({1, 3})).shape(), Shape({1, 2}));
  EXPECT_EQ(once.weights().size(), 2u);
}

TEST(Layers, FloatWeightLayersTakeIntegerInputsAsKerasOpsPromoteThem) {
  nn::DenseOptions o;
  o.units = 2;
  o.kernel_initializer = nn::ones_initializer();
  nn::Dense dense(o);
  Tensor y = dense(tensor(std::vector<std::int32_t>{1, 2, 3, 4}, Shape{2, 2}));
  EXPECT_EQ(y.dtype(), DType::float32);
  expect_close(y.to_vector<float>(), {3, 3, 7, 7});
  nn::Conv2D conv(1, {2, 2});
  EXPECT_EQ(conv(cast(ones({1, 3, 3, 1}), DType::uint8)).dtype(), DType::float32);
  nn::Embedding emb(5, 2);  // integer ids stay integers
  EXPECT_EQ(emb(tensor(std::vector<std::int64_t>{1, 4})).shape(), Shape({2, 2}));
}

TEST(Layers, RecurrentDropoutOfInputsIsOneMaskPerSequenceInTrainingOnly) {
  nn::RNNOptions o;
  o.activation = nn::ActivationFn();  // linear, identity kernel, no recurrence: h_t = the dropped x_t
  o.use_bias = false;
  o.kernel_initializer = nn::identity_initializer();
  o.recurrent_initializer = nn::zeros_initializer();
  o.return_sequences = true;
  o.dropout = 0.5;
  nn::SimpleRNN rnn(3, o, "rnn");
  Tensor x = ones({32, 4, 3});
  EXPECT_EQ(rnn(x).to_vector<float>(), x.to_vector<float>());  // inference: untouched
  std::vector<float> y = rnn(x, true).to_vector<float>();
  int dropped = 0;
  for (std::size_t b = 0; b < 32; ++b)
    for (std::size_t f = 0; f < 3; ++f) {
      float first = y[b * 12 + f];
      EXPECT_TRUE(first == 0.0f || first == 2.0f);
      dropped += first == 0.0f;
      for (std::size_t t = 1; t < 4; ++t) EXPECT_EQ(y[b * 12 + t * 3 + f], first);  // the same mask every step
    }
  EXPECT_GT(dropped, 16);
  EXPECT_LT(dropped, 80);
  EXPECT_EQ(rnn.get_config()->config.real("dropout"), 0.5);
}

TEST(Layers, BatchNormalizationTrainingAndInferenceDiffer) {
  nn::BatchNormalization bn(0.5);
  Tensor x = tensor({{1.0f, 10.0f}, {3.0f, 30.0f}});
  Tensor t = bn(x, true);  // batch statistics: each column becomes (-1, 1) / sqrt(1 + eps)
  expect_close(t.to_vector<float>(), {-0.9995f, -1.0f, 0.9995f, 1.0f}, 1e-3f);
  // The moving statistics moved halfway (momentum 0.5) from (0, 1) toward (2, 20) and (1, 100).
  expect_close(Tensor(bn.moving_mean()).to_vector<float>(), {1.0f, 10.0f});
  expect_close(Tensor(bn.moving_variance()).to_vector<float>(), {1.0f, 50.5f});
  Tensor i = bn(x, false);  // inference: the moving statistics
  expect_close(i.to_vector<float>(), {0.0f, 0.0f, 2.0f / std::sqrt(1.001f), 20.0f / std::sqrt(50.501f)}, 1e-3f);
  EXPECT_EQ(bn.trainable_weights().size(), 2u);
  EXPECT_EQ(bn.non_trainable_weights().size(), 2u);
}

TEST(Layers, BatchNormalizationInATracedTrainStepUpdatesItsStatistics) {
  nn::BatchNormalization bn(0.0);  // momentum 0: moving stats = the last batch's
  auto step = function([&](const Tensor& x) { return bn(x, true); });
  step(tensor(std::vector<float>{0.0f, 4.0f}, Shape{2, 1}));
  step(tensor(std::vector<float>{10.0f, 14.0f}, Shape{2, 1}));
  EXPECT_EQ(step.tracing_count(), 1);
  expect_close(Tensor(bn.moving_mean()).to_vector<float>(), {12.0f});
  expect_close(Tensor(bn.moving_variance()).to_vector<float>(), {4.0f});
}

TEST(Layers, ModelsWithSeveralInputsAndSubclassing) {
  struct TwoTower : public train::Model {
    nn::Dense left{4}, right{4};
    nn::Concatenate join;
    nn::Dense head{1};
    Tensor call(const std::vector<Tensor>& in, bool) override { return head(join({left(in[0]), right(in[1])})); }
  } model;
  Tensor y = model({ones({3, 2}), ones({3, 5})});
  EXPECT_EQ(y.shape(), (Shape{3, 1}));
  EXPECT_EQ(model.trainable_weights().size(), 6u);
  EXPECT_EQ(model.layers().size(), 4u);
}

TEST(Layers, CnnReachesNinetySevenPercentOnMnist) {
  random::set_seed(2);
  auto dir = data::find_mnist(EF_SHARED_DATA_DIR "/mnist");
  ASSERT_TRUE(dir.has_value()) << "MNIST not found in " EF_SHARED_DATA_DIR "/mnist";
  data::Digits d = data::load_mnist_test(*dir);
  Tensor images = reshape(d.images, {10000, 28, 28, 1});
  train::Sequential model;
  model.add<nn::Conv2D>(16, Stride2{3, 3}, nn::Conv2DOptions{.activation = "relu"});
  model.add<nn::MaxPool2D>();
  model.add<nn::Conv2D>(32, Stride2{3, 3}, nn::Conv2DOptions{.activation = "relu"});
  model.add<nn::MaxPool2D>();
  model.add<nn::Flatten>();
  model.add<nn::Dropout>(0.25);
  model.add<nn::Dense>(10);
  model.compile(std::make_shared<optim::Adam>(2e-3), train::SparseCategoricalCrossentropy(true), {"accuracy"});
  auto h = model.fit(slice(images, {0}, {8000}), slice(d.labels, {0}, {8000}),
                     {.batch_size = 64, .epochs = 4,
                      .validation_data = std::make_pair(slice(images, {8000}, {10000}), slice(d.labels, {8000}, {10000})),
                      .verbose = 0});
  EXPECT_GE(h.history["val_accuracy"].back(), 0.97);
  EXPECT_EQ(model.tracing_count(), 1);
}
