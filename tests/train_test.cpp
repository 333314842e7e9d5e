// Training: optimizers, losses, metrics, Model.fit on MNIST, callbacks, the progress bar.
#include "ef_test_paths.h"
#include <cstdio>
#include <fstream>
#include <sstream>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;
using ef::testing::CaptureStdout;

namespace {

std::string mnist_dir() {
  auto dir = data::find_mnist(EF_SHARED_DATA_DIR "/mnist");
  if (!dir) ADD_FAILURE() << "MNIST not found in " EF_SHARED_DATA_DIR "/mnist";
  return dir.value_or("");
}


std::shared_ptr<train::Sequential> mlp(std::int64_t hidden = 64) {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Flatten>();
  model->add<nn::Dense>(hidden, "relu");
  model->add<nn::Dense>(10);
  return model;
}

}  // namespace

// ---------------------------------------------------------------- optimizers
TEST(Optimizer, SgdMomentumNesterovAdamRmspropMatchTheirFormulas) {
  // One variable w = 1 with gradient 2w (loss w^2), two steps each, checked against the
  // update rules written out by hand (Keras' formulas).
  auto run = [](optim::Optimizer& opt, int steps) {
    Variable w(scalar(1.0f), "w");
    for (int i = 0; i < steps; ++i) {
      GradientTape tape;
      Tensor loss = square(Tensor(w));
      opt.apply_gradients(tape.gradient(loss, std::vector<Variable>{w}), {w});
    }
    return Tensor(w).item<float>();
  };
  optim::SGD sgd(0.1);
  EXPECT_NEAR(run(sgd, 2), 1.0f * 0.8f * 0.8f, 1e-6f);
  optim::SGD momentum(0.1, 0.9);
  // v1 = -0.2, w1 = 0.8; v2 = 0.9 * -0.2 - 0.1 * 1.6 = -0.34, w2 = 0.46
  EXPECT_NEAR(run(momentum, 2), 0.46f, 1e-6f);
  optim::SGD nesterov(0.1, 0.9, true);
  // v1 = -0.2, w1 = 1 + 0.9 * -0.2 - 0.2 = 0.62
  EXPECT_NEAR(run(nesterov, 1), 0.62f, 1e-6f);
  optim::Adam adam(0.1);
  // Adam's first step moves by lr (m/sqrt(v) = 1 after bias correction).
  EXPECT_NEAR(run(adam, 1), 0.9f, 1e-5f);
  optim::RMSprop rms(0.01);
  // v = 0.1 * 4 = 0.4; w -= 0.01 * 2 / sqrt(0.4 + 1e-7)
  EXPECT_NEAR(run(rms, 1), 1.0f - 0.02f / std::sqrt(0.4f), 1e-5f);
  optim::AdamW adamw(0.1, 0.5);
  // decay first: w = 1 - 0.1 * 0.5 * 1 = 0.95, then Adam moves by lr: 0.85
  EXPECT_NEAR(run(adamw, 1), 0.85f, 1e-5f);
}

TEST(Optimizer, ClippingAndSchedules) {
  Variable a(tensor({3.0f, 4.0f}), "a");
  optim::SGD clip(1.0, 0.0, false, {.clipnorm = 1.0});
  clip.apply_gradients({tensor({3.0f, 4.0f})}, {a});  // norm 5 -> 1: moves by (0.6, 0.8)
  expect_close(Tensor(a).to_vector<float>(), {2.4f, 3.2f});
  Variable b(tensor({0.0f}), "b"), c(tensor({0.0f}), "c");
  optim::SGD global(1.0, 0.0, false, {.global_clipnorm = 1.0});
  global.apply_gradients({tensor({3.0f}), tensor({4.0f})}, {b, c});
  expect_close(Tensor(b).to_vector<float>(), {-0.6f});
  expect_close(Tensor(c).to_vector<float>(), {-0.8f});
  optim::ExponentialDecay exp_decay(1.0, 10, 0.5);
  EXPECT_NEAR(exp_decay(scalar(20.0f)).item<float>(), 0.25f, 1e-6f);
  optim::ExponentialDecay stair(1.0, 10, 0.5, true);
  EXPECT_NEAR(stair(scalar(15.0f)).item<float>(), 0.5f, 1e-6f);
  optim::CosineDecay cosine(1.0, 100, 0.1);
  EXPECT_NEAR(cosine(scalar(50.0f)).item<float>(), 0.55f, 1e-5f);
  EXPECT_NEAR(cosine(scalar(500.0f)).item<float>(), 0.1f, 1e-5f);
  optim::SGD scheduled(optim::ExponentialDecay(1.0, 1, 0.5));
  Variable d(scalar(0.0f), "d");
  for (int i = 0; i < 3; ++i) scheduled.apply_gradients({scalar(1.0f)}, {d});  // lr 1, 0.5, 0.25
  EXPECT_NEAR(Tensor(d).item<float>(), -1.75f, 1e-6f);
  expect_error([] { optim::SGD(0.1, 0.0, false, {.clipnorm = 1.0, .global_clipnorm = 1.0}); }, {"SGD", "not both"});
  expect_error([] { optim::Adam(-1.0); }, {"Adam", "positive"});
  expect_error([&] { scheduled.apply_gradients({scalar(1.0f)}, {}); }, {"SGD", "1 gradients for 0 variables"});
  expect_error([&] { scheduled.apply_gradients({tensor({1.0f, 2.0f})}, {d}); }, {"SGD", "does not fit"});
}

