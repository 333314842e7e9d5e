// The trainer as Keras 3 has it: fit, evaluate and predict call a CallbackList in Keras 3's
// order (keras/src/backend/tensorflow/trainer.py); History and the progress bar are callbacks
// (History always, ProgbarLogger when verbose), the bar writing through the progress sink;
// data parallelism is a strategy the loop consults (here a fake one, no MPI).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <eagerflow/core/progress.h>
#include <eagerflow/train/callback_list.h>
#include <eagerflow/train/distribution.h>

#include "test_util.h"

using namespace ef;

namespace {

struct Data {
  Tensor x, y;
};

Data small_data(std::int64_t n, std::uint64_t seed = 3) {
  Tensor x = cast(ef::testing::randn({n, 4}, seed), DType::float32);
  Tensor y = cast(greater(sum(x, {1}), scalar(0.0f)), DType::int64);
  return {x, y};
}

std::shared_ptr<train::Sequential> small_model() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(8, "relu");
  model->add<nn::Dense>(2, "softmax");
  (*model)(zeros({1, 4}));
  model->compile(std::make_shared<optim::SGD>(0.1), "sparse_categorical_crossentropy", {"accuracy"});
  return model;
}

std::vector<Tensor> weight_values(const train::Model& m) {
  std::vector<Tensor> out;
  for (const Variable& v : m.weights()) out.push_back(Tensor(v).clone());
  return out;
}

// Every hook, in the order called, with the keys of the logs it got.
class Recorder : public train::Callback {
 public:
  std::vector<std::string> calls;
  std::vector<train::Logs> epoch_logs, test_end_logs;
  void on_train_begin() override { calls.push_back("train_begin"); }
  void on_train_end() override { calls.push_back("train_end"); }
  void on_epoch_begin(int e) override { calls.push_back("epoch_begin " + std::to_string(e)); }
  void on_epoch_end(int e, const train::Logs& logs) override {
    calls.push_back("epoch_end " + std::to_string(e));
    epoch_logs.push_back(logs);
  }
  void on_train_batch_begin(int b) override { calls.push_back("train_batch_begin " + std::to_string(b)); }
  void on_train_batch_end(int b, const train::Logs& logs) override {
    calls.push_back("train_batch_end " + std::to_string(b) + (logs.count("loss") ? " loss" : ""));
  }
  void on_test_begin() override { calls.push_back("test_begin"); }
  void on_test_end(const train::Logs& logs) override {
    calls.push_back("test_end");
    test_end_logs.push_back(logs);
  }
  void on_test_batch_begin(int b) override { calls.push_back("test_batch_begin " + std::to_string(b)); }
  void on_test_batch_end(int b, const train::Logs& logs) override {
    calls.push_back("test_batch_end " + std::to_string(b) + (logs.count("loss") ? " loss" : ""));
  }
  void on_predict_begin() override { calls.push_back("predict_begin"); }
  void on_predict_end() override { calls.push_back("predict_end"); }
  void on_predict_batch_begin(int b) override { calls.push_back("predict_batch_begin " + std::to_string(b)); }
  void on_predict_batch_end(int b) override { calls.push_back("predict_batch_end " + std::to_string(b)); }
};

