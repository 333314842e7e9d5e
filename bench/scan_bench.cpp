// An LSTM cell on ef::scan (issue 18): batch 64, hidden 256, input 256, 100 steps; one traced
// train-step-shaped call: forward scan + gradients of sum(hs) w.r.t. the kernels and bias (a
// reverse scan over the saved per-step values). BM_LstmUnrolled traces the same cell as 100
// copies in one graph, for reference. Reported time is per call; divide by 100 for per step.
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>

namespace {

constexpr std::int64_t kBatch = 64, kHidden = 256, kInput = 256, kSteps = 100;

std::pair<ef::Tensor, ef::Tensor> cell(const ef::Tensor& h, const ef::Tensor& c, const ef::Tensor& x, const ef::Tensor& wx,
                                       const ef::Tensor& wh, const ef::Tensor& b) {
  ef::Tensor z = ef::matmul(x, wx) + ef::matmul(h, wh) + b;
  auto gate = [&](std::int64_t k) { return ef::slice(z, {0, k * kHidden}, {kBatch, (k + 1) * kHidden}); };
  ef::Tensor i = ef::sigmoid(gate(0)), f = ef::sigmoid(gate(1)), g = ef::tanh(gate(2)), o = ef::sigmoid(gate(3));
  ef::Tensor c2 = f * c + i * g;
  return {o * ef::tanh(c2), c2};
}

void run(benchmark::State& state, bool unrolled) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  ef::sync_thread_budget();
  ef::Tensor xs = ef::random::normal({kSteps, kBatch, kInput});
  ef::Tensor wx = ef::random::normal({kInput, 4 * kHidden}, 0.0, 0.05), wh = ef::random::normal({kHidden, 4 * kHidden}, 0.0, 0.05);
  ef::Tensor b = ef::zeros({4 * kHidden});
  auto step = ef::function([&](const ef::Tensor& xs, const ef::Tensor& wx, const ef::Tensor& wh, const ef::Tensor& b) {
    ef::GradientTape tape;
    tape.watch(std::vector<ef::Tensor>{wx, wh, b});
    ef::Tensor h0 = ef::zeros({kBatch, kHidden}), c0 = ef::zeros({kBatch, kHidden});
    ef::Tensor loss;
    if (unrolled) {
      ef::Tensor h = h0, c = c0;
      loss = ef::zeros({});
      for (std::int64_t t = 0; t < kSteps; ++t) {
        ef::Tensor x = ef::reshape(ef::slice(xs, {t}, {t + 1}), {kBatch, kInput});
        std::tie(h, c) = cell(h, c, x, wx, wh, b);
        loss = loss + ef::sum(h);
      }
    } else {
      auto [carry, ys] = ef::scan(
          [&](const std::vector<ef::Tensor>& hc, const std::vector<ef::Tensor>& x) {
            auto [h, c] = cell(hc[0], hc[1], x[0], wx, wh, b);
            return std::pair{std::vector<ef::Tensor>{h, c}, std::vector<ef::Tensor>{h}};
          },
          {h0, c0}, {xs});
      loss = ef::sum(ys[0]);
    }
    return tape.gradient(loss, std::vector<ef::GradientSource>{wx, wh, b});
  });
  step(xs, wx, wh, b);  // trace
  for (auto _ : state) benchmark::DoNotOptimize(step(xs, wx, wh, b));
}

void BM_LstmScan(benchmark::State& state) { run(state, false); }
void BM_LstmUnrolled(benchmark::State& state) { run(state, true); }

}  // namespace

BENCHMARK(BM_LstmScan)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LstmUnrolled)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

namespace {

// Per-step overhead: a cumulative sum of 1000 rows of 16 floats, traced (forward only); the
// time is per 1000 steps (about 0.2-0.35 us per step on the shared 2-core machine).
void BM_ScanSmallSteps(benchmark::State& state) {
  ef::set_num_threads(1);
  ef::sync_thread_budget();
  ef::Tensor xs = ef::random::normal({1000, 16});
  auto f = ef::function([](const ef::Tensor& xs) {
    return ef::scan([](const ef::Tensor& c, const ef::Tensor& x) { return std::pair{c + x, c + x}; }, ef::zeros({16}), xs).second;
  });
  f(xs);
  for (auto _ : state) benchmark::DoNotOptimize(f(xs));
}

}  // namespace

BENCHMARK(BM_ScanSmallSteps)->Unit(benchmark::kMicrosecond);

namespace {
// Eager scan over scalar steps (issue 29): per-step cost of the eager loop, no tape. The
// memory it keeps is measured by ef_growth ("eager scan over 1e6 scalar steps").
void BM_ScanEagerScalarSteps(benchmark::State& state) {
  ef::set_num_threads(1);
  ef::Tensor xs = ef::ones({state.range(0)});
  auto body = [](const std::vector<ef::Tensor>& c, const std::vector<ef::Tensor>& x) {
    ef::Tensor next = c[0] + x[0];
    return std::pair{std::vector<ef::Tensor>{next}, std::vector<ef::Tensor>{next}};
  };
  for (auto _ : state) benchmark::DoNotOptimize(ef::scan(body, {ef::scalar(0.0f)}, {xs}));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
}  // namespace

BENCHMARK(BM_ScanEagerScalarSteps)->ArgNames({"steps"})->Arg(10000)->Unit(benchmark::kMillisecond);