TEST(Optimizer, SlotsMadeInsideATracedStepTraceOnce) {
  Variable w(tensor({1.0f, -1.0f}), "w");
  optim::Adam adam(0.01);
  int traces = 0;
  auto step = function([&](const Tensor& x) {
    ++traces;
    GradientTape tape;
    Tensor loss = sum(square(Tensor(w) - x));
    adam.apply_gradients(tape.gradient(loss, std::vector<Variable>{w}), {w});
    return loss;
  });
  for (int i = 0; i < 5; ++i) step(zeros({2}));
  EXPECT_EQ(step.tracing_count(), 1);
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(Tensor(adam.iterations()).item<std::int64_t>(), 5);
  EXPECT_EQ(adam.variables().size(), 3u);  // iterations, m, v
  // A new rate reaches the traced step without a retrace.
  adam.set_learning_rate(0.5);
  step(zeros({2}));
  EXPECT_EQ(step.tracing_count(), 1);
  EXPECT_NEAR(adam.learning_rate(), 0.5, 1e-7);
}

// ---------------------------------------------------------------- losses and metrics
TEST(Loss, ValuesMatchTheirDefinitions) {
  Tensor logits = tensor({{2.0f, 1.0f, 0.1f}, {0.5f, 2.5f, -1.0f}});
  Tensor labels = tensor(std::vector<std::int64_t>{0, 1});
  double l0 = -std::log(std::exp(2.0) / (std::exp(2.0) + std::exp(1.0) + std::exp(0.1)));
  double l1 = -std::log(std::exp(2.5) / (std::exp(0.5) + std::exp(2.5) + std::exp(-1.0)));
  EXPECT_NEAR(train::SparseCategoricalCrossentropy(true)(labels, logits).item<float>(), (l0 + l1) / 2, 1e-5);
  Tensor onehot = one_hot(labels, 3);
  EXPECT_NEAR(train::CategoricalCrossentropy(true)(onehot, logits).item<float>(), (l0 + l1) / 2, 1e-5);
  EXPECT_NEAR(train::SparseCategoricalCrossentropy()(labels, softmax(logits)).item<float>(), (l0 + l1) / 2, 1e-5);
  EXPECT_NEAR(train::MeanSquaredError()(tensor({1.0f, 2.0f}), tensor({2.0f, 4.0f})).item<float>(), 2.5f, 1e-6f);
  // Binary cross-entropy from logits stays finite for huge logits.
  Tensor big = tensor({100.0f, -100.0f});
  float b = train::BinaryCrossentropy(true)(tensor({0.0f, 1.0f}), big).item<float>();
  EXPECT_NEAR(b, 100.0f, 1e-3f);
  float p = train::BinaryCrossentropy()(tensor({1.0f, 0.0f}), tensor({1.0f, 0.0f})).item<float>();
  EXPECT_TRUE(std::isfinite(p));
  EXPECT_LT(p, 1e-5f);
  expect_error([] { train::MeanSquaredError()(zeros({2}), zeros({3})); }, {"mean_squared_error", "shape"});
  expect_error([] { train::SparseCategoricalCrossentropy()(zeros({2, 2}), zeros({2, 3})); }, {"sparse_categorical_crossentropy"});
  expect_error([] { train::loss_by_name("hinge_of_doom"); }, {"loss", "unknown"});
}

TEST(Metric, AccuracyKindsAndReset) {
  auto acc = train::metric_by_name("accuracy", "sparse_categorical_crossentropy");
  acc->update_state(tensor(std::vector<std::int64_t>{0, 1}), tensor({{0.9f, 0.1f}, {0.8f, 0.2f}}));
  EXPECT_FLOAT_EQ(acc->result().item<float>(), 0.5f);
  acc->update_state(tensor(std::vector<std::int64_t>{1, 1}), tensor({{0.1f, 0.9f}, {0.2f, 0.8f}}));
  EXPECT_FLOAT_EQ(acc->result().item<float>(), 0.75f);
  acc->reset_state();
  EXPECT_EQ(acc->result().item<float>(), 0.0f);  // Keras: 0 before any update (divide_no_nan), not NaN
  train::BinaryAccuracy bin;
  bin.update_state(tensor({1.0f, 0.0f, 1.0f}), tensor({0.7f, 0.6f, 0.2f}));
  EXPECT_NEAR(bin.result().item<float>(), 1.0f / 3.0f, 1e-6f);
  train::CategoricalAccuracy cat;
  cat.update_state(one_hot(tensor(std::vector<std::int64_t>{2}), 3), tensor({{0.1f, 0.2f, 0.7f}}));
  EXPECT_FLOAT_EQ(cat.result().item<float>(), 1.0f);
  expect_error([] { train::metric_by_name("f7", "mse"); }, {"metric", "unknown"});
}

