// Transformer block train step (issue 18): width 256, 4 heads (key_dim 64), sequence 256,
// batch 16. Pre-norm block: LayerNormalization(1e-5) -> causal MultiHeadAttention -> residual ->
// LayerNormalization(1e-5) -> Dense(1024, gelu (erf)) -> Dense(256) -> residual; loss
// mean((block(x) - y)^2); Adam(1e-3, 0.9, 0.999, eps 1e-7); one traced train step
// (train_on_batch) per iteration, 1 and 2 threads. BM_TransformerBlockLongSeq: the same
// GPT-style block at sequence 512 and 1024, the batch cut to keep 4,096 tokens a step
// (8 x 512, 4 x 1024), so that the rows differ in attention's share, not in the projections'.
//
// The inputs and weights come from a small integer hash (transformer_value below) that
// bench/peers/transformer_peers.py reproduces in NumPy, so every framework starts from the
// same numbers and the first step's loss must agree (the counter loss0). Counters: median_ms
// (the median of the per-step wall times, what the peer table shows), cpu_per_wall (process
// CPU time / wall time over the timed steps: how many cores really worked).
#include <benchmark/benchmark.h>
#include <eagerflow/core/allocator.h>
#include <eagerflow/eagerflow.h>

#include "bench_threads.h"
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

constexpr std::int64_t kBatch = 16, kSeq = 256, kWidth = 256, kHeads = 4, kHidden = 1024;
constexpr std::int64_t kTokens = kBatch * kSeq;

// Uniform in [-limit, limit) from element index i and a salt: a 32-bit multiplicative hash,
// identical in bench/peers/transformer_peers.py (hashed_uniform).
std::vector<float> transformer_values(std::int64_t n, std::uint64_t salt, double limit) {
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint64_t h = (static_cast<std::uint64_t>(i) * 2654435761ULL + salt * 40503ULL + 12345ULL) & 0xffffffffULL;
    h ^= h >> 16;
    h = (h * 0x45d9f3bULL) & 0xffffffffULL;
    h ^= h >> 16;
    double u = static_cast<double>(h) / 4294967296.0;
    out[static_cast<std::size_t>(i)] = static_cast<float>((2.0 * u - 1.0) * limit);
  }
  return out;
}

ef::Tensor hashed(const ef::Shape& shape, std::uint64_t salt, double limit) {
  return ef::tensor(transformer_values(shape.num_elements(), salt, limit), shape);
}

double glorot(std::int64_t fan_in, std::int64_t fan_out) { return std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)); }

// Pages the kernel had to map (and zero) for the process so far.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

std::shared_ptr<ef::train::Functional> block_model(std::int64_t seq = kSeq) {
  ef::Tensor in = ef::train::Input({seq, kWidth}, ef::DType::float32, "x");
  auto ln1 = std::make_shared<ef::nn::LayerNormalization>(1e-5, "ln1");
  auto mha = std::make_shared<ef::nn::MultiHeadAttention>(kHeads, kWidth / kHeads, ef::nn::MultiHeadAttentionOptions{},
                                                          "attention");
  auto ln2 = std::make_shared<ef::nn::LayerNormalization>(1e-5, "ln2");
  auto up = std::make_shared<ef::nn::Dense>(kHidden, "gelu", true, "up");
  auto down = std::make_shared<ef::nn::Dense>(kWidth, ef::nn::ActivationFn{}, true, "down");
  ef::Tensor h = (*ln1)(in);
  ef::Tensor a = in + (*mha)(h, h, {.use_causal_mask = true});
  ef::Tensor out = a + (*down)((*up)((*ln2)(a)));
  auto model = std::make_shared<ef::train::Functional>(in, out, "transformer_block");
  // Same weights as the peers: kernels (in, out) from the hash, biases zero, LayerNorm 1 / 0.
  const double lim = glorot(kWidth, kWidth), lim_mlp = glorot(kWidth, kHidden);
  const std::int64_t kd = kWidth / kHeads;
  mha->query_kernel().assign(hashed({kWidth, kHeads, kd}, 11, lim));
  mha->key_kernel().assign(hashed({kWidth, kHeads, kd}, 12, lim));
  mha->value_kernel().assign(hashed({kWidth, kHeads, kd}, 13, lim));
  mha->output_kernel().assign(hashed({kHeads, kd, kWidth}, 14, lim));
  up->kernel().assign(hashed({kWidth, kHidden}, 15, lim_mlp));
  down->kernel().assign(hashed({kHidden, kWidth}, 16, lim_mlp));
  return model;
}

