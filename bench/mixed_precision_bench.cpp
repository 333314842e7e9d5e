// Issue 21, bfloat16: the MLP 784-512-512-10 and CNN conv16-pool-conv32-pool-dense10 train
// steps (traced, Adam, batch 128) under the float32 and mixed_bfloat16 policies, side by side
// (run with --benchmark_enable_random_interleaving). On a CPU without native bfloat16 the
// mixed policy converts in software around every op (docs/mixed_precision.md).
// bench/peers/mixed_precision.py runs these next to Keras' mixed_bfloat16 and torch.autocast.
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>
#include <omp.h>

namespace {

std::shared_ptr<ef::train::Sequential> model_of(int kind) {
  auto m = std::make_shared<ef::train::Sequential>();
  if (kind == 0) {
    m->add<ef::nn::Flatten>();
    m->add<ef::nn::Dense>(512, "relu");
    m->add<ef::nn::Dense>(512, "relu");
    m->add<ef::nn::Dense>(10);
  } else {
    m->add<ef::nn::Conv2D>(16, ef::Stride2{3, 3}, ef::nn::Conv2DOptions{.activation = "relu"});
    m->add<ef::nn::MaxPool2D>();
    m->add<ef::nn::Conv2D>(32, ef::Stride2{3, 3}, ef::nn::Conv2DOptions{.activation = "relu"});
    m->add<ef::nn::MaxPool2D>();
    m->add<ef::nn::Flatten>();
    m->add<ef::nn::Dense>(10);
  }
  return m;
}

// model: 0 MLP, 1 CNN; policy: 0 float32, 1 mixed_bfloat16.
void BM_MixedPrecisionStep(benchmark::State& state) {
  int threads = static_cast<int>(state.range(2));
  ef::set_num_threads(threads);
  omp_set_num_threads(threads);
  if (ef::num_threads() != threads || omp_get_max_threads() != threads) state.SkipWithError("thread count not applied");
  int kind = static_cast<int>(state.range(0));
  bool mixed = state.range(1) == 1;
  ef::nn::set_global_policy(mixed ? "mixed_bfloat16" : "float32");
  auto model = model_of(kind);
  ef::nn::set_global_policy("float32");
  ef::random::set_seed(1);
  ef::Tensor x = ef::random::uniform(kind == 0 ? ef::Shape{128, 28, 28} : ef::Shape{128, 28, 28, 1});
  ef::Tensor y = ef::cast(ef::random::uniform({128}, 0.0, 10.0), ef::DType::int64);
  model->compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(true));
  model->train_on_batch(x, y);  // trace
  for (auto _ : state) benchmark::DoNotOptimize(model->train_on_batch(x, y));
  state.counters["traces"] = model->tracing_count();
  state.counters["threads"] = ef::num_threads();
}
BENCHMARK(BM_MixedPrecisionStep)
    ->ArgNames({"model", "mixed", "threads"})
    ->ArgsProduct({{0, 1}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
