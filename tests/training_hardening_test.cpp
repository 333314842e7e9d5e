// Training that used to give silent wrong results: labels out of range, EarlyStopping one epoch
// late, a frozen BatchNormalization that kept training, seeded dropout that repeated itself,
// batch sizes beyond the data, optimizer settings that turn weights into NaN, compile inside a
// callback, validation labels of another dtype.
#include <cstdint>
#include <limits>
#include <sstream>

#include <sys/stat.h>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
using ef::testing::CaptureStdout;

namespace {

// 3-class data a small model learns: the class is the index of the largest of 3 features.
struct Data {
  Tensor x, y;
};
Data three_classes(std::int64_t n, std::uint64_t seed) {
  Tensor x = random::stateless_normal({n, 3}, seed);
  return {x, argmax(x, -1)};
}

std::shared_ptr<train::Sequential> classifier() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(8, "relu");
  model->add<nn::Dense>(3);
  return model;
}

std::vector<std::vector<float>> values(const std::vector<Variable>& vars) {
  std::vector<std::vector<float>> out;
  for (const auto& v : vars) out.push_back(Tensor(v).to_vector<float>());
  return out;
}

}  // namespace

// ---------------------------------------------------------------- labels out of range
TEST(SparseLabels, OutOfRangeLabelsAreErrorsEagerly) {
  train::SparseCategoricalCrossentropy loss(/*from_logits=*/true);
  Tensor logits = zeros({2, 3});
  expect_error([&] { loss(tensor(std::vector<std::int64_t>{5, 1}), logits); },
               {"[sparse_categorical_crossentropy]", "Received a label value of 5", "outside the valid range of [0, 3)",
                "position (0,)", "int64[2]"});
  expect_error([&] { loss(tensor(std::vector<std::int64_t>{0, -1}), logits); }, {"label value of -1", "position (1,)"});
  expect_error([&] { loss(tensor(std::vector<std::int32_t>{0, 3}), logits); }, {"label value of 3", "int32[2]"});
  expect_error([&] { loss(tensor(std::vector<float>{NAN, 1.0f}), logits); }, {"label value of nan", "not a class index"});
  expect_error([&] { loss(tensor(std::vector<float>{1.5f, 1.0f}), logits); }, {"label value of 1.5", "not a class index"});
  expect_error([&] { loss(tensor(std::vector<double>{INFINITY, 1.0}), logits); }, {"label value of inf"});
  expect_error([&] { loss(tensor(std::vector<float>{7.0f, 1.0f}), logits); }, {"label value of 7", "[0, 3)"});
  // [batch, 1] labels are checked as well.
  expect_error([&] { loss(tensor(std::vector<std::int64_t>{0, 9}, Shape{2, 1}), logits); }, {"label value of 9"});
  // Valid labels of every dtype give the same loss.
  float want = loss(tensor(std::vector<std::int64_t>{2, 1}), logits).item<float>();
  EXPECT_NEAR(want, std::log(3.0f), 1e-6f);
  EXPECT_EQ(loss(tensor(std::vector<float>{2.0f, 1.0f}), logits).item<float>(), want);
  EXPECT_EQ(loss(tensor(std::vector<std::int32_t>{2, 1}), logits).item<float>(), want);

  train::SparseCategoricalAccuracy acc;
  expect_error([&] { acc.update_state(tensor(std::vector<std::int64_t>{3}), zeros({1, 3})); },
               {"[sparse_categorical_accuracy]", "label value of 3"});
}

TEST(SparseLabels, CheckedAtEveryReplayOfATracedStep) {
  train::SparseCategoricalCrossentropy loss(true);
  auto f = function([&](const Tensor& y, const Tensor& p) { return loss(y, p); });
  Tensor logits = zeros({2, 3});
  f(tensor(std::vector<std::int64_t>{0, 2}), logits);
  expect_error([&] { f(tensor(std::vector<std::int64_t>{0, 3}), logits); }, {"label value of 3", "position (1,)"});
  EXPECT_EQ(f.tracing_count(), 1);  // the check is an op of the graph, not a host-side scan
}

