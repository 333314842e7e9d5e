// Checkpoints of optimizers whose learning rate follows a schedule: the schedule's settings are
// recorded and the step restored, so a restored run takes the same steps as the one that
// went on; another schedule (or a constant rate) is a mismatch named in the error.
#include <functional>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

// A user's schedule: known to checkpoints by its class name.
class InverseTime : public optim::LearningRateSchedule {
 public:
  Tensor operator()(const Tensor& step) const override { return scalar(0.05f) / (step + scalar(1.0f)); }
};

using MakeOptimizer = std::function<std::shared_ptr<optim::Optimizer>()>;

std::shared_ptr<train::Sequential> mlp() {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(4, "tanh");
  model->add<nn::Dense>(1);
  model->build(Shape{kDynamic, 3});
  return model;
}

void steps(train::Sequential& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y, int n) {
  for (int i = 0; i < n; ++i) {
    GradientTape tape;
    Tensor loss = mean(square(model(x) - y));
    std::vector<Variable> vars = model.trainable_weights();
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  }
}

std::vector<std::vector<float>> values_of(const nn::Layer& layer) {
  std::vector<std::vector<float>> out;
  for (const auto& v : layer.weights()) out.push_back(v.value().to_vector<float>());
  return out;
}

std::string save_after_steps(const MakeOptimizer& make, const std::string& name, int n) {
  random::set_seed(7);
  auto model = mlp();
  auto opt = make();
  Tensor x = random::normal({16, 3}), y = random::normal({16, 1});
  steps(*model, *opt, x, y, n);
  std::string path = (ef::testing::fresh_temp_dir("ckpt_schedule_" + name) / "ckpt.safetensors").string();
  train::Checkpoint ckpt;
  ckpt.track("model", *model).track("optimizer", *opt);
  ckpt.save(path);
  return path;
}

void expect_resumes_exactly(const MakeOptimizer& make, const std::string& name) {
  SCOPED_TRACE(name);
  random::set_seed(7);
  auto model = mlp();
  auto opt = make();
  Tensor x = random::normal({16, 3}), y = random::normal({16, 1});
  steps(*model, *opt, x, y, 3);
  std::string path = (ef::testing::fresh_temp_dir("ckpt_schedule_" + name) / "ckpt.safetensors").string();
  train::Checkpoint ckpt;
  ckpt.track("model", *model).track("optimizer", *opt);
  ckpt.save(path);
  double rate_at_save = opt->learning_rate();
  steps(*model, *opt, x, y, 2);

  auto model2 = mlp();
  auto opt2 = make();
  train::Checkpoint ckpt2;
  ckpt2.track("model", *model2).track("optimizer", *opt2);
  ckpt2.restore(path);
  EXPECT_EQ(Tensor(opt2->iterations()).item<std::int64_t>(), 3);
  EXPECT_DOUBLE_EQ(opt2->learning_rate(), rate_at_save);
  steps(*model2, *opt2, x, y, 2);
  EXPECT_EQ(values_of(*model2), values_of(*model));
  EXPECT_DOUBLE_EQ(opt2->learning_rate(), opt->learning_rate());
}

}  // namespace

TEST(CheckpointSchedule, EveryScheduleKindSavesAndResumes) {
  expect_resumes_exactly([] { return std::make_shared<optim::Adam>(optim::CosineDecay(0.1, 100)); }, "adam_cosine");
  expect_resumes_exactly([] { return std::make_shared<optim::Adam>(optim::CosineDecay(0.1, 4, 0.1)); }, "cosine_past_end");
  expect_resumes_exactly([] { return std::make_shared<optim::SGD>(optim::ExponentialDecay(0.1, 2, 0.5), 0.9); },
                         "sgd_exponential");
  expect_resumes_exactly([] { return std::make_shared<optim::RMSprop>(optim::ExponentialDecay(0.01, 2, 0.5, true)); },
                         "rmsprop_staircase");
  expect_resumes_exactly([] { return std::make_shared<optim::AdamW>(InverseTime()); }, "adamw_user_schedule");
  expect_resumes_exactly([] { return std::make_shared<optim::Adam>(0.01); }, "adam_constant");
}

TEST(CheckpointSchedule, AnotherScheduleOrAConstantRateIsAMismatch) {
  MakeOptimizer cos100 = [] { return std::make_shared<optim::Adam>(optim::CosineDecay(0.1, 100)); };
  std::string path = save_after_steps(cos100, "mismatch", 2);
  auto restore_into = [&](std::shared_ptr<optim::Optimizer> opt) {
    auto model = mlp();
    train::Checkpoint ckpt;
    ckpt.track("model", *model).track("optimizer", *opt);
    ckpt.restore(path);
  };
  expect_error([&] { restore_into(std::make_shared<optim::Adam>(optim::CosineDecay(0.1, 50))); },
               {"CosineDecay(initial=0.1, decay_steps=100, alpha=0)", "decay_steps=50", "nothing was loaded"});
  expect_error([&] { restore_into(std::make_shared<optim::Adam>(optim::ExponentialDecay(0.1, 100, 0.5))); },
               {"ExponentialDecay(", "CosineDecay("});
  expect_error([&] { restore_into(std::make_shared<optim::Adam>(0.1)); }, {"CosineDecay(", "constant rate"});
  std::string constant = save_after_steps([] { return std::make_shared<optim::Adam>(0.1); }, "constant", 2);
  path = constant;
  expect_error([&] { restore_into(cos100()); }, {"constant learning rate", "CosineDecay("});
}

// Files written before schedules were recorded hold the unused constant rate, 0: they restore.
TEST(CheckpointSchedule, OldFilesWithAZeroRateRestoreIntoAScheduledOptimizer) {
  MakeOptimizer make = [] { return std::make_shared<optim::Adam>(optim::CosineDecay(0.1, 100)); };
  std::string path = save_after_steps(make, "old_file", 3);
  io::TensorFile file = io::load_safetensors(path);
  file.tensors.push_back({"optimizer/learning_rate", scalar(0.0f)});
  file.metadata.erase("optimizer/learning_rate_schedule");
  file.metadata.erase("checksum");
  io::save_safetensors(path, file.tensors, file.metadata);
  auto model = mlp();
  auto opt = make();
  train::Checkpoint ckpt;
  ckpt.track("model", *model).track("optimizer", *opt);
  ckpt.restore(path);
  EXPECT_EQ(Tensor(opt->iterations()).item<std::int64_t>(), 3);
  EXPECT_GT(opt->learning_rate(), 0.09);
}
