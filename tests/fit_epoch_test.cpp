// fit's loop adds nothing to its steps: an epoch is the traced train step run on each batch in
// turn (the last, partial one included), its logs the example-weighted means of the batches',
// its shuffle a function of the seed. (bench/train_bench.cpp times the same loop.)
#include "test_util.h"

using namespace ef;
using ef::testing::CaptureStdout;

namespace {

std::shared_ptr<train::Sequential> small_mlp() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Flatten>();
  model->add<nn::Dense>(24, "relu");
  model->add<nn::Dense>(10);
  return model;
}

std::shared_ptr<train::Sequential> compiled(std::uint64_t seed) {
  random::set_seed(seed);
  auto model = small_mlp();
  model->compile(std::make_shared<optim::Adam>(1e-2), train::SparseCategoricalCrossentropy(true), {"accuracy"});
  return model;
}

std::vector<std::vector<float>> weights_of(const train::Model& m) {
  std::vector<std::vector<float>> out;
  for (const auto& v : m.weights()) out.push_back(v.value().to_vector<float>());
  return out;
}

}  // namespace

// 300 examples in batches of 64: four full batches and one of 44. fit (no shuffle) must leave
// the weights bit for bit where the same five batches through train_on_batch leave them, with
// one trace, and report the example-weighted mean of the five batches' loss and accuracy.
TEST(FitEpoch, IsItsStepsOnTheSameBatchesWithThePartialLastOne) {
  data::Digits d = data::synthetic_digits(300, 7);
  auto fitted = compiled(11);
  train::History h;
  {
    CaptureStdout quiet;
    h = fitted->fit(d.images, d.labels, {.batch_size = 64, .epochs = 1, .shuffle = false, .verbose = 0});
  }
  EXPECT_EQ(fitted->tracing_count(), 1) << "the batch of 44 must reuse the step traced for 64";

  auto stepped = compiled(11);
  double loss = 0, accuracy = 0;
  for (std::int64_t b = 0; b < 300; b += 64) {
    std::int64_t e = std::min<std::int64_t>(300, b + 64);
    train::Logs logs = stepped->train_on_batch(slice(d.images, {b}, {e}), slice(d.labels, {b}, {e}));
    loss += logs.at("loss") * static_cast<double>(e - b);
    accuracy += logs.at("accuracy") * static_cast<double>(e - b);
  }
  EXPECT_EQ(stepped->tracing_count(), 1);
  EXPECT_EQ(weights_of(*fitted), weights_of(*stepped));
  ASSERT_EQ(h.history.at("loss").size(), 1u);
  EXPECT_NEAR(h.history.at("loss")[0], loss / 300, 1e-6 * loss / 300);
  EXPECT_NEAR(h.history.at("accuracy")[0], accuracy / 300, 1e-6);  // a float32 mean
}

// The shuffle draws from ef's generator: the same seed gives the same epochs (weights and
// history bit for bit) over several epochs, and the order really changes the result.
TEST(FitEpoch, ShuffleRepeatsWithTheSeedAndChangesTheOrder) {
  data::Digits d = data::synthetic_digits(200, 3);
  auto run = [&](bool shuffle) {
    auto model = compiled(5);
    CaptureStdout quiet;
    train::History h = model->fit(d.images, d.labels, {.batch_size = 48, .epochs = 3, .shuffle = shuffle, .verbose = 0});
    EXPECT_EQ(model->tracing_count(), 1);
    return std::make_pair(weights_of(*model), h.history.at("loss"));
  };
  auto a = run(true), b = run(true), unshuffled = run(false);
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
  EXPECT_NE(a.first, unshuffled.first);
  ASSERT_EQ(a.second.size(), 3u);
  EXPECT_EQ(a.second[0] == unshuffled.second[0], false) << "a shuffled first epoch sees other batches";
}

// A callback reading the logs every batch (a host read per step) sees the same epoch as a
// silent fit: the loop's per-batch work changes no number.
TEST(FitEpoch, PerBatchLogsDoNotChangeTheEpoch) {
  data::Digits d = data::synthetic_digits(150, 2);
  struct Count : train::Callback {
    int batches = 0;
    void on_batch_end(int, const train::Logs& logs) override {
      ++batches;
      EXPECT_TRUE(logs.count("loss") && logs.count("accuracy"));
    }
  };
  auto run = [&](bool with_callback) {
    auto model = compiled(9);
    auto cb = std::make_shared<Count>();
    train::FitOptions o{.batch_size = 32, .epochs = 2, .verbose = 0};
    if (with_callback) o.callbacks.push_back(cb);
    CaptureStdout quiet;
    train::History h = model->fit(d.images, d.labels, o);
    if (with_callback) { EXPECT_EQ(cb->batches, 10); }  // 2 epochs x (4 of 32 + one of 22)
    return std::make_pair(weights_of(*model), h.history);
  };
  auto silent = run(false), logged = run(true);
  EXPECT_EQ(silent.first, logged.first);
  EXPECT_EQ(silent.second, logged.second);
}