TEST(SparseLabels, FitWithLabelsOutOfRangeFailsAndNamesTheLabel) {
  Data d = three_classes(64, 1);
  for (bool eagerly : {false, true}) {
    auto model = classifier();
    model->compile(std::make_shared<optim::Adam>(), train::SparseCategoricalCrossentropy(true), {"accuracy"}, eagerly);
    Tensor bad = where(equal(arange(64), scalar<std::int64_t>(40)), full({64}, 7.0, DType::int64), d.y);
    CaptureStdout quiet;
    expect_error([&] { model->fit(d.x, bad, {.batch_size = 16, .epochs = 1, .shuffle = false, .verbose = 0}); },
                 {"label value of 7", "[0, 3)", "position (8,)"});
    expect_error([&] { model->evaluate(d.x, bad); }, {"label value of 7"});
  }
}

// ---------------------------------------------------------------- EarlyStopping as Keras
TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutImprovement) {
  // Keras' own example: patience 3 and nothing improves after the first epoch: 4 epochs run.
  Data d = three_classes(32, 2);
  for (int patience : {0, 1, 3}) {
    auto model = classifier();
    model->compile(std::make_shared<optim::SGD>(0.01), train::SparseCategoricalCrossentropy(true));
    auto stop = std::make_shared<train::EarlyStopping>(
        train::EarlyStoppingOptions{.monitor = "loss", .min_delta = 1e9, .patience = patience, .verbose = 1});
    CaptureStdout out;
    auto h = model->fit(d.x, d.y, {.epochs = 10, .callbacks = {stop}, .verbose = 0});
    EXPECT_EQ(h.epoch.size(), static_cast<std::size_t>(std::max(2, patience + 1))) << "patience " << patience;
    EXPECT_EQ(stop->stopped_epoch(), std::max(1, patience));
    EXPECT_NE(out.text().find("Epoch " + std::to_string(std::max(1, patience) + 1) + ": early stopping\n"), std::string::npos)
        << out.text();
  }
}

TEST(EarlyStopping, StartFromEpochAndBaseline) {
  Data d = three_classes(32, 3);
  auto model = classifier();
  model->compile(std::make_shared<optim::SGD>(0.01), train::SparseCategoricalCrossentropy(true));
  auto stop = std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.monitor = "loss", .min_delta = 1e9, .patience = 0, .start_from_epoch = 3});
  CaptureStdout quiet;
  auto h = model->fit(d.x, d.y, {.epochs = 10, .callbacks = {stop}, .verbose = 0});
  EXPECT_EQ(h.epoch.size(), 5u);  // epochs 0-2 unmonitored, 3 sets the best, 4 does not improve
  EXPECT_EQ(stop->best_epoch(), 3);
  EXPECT_EQ(stop->stopped_epoch(), 4);

  // A baseline the loss never beats: the wait never restarts, so patience 2 stops at epoch 2.
  auto model2 = classifier();
  model2->compile(std::make_shared<optim::SGD>(0.01), train::SparseCategoricalCrossentropy(true));
  auto base = std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.monitor = "loss", .min_delta = 1e9, .patience = 2, .baseline = -1.0});
  auto h2 = model2->fit(d.x, d.y, {.epochs = 10, .callbacks = {base}, .verbose = 0});
  EXPECT_EQ(h2.epoch.size(), 2u);  // Keras: with no epoch beating the baseline, fit runs `patience` epochs
  expect_error([] { train::EarlyStopping(train::EarlyStoppingOptions{.patience = -1}); }, {"EarlyStopping", "patience"});
  expect_error([] { train::EarlyStopping(train::EarlyStoppingOptions{.min_delta = NAN}); }, {"min_delta"});
}

