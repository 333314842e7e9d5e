// Gradient of the MLP 784-512-512-10 loss at batch 128: forward alone, forward + backward
// eagerly, and forward + backward traced into one graph; 1 and 2 threads.
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>

namespace {

struct Mlp {
  ef::Variable w1{ef::random::normal({784, 512}, 0.0, 0.05, ef::DType::float32, 1), "w1"};
  ef::Variable b1{ef::zeros({512}), "b1"};
  ef::Variable w2{ef::random::normal({512, 512}, 0.0, 0.05, ef::DType::float32, 2), "w2"};
  ef::Variable b2{ef::zeros({512}), "b2"};
  ef::Variable w3{ef::random::normal({512, 10}, 0.0, 0.05, ef::DType::float32, 3), "w3"};
  ef::Variable b3{ef::zeros({10}), "b3"};
  std::vector<ef::Variable> vars() const { return {w1, b1, w2, b2, w3, b3}; }
  ef::Tensor loss(const ef::Tensor& x, const ef::Tensor& labels) const {
    ef::Tensor h = ef::relu(ef::matmul(x, w1) + ef::Tensor(b1));
    h = ef::relu(ef::matmul(h, w2) + ef::Tensor(b2));
    ef::Tensor logits = ef::matmul(h, w3) + ef::Tensor(b3);
    return -ef::mean(ef::sum(ef::log_softmax(logits) * labels, {-1}));
  }
  std::vector<ef::Tensor> gradients(const ef::Tensor& x, const ef::Tensor& labels) const {
    ef::GradientTape tape;
    ef::Tensor l = loss(x, labels);
    return tape.gradient(l, vars());
  }
};

struct Batch {
  ef::Tensor x = ef::random::uniform({128, 784}, 0.0, 1.0, ef::DType::float32, 4);
  ef::Tensor labels = ef::one_hot(ef::cast(ef::random::uniform({128}, 0.0, 10.0, ef::DType::float32, 5), ef::DType::int64), 10);
};

void BM_MlpForwardEager(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  Mlp m;
  Batch b;
  for (auto _ : state) benchmark::DoNotOptimize(m.loss(b.x, b.labels));
}
BENCHMARK(BM_MlpForwardEager)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_MlpForwardTraced(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  Mlp m;
  Batch b;
  auto f = ef::function([&](const ef::Tensor& x, const ef::Tensor& y) { return m.loss(x, y); });
  f(b.x, b.labels);
  for (auto _ : state) benchmark::DoNotOptimize(f(b.x, b.labels));
}
BENCHMARK(BM_MlpForwardTraced)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_MlpGradientEager(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  Mlp m;
  Batch b;
  for (auto _ : state) benchmark::DoNotOptimize(m.gradients(b.x, b.labels));
}
BENCHMARK(BM_MlpGradientEager)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

void BM_MlpGradientTraced(benchmark::State& state) {
  ef::set_num_threads(static_cast<int>(state.range(0)));
  Mlp m;
  Batch b;
  auto f = ef::function([&](const ef::Tensor& x, const ef::Tensor& y) { return m.gradients(x, y); });
  f(b.x, b.labels);
  for (auto _ : state) benchmark::DoNotOptimize(f(b.x, b.labels));
}
BENCHMARK(BM_MlpGradientTraced)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond);

}  // namespace