// Captures what the progress sink receives, and restores stdout at the end.
class CaptureProgress {
 public:
  CaptureProgress() {
    set_progress_sink([this](std::string_view s) { text_ += s; });
  }
  ~CaptureProgress() { set_progress_sink(nullptr); }
  CaptureProgress(const CaptureProgress&) = delete;
  CaptureProgress& operator=(const CaptureProgress&) = delete;
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(CallbackList, FitWithValidationCallsTheHooksInKeras3Order) {
  Data d = small_data(8), v = small_data(4, 5);
  auto model = small_model();
  auto rec = std::make_shared<Recorder>();
  model->fit(d.x, d.y, {.batch_size = 4, .epochs = 2, .validation_data = std::make_pair(v.x, v.y), .shuffle = false,
                        .callbacks = {rec}, .verbose = 0});
  std::vector<std::string> epoch = {"train_batch_begin 0", "train_batch_end 0 loss", "train_batch_begin 1", "train_batch_end 1 loss",
                                    "test_begin", "test_batch_begin 0", "test_batch_end 0 loss", "test_end"};
  std::vector<std::string> want = {"train_begin", "epoch_begin 0"};
  want.insert(want.end(), epoch.begin(), epoch.end());
  want.insert(want.end(), {"epoch_end 0", "epoch_begin 1"});
  want.insert(want.end(), epoch.begin(), epoch.end());
  want.insert(want.end(), {"epoch_end 1", "train_end"});
  EXPECT_EQ(rec->calls, want);
  // on_test_end gets the validation's logs unprefixed; on_epoch_end the training's and "val_" ones.
  ASSERT_EQ(rec->test_end_logs.size(), 2u);
  EXPECT_EQ(rec->test_end_logs[0].count("loss"), 1u);
  EXPECT_EQ(rec->test_end_logs[0].count("val_loss"), 0u);
  ASSERT_EQ(rec->epoch_logs.size(), 2u);
  for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"}) EXPECT_EQ(rec->epoch_logs[1].count(k), 1u) << k;
  EXPECT_DOUBLE_EQ(rec->epoch_logs[1].at("val_loss"), rec->test_end_logs[1].at("loss"));
  EXPECT_EQ(rec->model, model.get());
  EXPECT_EQ(rec->params.epochs, 2);
  EXPECT_EQ(rec->params.steps, 2);
  EXPECT_EQ(rec->params.verbose, 0);
}

// Keras 3: on_train_batch_begin/end call on_batch_begin/end unless overridden.
TEST(CallbackList, OlderBatchHookNamesStillRunInFit) {
  struct Old : train::Callback {
    int begins = 0, ends = 0;
    void on_batch_begin(int) override { ++begins; }
    void on_batch_end(int, const train::Logs& logs) override { ends += logs.count("loss") ? 1 : 0; }
  };
  Data d = small_data(10);
  auto model = small_model();
  auto old = std::make_shared<Old>();
  model->fit(d.x, d.y, {.batch_size = 4, .epochs = 2, .callbacks = {old}, .verbose = 0});
  EXPECT_EQ(old->begins, 6);
  EXPECT_EQ(old->ends, 6);
}

TEST(CallbackList, EvaluateAndPredictCallTheirHooks) {
  Data d = small_data(10);
  auto model = small_model();
  auto rec = std::make_shared<Recorder>();
  model->evaluate(d.x, d.y, train::EvaluateOptions{.batch_size = 8, .callbacks = {rec}});
  EXPECT_EQ(rec->calls, (std::vector<std::string>{"test_begin", "test_batch_begin 0", "test_batch_end 0 loss", "test_batch_begin 1",
                                                  "test_batch_end 1 loss", "test_end"}));
  rec->calls.clear();
  Tensor p = model->predict_outputs(d.x, train::PredictOptions{.batch_size = 6, .callbacks = {rec}})[0];
  EXPECT_EQ(p.dim(0), 10);
  EXPECT_EQ(rec->calls, (std::vector<std::string>{"predict_begin", "predict_batch_begin 0", "predict_batch_end 0",
                                                  "predict_batch_begin 1", "predict_batch_end 1", "predict_end"}));
}

TEST(CallbackList, AddsHistoryAndProgbarOnlyWhenMissing) {
  auto model = small_model();
  train::CallbackList plain({}, /*add_history=*/true, /*add_progbar=*/true, model.get(), train::CallbackParams{1, 3, 5});
  ASSERT_EQ(plain.callbacks().size(), 2u);
  ASSERT_TRUE(plain.history() && plain.progbar());
  EXPECT_EQ(plain.callbacks()[0], plain.history());  // Keras appends History, then ProgbarLogger
  EXPECT_EQ(plain.callbacks()[1], plain.progbar());
  EXPECT_EQ(plain.progbar()->model, model.get());
  EXPECT_EQ(plain.progbar()->params.epochs, 3);
  EXPECT_EQ(plain.progbar()->params.steps, 5);

  auto history = std::make_shared<train::History>();
  auto bar = std::make_shared<train::ProgbarLogger>();
  auto rec = std::make_shared<Recorder>();
  train::CallbackList given({bar, rec, history}, true, true);
  EXPECT_EQ(given.callbacks().size(), 3u);
  EXPECT_EQ(given.history(), history);
  EXPECT_EQ(given.progbar(), bar);
  given.set_model(model.get());
  EXPECT_EQ(rec->model, model.get());
  EXPECT_EQ(train::CallbackList({}, false, false).callbacks().size(), 0u);
  ef::testing::expect_error([] { train::CallbackList bad({nullptr}); }, {"CallbackList", "null callback"});
}

TEST(CallbackList, FitReturnsTheHistoryItFilled) {
  Data d = small_data(12), v = small_data(4, 5);
  auto model = small_model();
  auto given = std::make_shared<train::History>();
  train::History h = model->fit(d.x, d.y, {.batch_size = 4, .epochs = 3, .validation_data = std::make_pair(v.x, v.y),
                                           .callbacks = {given}, .verbose = 0});
  EXPECT_EQ(h.epoch, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(h.history, given->history);
  EXPECT_EQ(h.epoch, given->epoch);
  for (const char* k : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    ASSERT_EQ(h.history.count(k), 1u) << k;
    EXPECT_EQ(h.history.at(k).size(), 3u) << k;
  }
  // The last epoch's loss is what evaluate-free training logged: a value, finite and positive.
  EXPECT_GT(h.history.at("loss").back(), 0.0);
  // As Keras: a History given to a second fit starts its epochs again and keeps its values.
  model->fit(d.x, d.y, {.batch_size = 4, .epochs = 1, .callbacks = {given}, .verbose = 0});
  EXPECT_EQ(given->epoch, (std::vector<int>{0}));
  EXPECT_EQ(given->history.at("loss").size(), 4u);
  // initial_epoch: the epochs run, numbered as Keras numbers them.
  train::History resumed = model->fit(d.x, d.y, {.batch_size = 4, .epochs = 3, .initial_epoch = 1, .verbose = 0});
  EXPECT_EQ(resumed.epoch, (std::vector<int>{1, 2}));
  EXPECT_EQ(resumed.history.at("loss").size(), 2u);
}

TEST(ProgbarLogger, WritesThroughTheProgressSink) {
  Data d = small_data(8), v = small_data(4, 5);
  auto model = small_model();
  ef::testing::CaptureStdout out;
  std::string text;
  {
    CaptureProgress progress;
    model->fit(d.x, d.y, {.batch_size = 4, .epochs = 2, .validation_data = std::make_pair(v.x, v.y), .verbose = 1});
    text = progress.text();
  }
  EXPECT_EQ(out.text(), "");  // nothing went to stdout
  EXPECT_EQ(text.rfind("Epoch 1/2\n2/2 [==============================] - ", 0), 0u) << text;
  EXPECT_NE(text.find("\nEpoch 2/2\n2/2 [==============================] - "), std::string::npos) << text;
  EXPECT_EQ(count_of(text, "Epoch "), 2u) << text;
  EXPECT_EQ(count_of(text, "\n"), 4u) << text;  // a sink is no terminal: one line per epoch, no redraws
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  // Keras' order: the training values, then the validation's in the same order.
  std::size_t loss = text.find(" - loss: "), accuracy = text.find(" - accuracy: "), val_loss = text.find(" - val_loss: "),
              val_accuracy = text.find(" - val_accuracy: ");
  ASSERT_NE(val_accuracy, std::string::npos) << text;
  EXPECT_LT(loss, accuracy);
  EXPECT_LT(accuracy, val_loss);
  EXPECT_LT(val_loss, val_accuracy);
  EXPECT_LT(val_accuracy, text.find('\n', text.find("2/2")));  // the validation joins the epoch's line
}

TEST(ProgbarLogger, VerboseTwoPrintsALinePerEpochWithoutTheBar) {
  Data d = small_data(8);
  auto model = small_model();
  CaptureProgress progress;
  model->fit(d.x, d.y, {.batch_size = 4, .epochs = 2, .verbose = 2});
  EXPECT_EQ(count_of(progress.text(), "Epoch "), 2u) << progress.text();
  EXPECT_EQ(count_of(progress.text(), "2/2 - "), 2u) << progress.text();
  EXPECT_EQ(progress.text().find('['), std::string::npos) << progress.text();
}

TEST(ProgbarLogger, VerboseZeroIsSilent) {
  Data d = small_data(8), v = small_data(4, 5);
  auto model = small_model();
  ef::testing::CaptureStdout out;
  {
    CaptureProgress progress;
    model->fit(d.x, d.y, {.batch_size = 4, .epochs = 2, .validation_data = std::make_pair(v.x, v.y), .verbose = 0});
    model->evaluate(d.x, d.y, 4, /*verbose=*/0);
    model->predict(d.x, 4);
    EXPECT_EQ(progress.text(), "");
  }
  // A ProgbarLogger given to a silent fit stays silent (verbose comes from fit's params).
  {
    CaptureProgress progress;
    model->fit(d.x, d.y, {.batch_size = 4, .epochs = 1, .callbacks = {std::make_shared<train::ProgbarLogger>()}, .verbose = 0});
    EXPECT_EQ(progress.text(), "");
  }
  EXPECT_EQ(out.text(), "");
}

TEST(ProgbarLogger, AGivenOneIsTheOnlyBar) {
  Data d = small_data(8);
  auto model = small_model();
  CaptureProgress progress;
  model->fit(d.x, d.y, {.batch_size = 4, .epochs = 1, .callbacks = {std::make_shared<train::ProgbarLogger>()}, .verbose = 1});
  EXPECT_EQ(count_of(progress.text(), "Epoch 1/1\n"), 1u) << progress.text();
  EXPECT_EQ(count_of(progress.text(), "2/2 ["), 1u) << progress.text();
}

TEST(ProgbarLogger, EvaluateAndPredictPrintTheirOwnLine) {
  Data d = small_data(8);
  auto model = small_model();
  CaptureProgress progress;
  train::Logs logs = model->evaluate(d.x, d.y, 4, /*verbose=*/1);
  EXPECT_EQ(progress.text().rfind("2/2 [==============================] - ", 0), 0u) << progress.text();
  EXPECT_NE(progress.text().find(" - loss: "), std::string::npos) << progress.text();
  EXPECT_EQ(count_of(progress.text(), "\n"), 1u) << progress.text();
  char loss[32];
  std::snprintf(loss, sizeof loss, "loss: %.4f", logs.at("loss"));
  EXPECT_NE(progress.text().find(loss), std::string::npos) << progress.text();
  std::string before = progress.text();
  model->predict_outputs(d.x, train::PredictOptions{.batch_size = 3, .verbose = 2});
  EXPECT_EQ(progress.text().substr(before.size()).rfind("3/3 - ", 0), 0u) << progress.text();
}

// ---------------------------------------------------------------- a strategy the loop consults
namespace {

// One process playing rank `rank` of `world`: no collectives (the reductions are identities),
// every consultation counted.
class FakeStrategy : public train::DistributionStrategy {
 public:
  FakeStrategy(int rank, int world) : rank_(rank), world_(world) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  std::vector<Tensor> reduce_gradients(const std::vector<Tensor>& g, const Tensor&) override {
    ++reduce_calls;
    return g;
  }
  std::pair<Tensor, Tensor> global_mean(const Tensor& mean, const Tensor& count) override { return {mean, count}; }
  Tensor gather_rows(const Tensor& t) override { return t; }
  void on_fit_begin(train::Model&) override { ++fit_begins; }
  void on_epoch_end(train::Model&) override { ++epoch_ends; }
  void on_fit_error(const std::exception& e) override { errors.push_back(e.what()); }
  int reduce_calls = 0, fit_begins = 0, epoch_ends = 0;
  std::vector<std::string> errors;

 private:
  int rank_, world_;
};

}  // namespace

TEST(DistributionStrategy, TheFitLoopConsultsIt) {
  Data d = small_data(16), v = small_data(4, 5);
  auto alone = small_model();
  auto model = small_model();
  model->set_weights(weight_values(*alone));  // copies: the same start, no shared storage
  auto strategy = std::make_shared<FakeStrategy>(0, 1);
  model->set_distribution(strategy);
  // The epoch hook runs after validation and before the callbacks see the epoch.
  std::vector<int> ends_seen;
  auto look = std::make_shared<train::LambdaCallback>(nullptr, [&](int, const train::Logs&) { ends_seen.push_back(strategy->epoch_ends); });
  train::FitOptions o{.batch_size = 4, .epochs = 3, .validation_data = std::make_pair(v.x, v.y), .shuffle = false, .verbose = 0};
  train::History h0 = alone->fit(d.x, d.y, o);
  o.callbacks = {look};
  train::History h1 = model->fit(d.x, d.y, o);
  EXPECT_EQ(strategy->fit_begins, 1);
  EXPECT_EQ(strategy->epoch_ends, 3);
  EXPECT_EQ(ends_seen, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(strategy->reduce_calls, 1);  // inside the train step: once, at its one trace
  EXPECT_EQ(model->tracing_count(), 1);
  // A world of one changes nothing: the same weights and logs, bit for bit.
  std::vector<Tensor> a = weight_values(*alone), b = weight_values(*model);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_vector<float>(), b[i].to_vector<float>()) << i;
  EXPECT_EQ(h0.history, h1.history);
}

TEST(DistributionStrategy, OnlyRankZeroPrintsAndEachRankTrainsOnItsShare) {
  Data d = small_data(16);
  auto model = small_model();
  auto strategy = std::make_shared<FakeStrategy>(1, 2);
  model->set_distribution(strategy);
  auto rec = std::make_shared<Recorder>();
  CaptureProgress progress;
  model->fit(d.x, d.y, {.batch_size = 4, .epochs = 1, .shuffle = false, .callbacks = {rec}, .verbose = 1});
  model->evaluate(d.x, d.y, 4, /*verbose=*/1);
  EXPECT_EQ(progress.text(), "");  // rank 1 prints nothing
  EXPECT_EQ(std::count(rec->calls.begin(), rec->calls.end(), "train_batch_end 3 loss"), 1);  // every global batch
  EXPECT_EQ(rec->params.verbose, 0);
  EXPECT_EQ(strategy->local_rows(0, 5), (std::pair<std::int64_t, std::int64_t>{3, 5}));
  EXPECT_EQ(strategy->local_rows(15, 16), (std::pair<std::int64_t, std::int64_t>{16, 16}));
}

TEST(DistributionStrategy, AnErrorInFitReachesItThenPropagates) {
  Data d = small_data(8);
  auto model = small_model();
  auto strategy = std::make_shared<FakeStrategy>(0, 1);
  model->set_distribution(strategy);
  auto boom = std::make_shared<train::LambdaCallback>(nullptr, nullptr, nullptr,
                                                      [](int batch, const train::Logs&) {
                                                        if (batch == 1) fail("test", "a callback fails on purpose");
                                                      });
  ef::testing::expect_error([&] { model->fit(d.x, d.y, {.batch_size = 4, .epochs = 1, .callbacks = {boom}, .verbose = 0}); },
                            {"a callback fails on purpose"});
  ASSERT_EQ(strategy->errors.size(), 1u);
  EXPECT_NE(strategy->errors[0].find("a callback fails on purpose"), std::string::npos);
}

TEST(DistributionStrategy, FitOnAnUnbuiltModelBuildsItBeforeTheStrategyStarts) {
  Data d = small_data(8);
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(2, "softmax");
  model->compile(std::make_shared<optim::SGD>(0.1), "sparse_categorical_crossentropy");
  struct Check : FakeStrategy {
    Check() : FakeStrategy(0, 1) {}
    bool built_at_begin = false;
    void on_fit_begin(train::Model& m) override { built_at_begin = m.built() && !m.weights().empty(); }
  };
  auto strategy = std::make_shared<Check>();
  model->set_distribution(strategy);
  model->fit(d.x, d.y, {.batch_size = 4, .epochs = 1, .verbose = 0});
  EXPECT_TRUE(strategy->built_at_begin);
}
