// Elementwise math: ef's ops next to the same loops written directly against SLEEF, the
// 15-op chain (eager, traced, one hand-written loop), and broadcasting (bias add vs a
// same-shape add).
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>

#include <vector>

#include "sleef_reference.h"

namespace {

using ef_bench::ReferenceFn;
constexpr std::int64_t kBig = 1 << 22;  // 4M floats

bool has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}

void set_threads(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  ef::sync_thread_budget();
}

ef::Tensor apply(ReferenceFn fn, const ef::Tensor& x) {
  switch (fn) {
    case ReferenceFn::exp: return ef::exp(x);
    case ReferenceFn::log: return ef::log(x);
    case ReferenceFn::tanh: return ef::tanh(x);
    case ReferenceFn::sigmoid: return ef::sigmoid(x);
    case ReferenceFn::gelu: return ef::gelu(x);
    case ReferenceFn::erf: return ef::erf(x);
  }
  return x;
}

template <ReferenceFn fn>
void BM_Unary4M(benchmark::State& state) {
  set_threads(state);
  ef::Tensor x = ef::random::uniform({kBig}, 0.01f, 4.0f);
  for (auto _ : state) benchmark::DoNotOptimize(apply(fn, x));
}

template <ReferenceFn fn>
void BM_SleefLoop4M(benchmark::State& state) {
  if (!has_avx512()) return state.SkipWithError("needs AVX-512");
  ef::Tensor x = ef::random::uniform({kBig}, 0.01f, 4.0f);
  std::vector<float> out(kBig);
  for (auto _ : state) {
    ef_bench::sleef_unary_loop(fn, x.data<float>().data(), out.data(), kBig);
    benchmark::DoNotOptimize(out.data());
  }
}

#define EF_UNARY_BENCH(F)                                                                                  \
  BENCHMARK_TEMPLATE(BM_Unary4M, ReferenceFn::F)->Name("BM_Unary4M/" #F)->ArgName("threads")->Arg(1)->Arg(2); \
  BENCHMARK_TEMPLATE(BM_SleefLoop4M, ReferenceFn::F)->Name("BM_SleefLoop4M/" #F);
EF_UNARY_BENCH(exp)
EF_UNARY_BENCH(log)
EF_UNARY_BENCH(tanh)
EF_UNARY_BENCH(sigmoid)
EF_UNARY_BENCH(gelu)
#undef EF_UNARY_BENCH

// 15 elementwise ops with three tanh (the peers run the same, bench/peers/compare.py).
ef::Tensor chain15(const ef::Tensor& x, const ef::Tensor& y) {
  ef::Tensor t = x * 1.5f + y;
  t = ef::tanh(t);
  t = t * x - y;
  t = ef::tanh(t);
  t = t * 0.5f + x;
  t = ef::maximum(t, y);
  t = t * t - 0.25f;
  t = ef::tanh(t);
  t = t * y + 1.0f;
  return t * x;
}

template <bool traced>
void BM_Chain15(benchmark::State& state) {
  set_threads(state);
  ef::Tensor x = ef::random::normal({kBig}), y = ef::random::normal({kBig});
  auto f = ef::function(chain15);
  if (traced) f(x, y);
  for (auto _ : state) benchmark::DoNotOptimize(traced ? f(x, y) : chain15(x, y));
}
BENCHMARK_TEMPLATE(BM_Chain15, false)->Name("BM_Chain15Eager")->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Chain15, true)->Name("BM_Chain15Traced")->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

void BM_Chain15HandWritten(benchmark::State& state) {
  if (!has_avx512()) return state.SkipWithError("needs AVX-512");
  ef::Tensor x = ef::random::normal({kBig}), y = ef::random::normal({kBig});
  std::vector<float> out(kBig);
  for (auto _ : state) {
    ef_bench::chain15_loop(x.data<float>().data(), y.data<float>().data(), out.data(), kBig);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Chain15HandWritten);

// The seed layer's bias add: a row broadcast, next to an add of two whole tensors.
void BM_BiasAdd(benchmark::State& state) {
  set_threads(state);
  ef::Tensor x = ef::random::uniform({60, 28, 32}), b = ef::random::uniform({32});
  for (auto _ : state) benchmark::DoNotOptimize(x + b);
}
BENCHMARK(BM_BiasAdd)->ArgName("threads")->Arg(1)->Arg(2);
void BM_SameShapeAdd(benchmark::State& state) {
  set_threads(state);
  ef::Tensor x = ef::random::uniform({60, 28, 32}), y = ef::random::uniform({60, 28, 32});
  for (auto _ : state) benchmark::DoNotOptimize(x + y);
}
BENCHMARK(BM_SameShapeAdd)->ArgName("threads")->Arg(1)->Arg(2);
// A column broadcast ([N, 1]: per-row scales, as losses and BatchNorm gradients make).
void BM_ColumnBroadcastMul(benchmark::State& state) {
  ef::set_num_threads(1);
  ef::Tensor x = ef::random::uniform({1680, 32}), s = ef::random::uniform({1680, 1});
  for (auto _ : state) benchmark::DoNotOptimize(x * s);
}
BENCHMARK(BM_ColumnBroadcastMul);

}  // namespace
