// ef::function benchmarks: cached-call overhead, seed layer replay vs eager, trace time.
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>

namespace {

class SeedLayer : public ef::nn::Layer {
 public:
  ef::Tensor call(const ef::Tensor& x) override { return dense_(x); }
  ef::nn::Dense dense_{32};
};

// Everything a cached call costs beyond the math: signature match, replay, output handle.
void BM_CachedCallOverhead(benchmark::State& state) {
  auto f = ef::function([](const ef::Tensor& a, const ef::Tensor& b) { return a + b; });
  ef::Tensor a = ef::scalar(1.0f), b = ef::scalar(2.0f);
  f(a, b);
  for (auto _ : state) benchmark::DoNotOptimize(f(a, b));
}
BENCHMARK(BM_CachedCallOverhead);

// The same add run eagerly, for the ratio.
void BM_EagerAddForComparison(benchmark::State& state) {
  ef::Tensor a = ef::scalar(1.0f), b = ef::scalar(2.0f);
  for (auto _ : state) benchmark::DoNotOptimize(ef::add(a, b));
}
BENCHMARK(BM_EagerAddForComparison);

void BM_SeedLayerReplay(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  SeedLayer layer;
  auto f = ef::function(layer);
  ef::Tensor x = ef::random::uniform({60, 28, 28});
  f(x);
  for (auto _ : state) benchmark::DoNotOptimize(f(x));
}
BENCHMARK(BM_SeedLayerReplay)->ArgName("threads")->Arg(1)->Arg(2);

void BM_SeedLayerEager(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  SeedLayer layer;
  ef::Tensor x = ef::random::uniform({60, 28, 28});
  layer(x);
  for (auto _ : state) benchmark::DoNotOptimize(layer(x));
}
BENCHMARK(BM_SeedLayerEager)->ArgName("threads")->Arg(1)->Arg(2);

// Batch-1 inference of the MLP 784-512-512-10 (ReLU), traced: three Dense layers on one row,
// 2.7 MB of weights read per call (kernels/cpu/gemv.cpp), plus the call's own overhead.
std::shared_ptr<ef::train::Sequential> inference_mlp() {
  auto m = std::make_shared<ef::train::Sequential>();
  m->add<ef::nn::Flatten>();
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(10);
  return m;
}

// The model traced once, then called on `batch` rows: bytes of weights read per second, and
// the multiply-adds' rate (bench/peers/inference_peers.py sets batch 128 beside onnxruntime).
void run_inference(benchmark::State& state, std::int64_t batch) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  ef::random::set_seed(1);
  auto model = inference_mlp();
  auto f = ef::function([&](const ef::Tensor& x) { return (*model)(x); });
  ef::Tensor x = ef::random::uniform({batch, 28, 28});
  f(x);
  for (auto _ : state) benchmark::DoNotOptimize(f(x));
  constexpr std::int64_t kWeights = 784 * 512 + 512 * 512 + 512 * 10;
  state.SetBytesProcessed(state.iterations() * 4 * kWeights);
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * static_cast<double>(batch * kWeights),
                                                benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_MlpInferenceBatch1(benchmark::State& state) { run_inference(state, 1); }
BENCHMARK(BM_MlpInferenceBatch1)->ArgName("threads")->Arg(1)->Arg(2);

void BM_MlpInferenceBatch128(benchmark::State& state) { run_inference(state, 128); }
BENCHMARK(BM_MlpInferenceBatch128)->ArgName("threads")->Arg(1)->Arg(2);

// Time to trace the seed layer (layer already built; a fresh function each iteration).
void BM_TraceSeedLayer(benchmark::State& state) {
  SeedLayer layer;
  ef::Tensor x = ef::random::uniform({60, 28, 28});
  layer(x);
  for (auto _ : state) {
    auto f = ef::function(layer);
    benchmark::DoNotOptimize(f.get_concrete_function(ef::TensorSpec{ef::DType::float32, {60, 28, 28}}));
  }
}
BENCHMARK(BM_TraceSeedLayer);

}  // namespace

namespace {
using Chain = ef::Tensor (*)(const ef::Tensor&, const ef::Tensor&);

// A chain of 6 elementwise ops on 1M floats, bound by scalar libm exp/tanh.
ef::Tensor transcendental_chain(const ef::Tensor& x, const ef::Tensor& y) {
  return ef::tanh(ef::sigmoid(ef::exp(x) * 0.5f - y)) + x;
}
// Cheap, memory-bound ops: here one pass over memory instead of five pays.
ef::Tensor cheap_chain(const ef::Tensor& x, const ef::Tensor& y) { return ef::relu(x * 0.5f + y) * 2.0f - x; }

// Eager: one pass over memory per op. Fused replay: one blocked loop.
template <Chain chain, bool traced>
void BM_Chain(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  ef::Tensor x = ef::random::normal({1 << 20}), y = ef::random::normal({1 << 20});
  auto f = ef::function(chain);
  if (traced) f(x, y);
  for (auto _ : state) benchmark::DoNotOptimize(traced ? f(x, y) : chain(x, y));
}
BENCHMARK_TEMPLATE(BM_Chain, transcendental_chain, false)->Name("BM_ElementwiseChainEager")->ArgName("threads")->Arg(1)->Arg(2);
BENCHMARK_TEMPLATE(BM_Chain, transcendental_chain, true)->Name("BM_ElementwiseChainFusedReplay")->ArgName("threads")->Arg(1)->Arg(2);
BENCHMARK_TEMPLATE(BM_Chain, cheap_chain, false)->Name("BM_CheapChainEager")->ArgName("threads")->Arg(1)->Arg(2);
BENCHMARK_TEMPLATE(BM_Chain, cheap_chain, true)->Name("BM_CheapChainFusedReplay")->ArgName("threads")->Arg(1)->Arg(2);

// Lookup cost with many cached signatures: the hash index keeps it flat.
void BM_CachedCallAmong50Traces(benchmark::State& state) {
  ef::set_log_level(ef::LogLevel::off);  // 50 retraces would warn
  auto f = ef::function([](const ef::Tensor& a) { return a + a; });
  for (int i = 1; i <= 50; ++i) f(ef::zeros({i}));
  ef::Tensor last = ef::zeros({50});
  for (auto _ : state) benchmark::DoNotOptimize(f(last));
  ef::set_log_level(ef::LogLevel::warning);
}
BENCHMARK(BM_CachedCallAmong50Traces);

}  // namespace
