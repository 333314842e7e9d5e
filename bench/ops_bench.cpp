// Eager op benchmarks: matmul (ours vs oneDNN called directly), elementwise add, per-op overhead.
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>
#include <oneapi/dnnl/dnnl.hpp>

namespace {

void set_threads(benchmark::State& state, int arg_index) {
  ef::set_num_threads(static_cast<int>(state.range(arg_index)));
  ef::sync_thread_budget();
}

// Args: batch, m, k, n, threads (batch = 0 means a plain 2-D matmul).
void BM_MatMul(benchmark::State& state) {
  set_threads(state, 4);
  std::int64_t batch = state.range(0), m = state.range(1), k = state.range(2), n = state.range(3);
  ef::Tensor a = batch ? ef::random::uniform({batch, m, k}) : ef::random::uniform({m, k});
  ef::Tensor b = ef::random::uniform({k, n});
  for (auto _ : state) benchmark::DoNotOptimize(ef::matmul(a, b));
  double flops = 2.0 * static_cast<double>(std::max<std::int64_t>(batch, 1) * m * k * n);
  state.counters["GFLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MatMul)->ArgNames({"batch", "m", "k", "n", "threads"})
    ->Args({60, 28, 28, 32, 1})->Args({60, 28, 28, 32, 2})
    ->Args({0, 128, 784, 512, 1})->Args({0, 128, 784, 512, 2})
    ->Args({0, 128, 512, 512, 2})->Args({0, 128, 512, 10, 2})
    ->Args({0, 1024, 1024, 1024, 1})->Args({0, 1024, 1024, 1024, 2})
    // A few rows (batch-1 inference): kernels/cpu/gemv.cpp, against oneDNN below.
    ->Args({0, 1, 784, 512, 1})->Args({0, 2, 784, 512, 1})->Args({0, 4, 784, 512, 1})->Args({0, 8, 784, 512, 1})
    ->Args({0, 16, 784, 512, 1})->Args({0, 1, 784, 512, 2})->Args({0, 8, 784, 512, 2});

// Args: m, k, n, transpose_a, transpose_b, threads: the products a training step's gradients
// run (dX = dY W^T stores B as [N,K], dW = X^T dY stores A as [K,M]), batch-1 attention's
// q K^T, and a predict batch of 300 rows.
void BM_MatMulStored(benchmark::State& state) {
  set_threads(state, 5);
  std::int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  bool ta = state.range(3) != 0, tb = state.range(4) != 0;
  ef::Tensor a = ta ? ef::random::uniform({k, m}) : ef::random::uniform({m, k});
  ef::Tensor b = tb ? ef::random::uniform({n, k}) : ef::random::uniform({k, n});
  for (auto _ : state) benchmark::DoNotOptimize(ef::matmul(a, b, ta, tb));
  double flops = 2.0 * static_cast<double>(m * k * n);
  state.counters["GFLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
}
BENCHMARK(BM_MatMulStored)
    ->ArgNames({"m", "k", "n", "ta", "tb", "threads"})
    ->Args({128, 512, 784, 0, 1, 1})
    ->Args({784, 128, 512, 1, 0, 1})
    ->Args({1, 784, 512, 0, 1, 1})
    ->Args({300, 97, 64, 0, 0, 1})
    ->Args({128, 512, 784, 0, 1, 2})
    ->Args({784, 128, 512, 1, 0, 2});

// The same GEMM through oneDNN directly, with the primitive and memories created once.
void BM_OneDnnDirect(benchmark::State& state) {
  set_threads(state, 4);
  std::int64_t batch = state.range(0), m = state.range(1), k = state.range(2), n = state.range(3);
  std::int64_t rows = std::max<std::int64_t>(batch, 1) * m;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::memory::desc a_md({rows, k}, dt::f32, tag::ab), b_md({k, n}, dt::f32, tag::ab), c_md({rows, n}, dt::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), eng);
  dnnl::matmul mm(pd);
  dnnl::memory a(a_md, eng), b(b_md, eng), c(c_md, eng);
  std::fill_n(static_cast<float*>(a.get_data_handle()), rows * k, 0.5f);
  std::fill_n(static_cast<float*>(b.get_data_handle()), k * n, 0.25f);
  for (auto _ : state) {
    mm.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    s.wait();
  }
  double flops = 2.0 * static_cast<double>(rows * k * n);
  state.counters["GFLOPS"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}
BENCHMARK(BM_OneDnnDirect)->ArgNames({"batch", "m", "k", "n", "threads"})
    ->Args({60, 28, 28, 32, 1})->Args({60, 28, 28, 32, 2})
    ->Args({0, 128, 784, 512, 1})->Args({0, 128, 784, 512, 2})
    ->Args({0, 1, 784, 512, 1})->Args({0, 2, 784, 512, 1})->Args({0, 4, 784, 512, 1})->Args({0, 8, 784, 512, 1})
    ->Args({0, 16, 784, 512, 1})->Args({0, 1, 784, 512, 2})->Args({0, 8, 784, 512, 2});

void BM_Add1M(benchmark::State& state) {
  set_threads(state, 0);
  ef::Tensor a = ef::random::uniform({1 << 20}), b = ef::random::uniform({1 << 20});
  for (auto _ : state) benchmark::DoNotOptimize(ef::add(a, b));
  state.SetBytesProcessed(state.iterations() * 3 * 4 * (1 << 20));
}
BENCHMARK(BM_Add1M)->ArgName("threads")->Arg(1)->Arg(2);

// Per-op overhead: an eager add of two 1-element tensors (the cost of everything but math).
void BM_EagerAddOverhead(benchmark::State& state) {
  ef::Tensor a = ef::scalar(1.0f), b = ef::scalar(2.0f);
  for (auto _ : state) benchmark::DoNotOptimize(ef::add(a, b));
}
BENCHMARK(BM_EagerAddOverhead);

}  // namespace
