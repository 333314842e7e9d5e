// libtorch from C++, next to eagerflow's C++ overhead figures: the eager per-op cost of a
// 1-element add and the seed layer (Linear(28, 32) on [60, 28, 28]) without Python.
// Built and run by compare.py against the torch wheel in the peers' virtualenv.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

template <class F>
double median_us(F f) {
  for (int i = 0; i < 1000; ++i) f();
  std::vector<double> samples;
  for (int r = 0; r < 7; ++r) {
    auto t = std::chrono::steady_clock::now();
    int n = 20000;
    for (int i = 0; i < n; ++i) f();
    samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / n);
  }
  std::sort(samples.begin(), samples.end());
  return samples[3];
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  torch::set_num_threads(threads);
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::tensor(1.0f), b = torch::tensor(2.0f);
  torch::nn::Linear lin(28, 32);
  torch::Tensor x = torch::rand({60, 28, 28});
  double add = median_us([&] { auto c = a + b; });
  double dense = median_us([&] { auto y = lin(x); });
  std::printf("RESULT {\"per-op overhead: eager add of 1-element tensors (us)\": %.4f, "
              "\"seed layer Dense(32) on [60,28,28], eager (us)\": %.4f, \"threads\": %d}\n",
              add, dense, torch::get_num_threads());
}