// ---------------------------------------------------------------- layers
TEST(BasicLayers, DropoutTrainingAndInference) {
  nn::Dropout drop(0.5, 7);
  Tensor x = ones({1000});
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());  // not training: the identity
  Tensor t = drop(x, true);
  int zeros_seen = 0;
  for (float v : t.to_vector<float>()) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f);
    zeros_seen += v == 0.0f;
  }
  EXPECT_GT(zeros_seen, 400);
  EXPECT_LT(zeros_seen, 600);
  expect_error([] { nn::Dropout(1.0); }, {"dropout", "rate"});
}

TEST(BasicLayers, FlattenWithADynamicBatch) {
  nn::Flatten flat;
  auto f = function(flat, FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 4, 5}}}});
  EXPECT_EQ(f(zeros({3, 4, 5})).shape(), (Shape{3, 20}));
  EXPECT_EQ(f(zeros({1, 4, 5})).shape(), (Shape{1, 20}));
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(BasicLayers, FrozenLayersLeaveTrainableWeights) {
  auto model = mlp();
  (*model)(zeros({2, 28, 28}));
  EXPECT_EQ(model->trainable_weights().size(), 4u);
  model->stack()[1]->set_trainable(false);
  EXPECT_EQ(model->trainable_weights().size(), 2u);
  EXPECT_EQ(model->non_trainable_weights().size(), 2u);
}

// ---------------------------------------------------------------- Model.fit
TEST(Fit, MlpReachesKerasAccuracyOnMnistWithOneTrace) {
  random::set_seed(1);
  data::Digits d = data::load_mnist_test(mnist_dir());
  Tensor x = slice(d.images, {0}, {8000}), y = slice(d.labels, {0}, {8000});
  Tensor xv = slice(d.images, {8000}, {10000}), yv = slice(d.labels, {8000}, {10000});
  auto model = mlp(256);
  model->compile(std::make_shared<optim::Adam>(1e-3), train::SparseCategoricalCrossentropy(true), {"accuracy"});
  train::History h;
  {
    CaptureStdout quiet;
    h = model->fit(x, y, {.batch_size = 128, .epochs = 4, .validation_data = std::make_pair(xv, yv), .verbose = 2});
  }
  ASSERT_EQ(h.history["val_accuracy"].size(), 4u);
  EXPECT_GE(h.history["val_accuracy"].back(), 0.94);
  EXPECT_LT(h.history["loss"].back(), h.history["loss"].front());
  // One trace for the whole fit: 8000 = 62 full batches + one of 64, and the first step made
  // Adam's slots.
  EXPECT_EQ(model->tracing_count(), 1);
  auto logs = model->evaluate(xv, yv, 500);
  EXPECT_NEAR(logs["accuracy"], h.history["val_accuracy"].back(), 1e-6);
  Tensor pred = model->predict(slice(xv, {0}, {5}));
  EXPECT_EQ(pred.shape(), (Shape{5, 10}));
}

TEST(Fit, EagerAndTracedFitsGiveTheSameLosses) {
  data::Digits d = data::synthetic_digits(512, 3);
  auto run = [&](bool eagerly) {
    random::set_seed(5);
    auto model = mlp(32);
    model->compile(std::make_shared<optim::SGD>(0.1, 0.9), train::SparseCategoricalCrossentropy(true), {"accuracy"},
                   eagerly);
    CaptureStdout quiet;
    return model->fit(d.images, d.labels, {.batch_size = 100, .epochs = 3, .verbose = 0}).history["loss"];
  };
  auto eager = run(true), traced = run(false);
  ASSERT_EQ(eager.size(), 3u);
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(traced[i], eager[i], 1e-5 * (1 + eager[i])) << "epoch " << i;
}