TEST(EarlyStopping, RestoreBestWeightsPutsBackTheBestEpoch) {
  // From epoch 2 on, each epoch starts from large random weights: its loss stays far above the
  // first two epochs', so the best epoch is 0 or 1 and training stops after patience epochs.
  Data d = three_classes(64, 4);
  random::set_seed(3);
  auto model = classifier();
  model->compile(std::make_shared<optim::SGD>(0.05), train::SparseCategoricalCrossentropy(true));
  struct Snapshot : train::Callback {
    std::map<int, std::vector<std::vector<float>>> weights;
    std::map<int, double> loss;
    void on_epoch_begin(int epoch) override {
      if (epoch < 2) return;
      std::uint64_t seed = 100;
      for (const Variable& v : model->weights()) v.assign(random::stateless_normal(v.shape(), seed++, 0.0, 3.0));
    }
    void on_epoch_end(int epoch, const train::Logs& logs) override {
      weights[epoch] = values(model->weights());
      loss[epoch] = logs.at("loss");
    }
  };
  auto snap = std::make_shared<Snapshot>();
  auto stop = std::make_shared<train::EarlyStopping>(
      train::EarlyStoppingOptions{.monitor = "loss", .patience = 2, .verbose = 1, .restore_best_weights = true});
  CaptureStdout out;
  auto h = model->fit(d.x, d.y, {.batch_size = 8, .epochs = 20, .callbacks = {snap, stop}, .verbose = 0});
  int best = stop->best_epoch();
  ASSERT_GE(best, 0);
  EXPECT_LE(best, 1);
  for (const auto& [epoch, loss] : snap->loss) EXPECT_GE(loss, snap->loss[best]) << "epoch " << epoch;
  EXPECT_EQ(h.epoch.size(), static_cast<std::size_t>(best + 3));  // two epochs without improvement after the best
  EXPECT_NE(values(model->weights()), snap->weights[static_cast<int>(h.epoch.size()) - 1]);
  EXPECT_EQ(values(model->weights()), snap->weights[best]);
  EXPECT_NE(out.text().find("Restoring model weights from the end of the best epoch: " + std::to_string(best + 1)),
            std::string::npos)
      << out.text();
}

// ---------------------------------------------------------------- frozen BatchNormalization
TEST(FrozenBatchNorm, RunsInInferenceModeInsideFit) {
  Data d = three_classes(64, 5);
  Tensor x = d.x * 3.0f + 2.0f;  // statistics far from the initial moving ones (0, 1)
  auto check = [&](bool freeze_parent) {
    auto inner = std::make_shared<train::Sequential>();
    auto bn = std::make_shared<nn::BatchNormalization>();
    inner->add(bn);
    auto model = std::make_shared<train::Sequential>();
    model->add(inner);
    model->add<nn::Dense>(3);
    (*model)(x);
    if (freeze_parent) inner->set_trainable(false);
    else bn->set_trainable(false);
    model->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true));
    CaptureStdout quiet;
    model->fit(x, d.y, {.batch_size = 16, .epochs = 2, .verbose = 0});
    EXPECT_EQ(Tensor(bn->moving_mean()).to_vector<float>(), std::vector<float>(3, 0.0f));
    EXPECT_EQ(Tensor(bn->moving_variance()).to_vector<float>(), std::vector<float>(3, 1.0f));
    // Inference mode: the output is (x - moving_mean) / sqrt(moving_var + eps) * gamma + beta.
    Tensor out = (*bn)(x, /*training=*/true);
    EXPECT_EQ(out.to_vector<float>(), ((x - 0.0f) * rsqrt(ones({3}) + 1e-3f)).to_vector<float>());
  };
  check(false);
  check(true);
}

TEST(FrozenBatchNorm, FreezingAfterAFitTakesEffectInTheNextFit) {
  Data d = three_classes(64, 6);
  Tensor x = d.x * 3.0f + 2.0f;
  auto model = std::make_shared<train::Sequential>();
  auto& bn = model->add<nn::BatchNormalization>();
  auto& dense = model->add<nn::Dense>(3);
  model->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true));
  CaptureStdout quiet;
  model->fit(x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0});
  auto moving = Tensor(bn.moving_mean()).to_vector<float>();
  EXPECT_NE(moving, std::vector<float>(3, 0.0f));  // trainable: the statistics moved
  bn.set_trainable(false);
  dense.set_trainable(false);
  auto kernel = Tensor(dense.kernel()).to_vector<float>();
  model->fit(x, d.y, {.batch_size = 16, .epochs = 1, .verbose = 0});
  EXPECT_EQ(Tensor(bn.moving_mean()).to_vector<float>(), moving);
  EXPECT_EQ(Tensor(dense.kernel()).to_vector<float>(), kernel);
}

