// Keras resets every metric of model.metrics when an epoch starts and when evaluate (or a
// validation pass) starts: a custom train_step's own trackers, listed by an overridden
// metrics(), log per-epoch values, not running means over the whole fit.
#include "test_util.h"

using namespace ef;

namespace {

// Its tracker averages the value of `phase`, which a callback sets to the epoch number (from 1):
// with resets each epoch logs exactly its own number.
class TrackerModel : public train::Sequential {
 public:
  using Sequential::Sequential;
  std::shared_ptr<train::Mean> tracker = std::make_shared<train::Mean>("phase_mean");
  Variable phase{scalar(0.0f), "phase", /*trainable=*/false};

  train::StepLogs train_step(const train::StepData& data) override {
    GradientTape tape;
    Tensor loss = mean(square((*this)(data.x[0], true) - data.y[0]));
    std::vector<Variable> vars = trainable_weights();
    optimizer()->apply_gradients(tape.gradient(loss, vars), vars);
    tracker->update_state(reshape(Tensor(phase), Shape{1}));
    return {{"loss", loss}, {"phase_mean", tracker->result()}};
  }
  train::StepLogs test_step(const train::StepData& data) override {
    tracker->update_state(reshape(Tensor(phase), Shape{1}));
    return {{"phase_mean", tracker->result()}};
  }
  std::vector<std::shared_ptr<train::Metric>> metrics() const override {
    auto out = Sequential::metrics();
    out.push_back(tracker);
    return out;
  }
};

struct SetPhase : train::Callback {
  explicit SetPhase(Variable v) : phase(std::move(v)) {}
  Variable phase;
  void on_epoch_begin(int epoch) override { phase.assign(scalar(static_cast<float>(epoch + 1))); }
};

std::shared_ptr<TrackerModel> tracker_model(bool run_eagerly) {
  auto model = std::make_shared<TrackerModel>();
  model->add<nn::Dense>(1);
  model->compile(std::make_shared<optim::SGD>(0.01), "mse", {}, run_eagerly);
  return model;
}

}  // namespace

TEST(MetricsReset, CustomTrainStepTrackersResetEachEpoch) {
  for (bool eager : {false, true}) {
    random::set_seed(1);
    auto model = tracker_model(eager);
    Tensor x = random::normal({20, 3}), y = random::normal({20, 1});
    train::FitOptions o;
    o.epochs = 3;
    o.batch_size = 4;
    o.verbose = 0;
    o.callbacks = {std::make_shared<SetPhase>(model->phase)};
    // Validation runs before on_epoch_end, in the epoch's phase.
    o.validation_data = train::ValidationData(x, y);
    train::History h = model->fit(x, y, o);
    ASSERT_EQ(h.history["phase_mean"].size(), 3u);
    for (int e = 0; e < 3; ++e) {
      EXPECT_DOUBLE_EQ(h.history["phase_mean"][e], e + 1.0) << "epoch " << e << (eager ? " (eager)" : "");
      // The validation pass starts from a reset tracker too: only its own batches count.
      EXPECT_DOUBLE_EQ(h.history["val_phase_mean"][e], e + 1.0) << "epoch " << e << (eager ? " (eager)" : "");
    }
  }
}

TEST(MetricsReset, EvaluateStartsFromResetTrackers) {
  auto model = tracker_model(false);
  Tensor x = random::normal({8, 3}), y = random::normal({8, 1});
  model->phase.assign(scalar(5.0f));
  EXPECT_DOUBLE_EQ(model->evaluate(x, y, 4).at("phase_mean"), 5.0);
  model->phase.assign(scalar(7.0f));
  EXPECT_DOUBLE_EQ(model->evaluate(x, y, 4).at("phase_mean"), 7.0);
  model->phase.assign(scalar(9.0f));
  EXPECT_DOUBLE_EQ(model->test_on_batch(x, y).at("phase_mean"), 9.0);
}
