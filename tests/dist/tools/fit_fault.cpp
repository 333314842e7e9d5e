// A data-parallel fit in which rank 1 fails at its 5th batch, for tests/dist/expect_abort.cmake:
//   fit_fault throw   rank 1's callback throws an ef::Error: fit ends the job (MPI_Abort)
//   fit_fault kill    rank 1 kills itself (SIGKILL): mpirun ends the other ranks
// Either way the job must end with a non-zero exit within seconds, not hang.
#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>
#include <eagerflow/eagerflow.h>

#include <csignal>
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  using namespace ef;
  std::string mode = argc > 1 ? argv[1] : "throw";
  auto dp = std::make_shared<dist::DataParallel>();
  Tensor x = random::stateless_normal({4096, 16}, 1, 0.0, 1.0, DType::float32);
  Tensor y = cast(argmax(x, 1), DType::int32);
  train::Sequential model;
  model.add<nn::Dense>(32, nn::ActivationFn("relu"));
  model.add<nn::Dense>(16);
  model.compile(std::make_shared<optim::SGD>(0.1), train::LossRef("sparse_categorical_crossentropy"));
  model.set_distribution(dp);
  train::FitOptions o;
  o.batch_size = 64;
  o.epochs = 1000;  // far longer than the test waits
  o.verbose = 0;
  o.callbacks.push_back(std::make_shared<train::LambdaCallback>(nullptr, nullptr, nullptr, [&](int batch, const train::Logs&) {
    if (dp->rank() != 1 || batch != 5) return;
    if (mode == "kill") std::raise(SIGKILL);
    fail("fit_fault", "rank 1 fails on purpose at batch 5");
  }));
  model.fit(x, y, o);
  std::cerr << "fit_fault: the fit ended normally, which it must not\n";
  return 0;
}