// ---------------------------------------------------------------- seeded dropout in fit
TEST(SeededDropout, EagerAndTracedFitsGiveTheSameLosses) {
  Data d = three_classes(96, 7);
  auto run = [&](bool eagerly) {
    random::set_seed(11);
    auto model = std::make_shared<train::Sequential>();
    model->add<nn::Dense>(16, "relu");
    model->add<nn::Dropout>(0.5, 42);
    model->add<nn::Dense>(3);
    model->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true), {}, eagerly);
    CaptureStdout quiet;
    return model->fit(d.x, d.y, {.batch_size = 32, .epochs = 3, .shuffle = false, .verbose = 0}).history["loss"];
  };
  auto eager = run(true), traced = run(false);
  ASSERT_EQ(eager.size(), 3u);
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(traced[i], eager[i], 1e-5 * (1 + eager[i])) << "epoch " << i;
}

// ---------------------------------------------------------------- batch sizes and empty data
TEST(FitBatches, BatchSizeLargerThanTheDataIsClampedAsKeras) {
  Data d = three_classes(10, 8);
  auto model = classifier();
  model->compile(std::make_shared<optim::Adam>(), train::SparseCategoricalCrossentropy(true), {"accuracy"});
  CaptureStdout quiet;
  for (std::int64_t batch : {std::int64_t{11}, std::int64_t{1} << 40, std::numeric_limits<std::int64_t>::max()}) {
    auto h = model->fit(d.x, d.y, {.batch_size = batch, .epochs = 2, .validation_data = std::make_pair(d.x, d.y), .verbose = 0});
    for (double v : h.history["loss"]) EXPECT_TRUE(std::isfinite(v)) << batch;
    for (double v : h.history["val_loss"]) EXPECT_TRUE(std::isfinite(v)) << batch;
    auto logs = model->evaluate(d.x, d.y, batch);
    EXPECT_TRUE(std::isfinite(logs["loss"])) << batch;
    EXPECT_EQ(model->predict(d.x, batch).shape(), (Shape{10, 3}));
  }
  expect_error([&] { model->evaluate(zeros({0, 3}), zeros({0}, DType::int64)); }, {"evaluate got no examples"});
  expect_error([&] { model->fit(zeros({0, 3}), zeros({0}, DType::int64)); }, {"fit got no examples"});
  expect_error([&] { model->train_on_batch(zeros({0, 3}), zeros({0}, DType::int64)); }, {"train_on_batch got no examples"});
  for (const auto& v : values(model->weights()))
    for (float w : v) EXPECT_TRUE(std::isfinite(w));
  expect_error([&] { model->evaluate(d.x, d.y, 0); }, {"batch_size must be at least 1"});
  expect_error([&] { model->evaluate(d.x, d.y, std::numeric_limits<std::int64_t>::min()); }, {"batch_size"});
}

