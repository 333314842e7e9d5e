// Data-parallel training on Open MPI: the MNIST MLP of train_mnist on several processes.
//
//   mpirun -np 2 ./build/release/examples/mnist_data_parallel [--data DIR] [--epochs N] [--no-compare]
//   (as root: mpirun --allow-run-as-root ...; alone, without mpirun, it is a world of one)
//
// Every rank runs this same program. fit's batch_size is the global batch: each rank trains on
// its share (64 of 128 on two ranks); gradients are averaged across ranks inside the one
// traced train step; rank 0 prints the progress bar, whose numbers are global. Then (unless
// --no-compare) every rank also trains the same model alone, as one process would, and rank 0
// shows both accuracies: data parallelism changes where the work runs, not the result.
#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>
#include <eagerflow/eagerflow.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace {

std::shared_ptr<ef::train::Sequential> make_mlp() {
  ef::random::set_seed(42);  // the same initial weights as the one-process run (rank 0's are broadcast anyway)
  auto mlp = std::make_shared<ef::train::Sequential>("mlp");
  mlp->add<ef::nn::Flatten>();
  mlp->add<ef::nn::Dense>(256, "relu");
  mlp->add<ef::nn::Dense>(10);
  mlp->build(ef::Shape{ef::kDynamic, 28, 28});
  mlp->compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(/*from_logits=*/true),
               {"accuracy"});
  return mlp;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir;
  int epochs = 2;
  bool compare = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--data") && i + 1 < argc) data_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-compare")) compare = false;
    else {
      std::cerr << "usage: mnist_data_parallel [--data DIR] [--epochs N] [--no-compare]\n";
      return 2;
    }
  }
  try {
    auto dp = std::make_shared<ef::dist::DataParallel>();
    const bool root = dp->is_root();
    auto dir = ef::data::find_mnist(data_dir);
    ef::data::Digits d = dir ? ef::data::load_mnist_test(*dir) : ef::data::synthetic_digits(10000, 7);
    if (root)
      std::cout << (dir ? "MNIST from " + *dir : std::string("MNIST files not found: 10,000 generated digits")) << "; "
                << dp->world_size() << " rank(s), global batch 128 (" << 128 / dp->world_size() << " per rank)\n";
    ef::Tensor x = ef::slice(d.images, {0}, {8000}), y = ef::slice(d.labels, {0}, {8000});
    auto validation = std::make_pair(ef::slice(d.images, {8000}, {10000}), ef::slice(d.labels, {8000}, {10000}));

    auto mlp = make_mlp();
    mlp->set_distribution(dp);
    auto t0 = std::chrono::steady_clock::now();
    auto h = mlp->fit(x, y, {.batch_size = 128, .epochs = epochs, .validation_data = validation});
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double acc = h.history.at("val_accuracy").back();
    if (root)
      std::cout << "data parallel on " << dp->world_size() << " rank(s): val_accuracy " << acc << " in " << seconds
                << " s, train step traced " << mlp->tracing_count() << " time(s)\n";
    if (compare) {
      auto alone = make_mlp();
      auto ha = alone->fit(x, y, {.batch_size = 128, .epochs = epochs, .validation_data = validation, .verbose = 0});
      double acc_alone = ha.history.at("val_accuracy").back();
      double dw = 0;
      for (std::size_t i = 0; i < alone->weights().size(); ++i)
        dw = std::max(dw, static_cast<double>(ef::max(ef::abs(alone->weights()[i].value() - mlp->weights()[i].value())).item<float>()));
      if (root)
        std::cout << "one process, same global batches: val_accuracy " << acc_alone << " (data parallel " << acc
                  << "); largest weight difference " << dw << "\n";
    }
  } catch (const ef::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