TEST(Fit, ProgressOutputOneLinePerEpochWhenNotATerminal) {
  data::Digits d = data::synthetic_digits(300, 1);
  auto model = mlp(16);
  model->compile(std::make_shared<optim::Adam>(), "sparse_categorical_crossentropy", {"accuracy"});
  CaptureStdout out;
  model->fit(d.images, d.labels, {.batch_size = 64, .epochs = 2, .validation_split = 0.2});
  std::string text = out.text();
  EXPECT_NE(text.find("Epoch 1/2\n4/4 [==============================] - "), std::string::npos) << text;
  EXPECT_NE(text.find("s/step - loss: "), std::string::npos) << text;  // ms/step or us/step
  EXPECT_NE(text.find(" - accuracy: "), std::string::npos) << text;
  EXPECT_NE(text.find(" - val_loss: "), std::string::npos) << text;
  EXPECT_NE(text.find(" - val_accuracy: "), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "no in-place redraw when stdout is not a terminal";
}

TEST(Fit, CallbacksEarlyStoppingCsvAndLearningRate) {
  data::Digits d = data::synthetic_digits(200, 2);
  auto model = mlp(8);
  auto opt = std::make_shared<optim::SGD>(0.01);
  model->compile(opt, train::SparseCategoricalCrossentropy(true));
  std::string csv = ::testing::TempDir() + "/ef_log.csv";
  auto stop = std::make_shared<train::EarlyStopping>("loss", 0, 1e9);  // never "improves" enough
  auto lr = std::make_shared<train::LearningRateScheduler>([](int epoch, double) { return 0.1 / (epoch + 1); });
  CaptureStdout quiet;
  auto h = model->fit(d.images, d.labels,
                      {.epochs = 10, .callbacks = {stop, std::make_shared<train::CSVLogger>(csv), lr}, .verbose = 0});
  EXPECT_EQ(h.epoch.size(), 2u);  // first epoch sets the best, the second does not improve: stop
  EXPECT_EQ(stop->stopped_epoch(), 1);
  EXPECT_NEAR(opt->learning_rate(), 0.05, 1e-7);
  std::ifstream in(csv);
  std::string header, row1, row2;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header, "epoch,loss");
  EXPECT_EQ(row1.rfind("0,", 0), 0u);
  EXPECT_EQ(row2.rfind("1,", 0), 0u);
  EXPECT_EQ(model->tracing_count(), 1);
}

TEST(Fit, BadInputIsAClearError) {
  auto model = mlp(4);
  expect_error([&] { model->fit(zeros({4, 28, 28}), zeros({4})); }, {"fit needs compile"});
  model->compile(std::make_shared<optim::SGD>(), "sparse_categorical_crossentropy");
  expect_error([&] { model->fit(zeros({4, 28, 28}), zeros({3})); }, {"fit", "different numbers of examples"});
  expect_error([&] { model->fit(zeros({4, 28, 28}), zeros({4}), {.batch_size = 0}); }, {"batch_size"});
  expect_error([&] { model->fit(zeros({4, 28, 28}), zeros({4}), {.validation_split = 1.5}); }, {"validation_split"});
}

TEST(Fit, SummaryPrintsTheKerasTable) {
  auto model = mlp(64);
  (*model)(zeros({1, 28, 28}));
  std::ostringstream os;
  model->summary(os);
  std::string s = os.str();
  EXPECT_NE(s.find("Layer (type)"), std::string::npos) << s;
  EXPECT_NE(s.find("(Flatten)"), std::string::npos) << s;
  EXPECT_NE(s.find("(None, 784)"), std::string::npos) << s;
  EXPECT_NE(s.find("50,240"), std::string::npos) << s;  // 784 * 64 + 64
  EXPECT_NE(s.find("Total params: 50,890"), std::string::npos) << s;
  EXPECT_NE(s.find("Non-trainable params: 0"), std::string::npos) << s;
}

// ---------------------------------------------------------------- MNIST files
TEST(Mnist, ReadsTheRealFilesAndRejectsDamagedOnes) {
  data::Digits d = data::load_mnist_test(mnist_dir());
  EXPECT_EQ(d.images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(d.labels.shape(), (Shape{10000}));
  EXPECT_EQ(d.labels.to_vector<std::int64_t>()[0], 7);  // the first test digit is a 7
  EXPECT_LE(max(d.images).item<float>(), 1.0f);
  std::string dir = ::testing::TempDir();
  {
    std::ofstream bad(dir + "/bad_magic", std::ios::binary);
    bad << std::string("\x00\x00\x08\x02\x00\x00\x00\x01", 8) << 'x';
    std::ofstream truncated(dir + "/truncated", std::ios::binary);
    truncated << std::string("\x00\x00\x08\x01\x00\x00\x00\x05", 8) << "ab";
  }
  expect_error([&] { data::load_idx(dir + "/bad_magic", dir + "/truncated"); }, {"mnist", "bad_magic", "magic"});
  std::string images = mnist_dir() + "/t10k-images-idx3-ubyte.gz";
  expect_error([&] { data::load_idx(images, dir + "/truncated"); }, {"mnist", "truncated"});
  expect_error([&] { data::load_idx(dir + "/missing", dir + "/truncated"); }, {"mnist", "cannot open"});
}
