// Not a Google Benchmark: one Keras-style fit per process, timed, so that a driver
// (bench/busy_machine.sh) can vary OMP_NUM_THREADS and the machine's load between runs.
//
//   ef_busy_fit small    MLP 2-64-64-1, 10,000 samples, batch 64, 20 epochs, Adam, mse
//   ef_busy_fit mnist    MLP 784-512-512-10 on the 10,000 MNIST test digits, batch 128, 2 epochs
// Prints "<model> <seconds of fit> <final loss> <threads>".
#include <eagerflow/eagerflow.h>

#include <chrono>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "small";
  ef::random::set_seed(3);
  ef::train::Sequential model;
  ef::Tensor x, y;
  ef::train::FitOptions options{.verbose = 0};
  if (!std::strcmp(which, "small")) {
    x = ef::random::uniform({10000, 2}, -1.0, 1.0);
    y = ef::sum(x * x, {1}, /*keepdims=*/true);
    model.add<ef::nn::Dense>(64, "relu");
    model.add<ef::nn::Dense>(64, "relu");
    model.add<ef::nn::Dense>(1);
    model.compile(std::make_shared<ef::optim::Adam>(1e-3), "mse");
    options.batch_size = 64;
    options.epochs = 20;
  } else if (!std::strcmp(which, "mnist")) {
    auto dir = ef::data::find_mnist();
    ef::data::Digits d = dir ? ef::data::load_mnist_test(*dir) : ef::data::synthetic_digits(10000, 7);
    x = d.images;
    y = d.labels;
    model.add<ef::nn::Flatten>();
    model.add<ef::nn::Dense>(512, "relu");
    model.add<ef::nn::Dense>(512, "relu");
    model.add<ef::nn::Dense>(10);
    model.compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(true));
    options.batch_size = 128;
    options.epochs = 2;
  } else {
    std::fprintf(stderr, "usage: ef_busy_fit small|mnist\n");
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  ef::train::History h = model.fit(x, y, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s %.4f %.6g %d\n", which, seconds, h.history.at("loss").back(), ef::num_threads());
  return 0;
}
