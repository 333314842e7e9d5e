// One training step (forward, loss, backward, Adam update), traced, batch 128: the MLP
// 784-512-512-10 and the CNN of `make demo`; 1 and 2 threads. Also the time to trace and
// prepare the MLP step (first call: trace, passes, plan, slot creation, first run).
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>

#include <chrono>

namespace {

std::shared_ptr<ef::train::Sequential> mlp() {
  auto m = std::make_shared<ef::train::Sequential>();
  m->add<ef::nn::Flatten>();
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(10);
  return m;
}

std::shared_ptr<ef::train::Sequential> cnn() {
  auto m = std::make_shared<ef::train::Sequential>();
  m->add<ef::nn::Conv2D>(16, ef::Stride2{3, 3}, ef::nn::Conv2DOptions{.activation = "relu"});
  m->add<ef::nn::MaxPool2D>();
  m->add<ef::nn::Conv2D>(32, ef::Stride2{3, 3}, ef::nn::Conv2DOptions{.activation = "relu"});
  m->add<ef::nn::MaxPool2D>();
  m->add<ef::nn::Flatten>();
  m->add<ef::nn::Dense>(10);
  return m;
}

void run_steps(benchmark::State& state, const std::shared_ptr<ef::train::Sequential>& model, const ef::Shape& input) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  ef::random::set_seed(1);
  ef::Tensor x = ef::random::uniform(input);
  ef::Tensor y = ef::cast(ef::random::uniform({input[0]}, 0.0, 10.0), ef::DType::int64);
  model->compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(true));
  model->train_on_batch(x, y);  // trace
  for (auto _ : state) benchmark::DoNotOptimize(model->train_on_batch(x, y));
  state.counters["traces"] = model->tracing_count();
}

void BM_MlpTrainStep(benchmark::State& state) { run_steps(state, mlp(), {128, 28, 28}); }
BENCHMARK(BM_MlpTrainStep)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

void BM_CnnTrainStep(benchmark::State& state) { run_steps(state, cnn(), {128, 28, 28, 1}); }
BENCHMARK(BM_CnnTrainStep)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// Trace + passes + plan of the MLP train step, with its first run (slots made).
void BM_MlpTrainStepFirstCall(benchmark::State& state) {
  ef::set_num_threads(2);
  ef::Tensor x = ef::random::uniform({128, 28, 28});
  ef::Tensor y = ef::cast(ef::random::uniform({128}, 0.0, 10.0), ef::DType::int64);
  for (auto _ : state) {
    state.PauseTiming();
    auto model = mlp();
    model->compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(true));
    state.ResumeTiming();
    model->train_on_batch(x, y);
  }
}
BENCHMARK(BM_MlpTrainStepFirstCall)->Unit(benchmark::kMillisecond)->Iterations(20);

}  // namespace