// ---------------------------------------------------------------- optimizer settings
TEST(OptimizerSettings, ValuesThatCannotTrainAreErrorsNamingTheParameter) {
  const double inf = INFINITY, nan = NAN;
  expect_error([&] { optim::SGD{inf}; }, {"[SGD]", "learning_rate"});
  expect_error([&] { optim::SGD{nan}; }, {"[SGD]", "learning_rate"});
  expect_error([&] { optim::Adam(1e39); }, {"[Adam]", "learning_rate", "float32"});
  expect_error([&] { optim::Adam(1e-50); }, {"[Adam]", "learning_rate"});
  expect_error([&] { optim::SGD(0.1, nan); }, {"[SGD]", "momentum"});
  expect_error([&] { optim::SGD(0.1, 1.5); }, {"momentum"});
  expect_error([&] { optim::Adam(0.1, nan); }, {"beta_1"});
  expect_error([&] { optim::Adam(0.1, 0.9, 1.0); }, {"beta_2"});
  expect_error([&] { optim::Adam(0.1, 0.9, 0.999, nan); }, {"epsilon"});
  expect_error([&] { optim::Adam(0.1, 0.9, 0.999, -1e-7); }, {"epsilon"});
  expect_error([&] { optim::AdamW(0.1, nan); }, {"weight_decay"});
  expect_error([&] { optim::RMSprop(0.1, 1.0); }, {"[RMSprop]", "rho"});
  expect_error([&] { optim::RMSprop(0.1, -0.1); }, {"rho"});
  expect_error([&] { optim::RMSprop(0.1, nan); }, {"rho"});
  expect_error([&] { optim::RMSprop(0.1, 0.9, nan); }, {"momentum"});
  expect_error([&] { optim::RMSprop(0.1, 0.9, 0.0, inf); }, {"epsilon"});
  expect_error([&] { optim::SGD(0.1, 0.0, false, {.clipnorm = inf}); }, {"clipnorm"});
  expect_error([&] { optim::SGD(0.1, 0.0, false, {.global_clipnorm = nan}); }, {"global_clipnorm"});
  expect_error([&] { optim::ExponentialDecay(nan, 10, 0.9); }, {"ExponentialDecay", "initial_learning_rate"});
  expect_error([&] { optim::ExponentialDecay(0.1, 10, nan); }, {"decay_rate"});
  expect_error([&] { optim::ExponentialDecay(0.1, inf, 0.9); }, {"decay_steps"});
  expect_error([&] { optim::CosineDecay(0.1, 10, nan); }, {"CosineDecay", "alpha"});
  optim::SGD sgd(0.1);
  expect_error([&] { sgd.set_learning_rate(inf); }, {"learning_rate"});
  expect_error([&] { sgd.set_learning_rate(nan); }, {"learning_rate"});
  EXPECT_NEAR(sgd.learning_rate(), 0.1, 1e-7);
}

namespace {
// A schedule that goes wrong at step 2: its rate is NaN from then on.
struct NanAfterTwoSteps : optim::LearningRateSchedule {
  Tensor operator()(const Tensor& step) const override {
    return where(step < 2.0f, full_like(step, 0.1), full_like(step, NAN));
  }
};
}  // namespace

TEST(OptimizerSettings, ANanRateFromAScheduleFailsAtItsStepBeforeAnyWeightChanges) {
  for (bool traced : {false, true}) {
    Variable w(ones({3}), "w");
    optim::SGD opt(optim::LearningRate(NanAfterTwoSteps{}));
    auto step = [&] {
      GradientTape tape;
      Tensor loss = sum(square(Tensor(w)));
      opt.apply_gradients(tape.gradient(loss, std::vector<Variable>{w}), {w});
      return loss;
    };
    auto f = function(step);
    auto run = [&] { return traced ? f() : step(); };
    run();
    run();
    auto before = Tensor(w).to_vector<float>();
    expect_error(run, {"learning_rate from the schedule", "NaN"});
    EXPECT_EQ(Tensor(w).to_vector<float>(), before) << "traced " << traced;
    for (float v : before) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(OptimizerSettings, ASchedulerCallbackReturningInfIsAnError) {
  Data d = three_classes(16, 9);
  auto model = classifier();
  model->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true));
  auto lr = std::make_shared<train::LearningRateScheduler>([](int epoch, double) { return epoch == 1 ? INFINITY : 0.1; });
  CaptureStdout quiet;
  expect_error([&] { model->fit(d.x, d.y, {.epochs = 3, .callbacks = {lr}, .verbose = 0}); },
               {"LearningRateScheduler", "inf", "epoch 1"});
  for (const auto& v : values(model->weights()))
    for (float x : v) EXPECT_TRUE(std::isfinite(x));
}