void train_steps(benchmark::State& state, int threads, std::int64_t seq) {
  ef_bench::apply_threads(threads);
  auto model = block_model(seq);
  const std::int64_t batch = kTokens / seq;
  ef::Tensor x = hashed({batch, seq, kWidth}, 1, 1.0), y = hashed({batch, seq, kWidth}, 2, 1.0);
  model->compile(std::make_shared<ef::optim::Adam>(1e-3, 0.9, 0.999, 1e-7), ef::train::MeanSquaredError());
  double loss0 = model->train_on_batch(x, y).at("loss");  // traces; the loss before any update
  model->train_on_batch(x, y);                             // warm
  std::vector<double> ms;
  double cpu0 = process_cpu_seconds();
  std::size_t allocs0 = ef::allocator::system_allocations();
  long faults0 = minor_faults();
  auto w0 = std::chrono::steady_clock::now();
  double loss = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    loss = model->train_on_batch(x, y).at("loss");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  std::sort(ms.begin(), ms.end());
  state.counters["median_ms"] = ms.empty() ? 0.0 : ms[ms.size() / 2];
  state.counters["cpu_per_wall"] = wall > 0 ? (process_cpu_seconds() - cpu0) / wall : 0.0;
  // Buffers the allocator's cache could not serve: 0 once the step's sizes are all cached.
  state.counters["system_allocs_per_step"] =
      ms.empty() ? 0.0 : static_cast<double>(ef::allocator::system_allocations() - allocs0) / ms.size();
  state.counters["page_faults_per_step"] = ms.empty() ? 0.0 : static_cast<double>(minor_faults() - faults0) / ms.size();
  state.counters["loss0"] = loss0;
  state.counters["loss"] = loss;
  state.counters["traces"] = model->tracing_count();
}

void BM_TransformerBlockTrainStep(benchmark::State& state) { train_steps(state, static_cast<int>(state.range(0)), kSeq); }
void BM_TransformerBlockLongSeq(benchmark::State& state) {
  train_steps(state, static_cast<int>(state.range(1)), state.range(0));
}

// The same step without the optimizer: the loss and the gradients of every weight, traced
// (the difference to the train step is Adam's share, for the profile in bench/RESULTS.md).
void BM_TransformerBlockGradients(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  ef::sync_thread_budget();
  auto model = block_model();
  std::vector<ef::Variable> ws = model->trainable_weights();
  ef::Tensor x = hashed({kBatch, kSeq, kWidth}, 1, 1.0), y = hashed({kBatch, kSeq, kWidth}, 2, 1.0);
  auto step = ef::function([&](const ef::Tensor& x, const ef::Tensor& y) {
    ef::GradientTape tape;
    ef::Tensor loss = ef::mean(ef::square((*model)(x, true) - y));
    std::vector<ef::Tensor> out = tape.gradient(loss, ws);
    out.push_back(loss);
    return out;
  });
  double loss0 = step(x, y).back().item<float>();
  std::vector<double> ms;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(step(x, y).back().item<float>());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  state.counters["median_ms"] = ms.empty() ? 0.0 : ms[ms.size() / 2];
  state.counters["loss0"] = loss0;
}

}  // namespace

BENCHMARK(BM_TransformerBlockGradients)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TransformerBlockTrainStep)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_TransformerBlockLongSeq)
    ->ArgNames({"seq", "threads"})
    ->ArgsProduct({{512, 1024}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
