// Attention forward + backward (issue 18): the fused op vs the naive softmax(q k^T) v
// composition, q, k, v [1, 4, seq, 64] float32, gradients of sum(out * w) for q, k, v.
// PyTorch's scaled_dot_product_attention on the same shapes: bench/peers/attention_torch.py.
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>

namespace {

void run(benchmark::State& state, bool fused) {
  ef::set_num_threads(static_cast<int>(state.range(1)));
  ef::sync_thread_budget();
  const std::int64_t s = state.range(0), h = 4, d = 64;
  ef::Tensor q = ef::random::normal({1, h, s, d}), k = ef::random::normal({1, h, s, d}), v = ef::random::normal({1, h, s, d});
  ef::Tensor w = ef::random::normal({1, h, s, d});
  const bool causal = state.range(2) != 0;
  const bool backward = state.range(3) != 0;
  auto step = [&] {
    ef::GradientTape tape;
    tape.watch(std::vector<ef::Tensor>{q, k, v});
    ef::Tensor y;
    if (fused) {
      ef::nn::AttentionOptions o;
      o.causal = causal;
      y = ef::nn::scaled_dot_product_attention(q, k, v, o);
    } else {
      ef::Tensor scores = ef::matmul(q, k, false, true) * (1.0 / 8.0);
      if (causal) {
        ef::Tensor c = ef::greater_equal(ef::reshape(ef::arange(s), {s, 1}), ef::reshape(ef::arange(s), {1, s}));
        scores = ef::where(c, scores, ef::scalar_like(scores, -1e9));
      }
      y = ef::matmul(ef::softmax(scores, -1), v);
    }
    if (!backward) return std::vector<ef::Tensor>{y};
    return tape.gradient(ef::sum(y * w), std::vector<ef::Tensor>{q, k, v});
  };
  for (auto _ : state) benchmark::DoNotOptimize(step());
  // Useful work: 2 products forward, 4 backward (+1 recomputation for the fused op, not counted).
  double flops = (backward ? 6.0 : 2.0) * 2.0 * static_cast<double>(h * s * s * d) * (causal ? 0.5 : 1.0);
  state.counters["GFLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_AttentionFused(benchmark::State& state) { run(state, true); }
void BM_AttentionNaive(benchmark::State& state) { run(state, false); }

}  // namespace

// Args: seq, threads, causal, backward (0: forward only).
#define EF_ATTENTION_ARGS                                                                              \
  ArgNames({"seq", "threads", "causal", "backward"})                                                   \
      ->Args({256, 1, 0, 1})->Args({1024, 1, 0, 1})->Args({4096, 1, 0, 1})->Args({1024, 1, 1, 1})      \
      ->Args({4096, 1, 1, 1})->Args({1024, 2, 0, 1})->Args({4096, 2, 0, 1})->Args({1024, 1, 0, 0})     \
      ->Args({4096, 1, 0, 0})->Args({1024, 2, 1, 1})->Args({4096, 2, 1, 1})->Args({1024, 2, 0, 0})     \
      ->Args({4096, 2, 0, 0})->Unit(benchmark::kMillisecond)->UseRealTime()
BENCHMARK(BM_AttentionFused)->EF_ATTENTION_ARGS;
BENCHMARK(BM_AttentionNaive)->EF_ATTENTION_ARGS;