// ---------------------------------------------------------------- compile inside fit
TEST(FitCallbacks, CompileDuringFitRunsTheNewConfiguration) {
  Data d = three_classes(32, 10);
  auto model = classifier();
  model->compile(std::make_shared<optim::SGD>(0.01), train::SparseCategoricalCrossentropy(true));
  struct Recompile : train::Callback {
    std::shared_ptr<optim::Optimizer> next = std::make_shared<optim::Adam>(0.01);
    void on_epoch_end(int epoch, const train::Logs&) override {
      if (epoch == 0) model->compile(next, train::SparseCategoricalCrossentropy(true), {"accuracy"});
    }
  };
  auto cb = std::make_shared<Recompile>();
  CaptureStdout quiet;
  auto h = model->fit(d.x, d.y, {.batch_size = 8, .epochs = 3, .callbacks = {cb}, .verbose = 0});
  EXPECT_EQ(h.epoch.size(), 3u);
  ASSERT_TRUE(cb->next->iterations().defined());
  EXPECT_EQ(Tensor(cb->next->iterations()).item<std::int64_t>(), 8);  // two epochs of 4 steps with Adam
  EXPECT_EQ(h.history["accuracy"].size(), 2u);  // from the epoch the metric was compiled in
}

// ---------------------------------------------------------------- validation data dtypes
TEST(FitValidation, LabelsOfAnotherIntegerDtypeAreCastAsKeras) {
  Data d = three_classes(48, 11);
  auto model = classifier();
  model->compile(std::make_shared<optim::Adam>(), train::SparseCategoricalCrossentropy(true), {"accuracy"});
  CaptureStdout quiet;
  auto h = model->fit(d.x, d.y, {.batch_size = 16, .epochs = 3,
                                 .validation_data = std::make_pair(cast(d.x, DType::float64), cast(d.y, DType::int32)),
                                 .verbose = 0});
  EXPECT_EQ(h.history["val_loss"].size(), 3u);
  EXPECT_EQ(model->tracing_count(), 1);
  EXPECT_EQ(model->test_tracing_count(), 1);
  // Float labels for integer training labels could round: an error before any training.
  auto weights = values(model->weights());
  expect_error([&] { model->fit(d.x, d.y, {.epochs = 1, .validation_data = std::make_pair(d.x, cast(d.y, DType::float32)), .verbose = 0}); },
               {"validation labels are float32 but the training labels are int64"});
  expect_error([&] { model->fit(d.x, d.y, {.epochs = 1, .validation_data = std::make_pair(zeros({48, 5}), d.y), .verbose = 0}); },
               {"validation inputs float32[48,5] do not match the training inputs float32[48,3]"});
  EXPECT_EQ(values(model->weights()), weights);
}

// ---------------------------------------------------------------- check_numerics
TEST(CheckNumerics, PassesFiniteValuesAndNamesTheFirstBadOne) {
  Tensor x = tensor({{1.0f, 2.0f}, {3.0f, NAN}});
  expect_error([&] { check_numerics(x, "activations"); }, {"[activations]", "NaN", "position (1, 1)", "float32[2,2]"});
  EXPECT_EQ(check_numerics(ones({2}), "ok").to_vector<float>(), std::vector<float>({1.0f, 1.0f}));
  auto f = function([](const Tensor& t) { return check_numerics(t * 2.0f, "doubled"); });
  EXPECT_EQ(f(ones({2})).to_vector<float>(), std::vector<float>({2.0f, 2.0f}));
  expect_error([&] { f(full({2}, 3e38)); }, {"[doubled]", "Inf"});
  expect_error([] { check_numerics(ones({2}, DType::int32), "m"); }, {"check_numerics", "floating"});
}

