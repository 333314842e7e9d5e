// LSTM(256) train step (issue 18): batch 64 x 100 steps, 256 input features; y = LSTM(256,
// return_sequences) of x, loss = mean(y^2), gradients of the kernel, recurrent kernel and bias,
// SGD update; one traced function. BM_LstmTrainStep/fused runs the layer on the fused oneDNN op
// (lstm forward + backward primitives), /scan on the ef::scan path (allow_fused =
// false). BM_GruTrainStep/fused: the same with GRU(256). The peers (Keras/TF, PyTorch) run the
// same steps in bench/peers/lstm_peers.py (--cell gru).
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>

namespace {

constexpr std::int64_t kBatch = 64, kSteps = 100, kInput = 256, kUnits = 256;

template <class Cell>
void run(benchmark::State& state, bool fused) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  ef::sync_thread_budget();
  ef::random::set_seed(0);
  ef::nn::RNNOptions o;
  o.return_sequences = true;
  o.allow_fused = fused;
  Cell lstm(kUnits, o);
  ef::Tensor x = ef::random::normal({kBatch, kSteps, kInput});
  lstm(x);
  std::vector<ef::Variable> ws = lstm.trainable_weights();
  auto step = ef::function([&](const ef::Tensor& x) {
    ef::GradientTape tape;
    ef::Tensor y = lstm(x);
    ef::Tensor loss = ef::mean(ef::square(y));
    std::vector<ef::Tensor> g = tape.gradient(loss, ws);
    for (std::size_t i = 0; i < ws.size(); ++i) ws[i].assign_sub(g[i] * 0.01f);
    return loss;
  });
  step(x);  // trace
  for (auto _ : state) benchmark::DoNotOptimize(step(x));
}

void BM_LstmTrainStep_fused(benchmark::State& state) { run<ef::nn::LSTM>(state, true); }
void BM_LstmTrainStep_scan(benchmark::State& state) { run<ef::nn::LSTM>(state, false); }
// The same step with GRU(256) (Keras' reset_after=True, oneDNN's linear-before-reset GRU).
void BM_GruTrainStep_fused(benchmark::State& state) { run<ef::nn::GRU>(state, true); }

}  // namespace

BENCHMARK(BM_LstmTrainStep_fused)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GruTrainStep_fused)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LstmTrainStep_scan)->ArgNames({"threads"})->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