// ---------------------------------------------------------------- label and prediction ranks
TEST(LabelRanks, LabelsOfShapeBatchMatchPredictionsOfShapeBatchByOneAsKeras) {
  Tensor y = tensor(std::vector<float>{0.0f, 1.0f, 1.0f, 0.0f});
  Tensor p = tensor(std::vector<float>{0.2f, 0.9f, 0.4f, 0.1f}, Shape{4, 1});
  train::MeanSquaredError mse;
  EXPECT_FLOAT_EQ(mse(y, p).item<float>(), mse(reshape(y, {4, 1}), p).item<float>());
  EXPECT_FLOAT_EQ(mse(y, p).item<float>(), (0.04f + 0.01f + 0.36f + 0.01f) / 4);
  train::BinaryCrossentropy bce;
  EXPECT_FLOAT_EQ(bce(y, p).item<float>(), bce(reshape(y, {4, 1}), p).item<float>());
  // Before: [4] == [4,1] broadcast to [4,4] and gave 0.5 instead of 0.75.
  train::BinaryAccuracy bin;
  bin.update_state(y, p);
  EXPECT_FLOAT_EQ(bin.result().item<float>(), 0.75f);
  train::Accuracy acc;
  acc.update_state(tensor(std::vector<float>{1.0f, 2.0f, 3.0f}), tensor(std::vector<float>{1.0f, 2.0f, 0.0f}, Shape{3, 1}));
  EXPECT_FLOAT_EQ(acc.result().item<float>(), 2.0f / 3.0f);
  expect_error([&] { train::Accuracy().update_state(zeros({3}), zeros({4, 1})); }, {"[accuracy]", "differ in shape"});
  expect_error([&] { mse(zeros({3}), zeros({3, 2})); }, {"[mean_squared_error]", "differ in shape"});
  // A regression fit with labels of shape [batch] and a Dense(1) head.
  Tensor x = random::stateless_normal({64, 2}, 3);
  Tensor target = sum(x, {1});
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(1);
  model->compile(std::make_shared<optim::SGD>(0.1), "mse");
  CaptureStdout quiet;
  auto h = model->fit(x, target, {.batch_size = 16, .epochs = 20, .verbose = 0});
  EXPECT_LT(h.history["loss"].back(), 1e-3);
}

// ---------------------------------------------------------------- special files, NaN losses
TEST(SpecialFiles, LogsAndDataFilesThatAreNotRegularFilesFailInsteadOfHanging) {
  namespace fs = std::filesystem;
  fs::path dir = ef::testing::fresh_temp_dir("special_files");
  fs::path fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Data d = three_classes(8, 12);
  auto model = classifier();
  model->compile(std::make_shared<optim::SGD>(0.1), train::SparseCategoricalCrossentropy(true));
  CaptureStdout quiet;
  for (const fs::path& p : {fifo, dir})
    expect_error([&] { model->fit(d.x, d.y, {.epochs = 1, .callbacks = {std::make_shared<train::CSVLogger>(p.string())}, .verbose = 0}); },
                 {"CSVLogger", "not a file"});
  model->fit(d.x, d.y, {.epochs = 1, .callbacks = {std::make_shared<train::CSVLogger>("/dev/null")}, .verbose = 0});
  for (const fs::path& p : {fifo, dir, fs::path("/dev/zero")})
    expect_error([&] { data::load_idx(p.string(), p.string()); }, {"mnist", "not a regular file"});
  expect_error([&] { data::load_idx((dir / "missing").string(), (dir / "missing").string()); }, {"mnist", "no such file"});
}

TEST(TerminateOnNaN, StopsAfterTheBatchWithAnInvalidLoss) {
  Data d = three_classes(64, 13);
  auto model = classifier();
  model->compile(std::make_shared<optim::SGD>(0.1), "mse");  // any loss: the data makes it NaN
  Tensor bad_y = where(reshape(equal(arange(64), scalar<std::int64_t>(20)), {64, 1}), full({64, 3}, NAN), zeros({64, 3}));
  auto nan = std::make_shared<train::TerminateOnNaN>();
  CaptureStdout out;
  auto h = model->fit(d.x, bad_y, {.batch_size = 8, .epochs = 5, .shuffle = false, .callbacks = {nan}, .verbose = 0});
  EXPECT_TRUE(nan->terminated());
  EXPECT_EQ(h.epoch.size(), 1u);
  EXPECT_NE(out.text().find("Batch 2: Invalid loss, terminating training"), std::string::npos) << out.text();
}

TEST(ShapeOverflow, ConcatAndReshapeLayersReportDimsNoInt64Holds) {
  const std::int64_t big = std::int64_t{1} << 62;  // bools: a countable size; two overflow int64
  auto f = function([](const Tensor& a, const Tensor& b, const Tensor& c, const Tensor& d, const Tensor& e) {
    return concat({a, b, c, d, e}, 0);
  });
  TensorSpec s{DType::bool_, {big}};
  expect_error([&] { f.get_concrete_function(s, s, s, s, s); }, {"concat", "2^63"});
  nn::Reshape r(Shape{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()});
  expect_error([&] { r(zeros({1, 4})); }, {"target shape", "int64"});
}
