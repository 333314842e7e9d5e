// A 2-rank job in which rank 1 fails while rank 0 waits for it, for tests/distributed/expect_abort.cmake:
//   fit_fault throw     rank 1's callback throws an ef::Error mid-fit: fit ends the job (MPI_Abort)
//   fit_fault kill      rank 1 kills itself (SIGKILL) mid-fit: mpirun ends the other ranks
//   fit_fault exit      rank 1's callback calls exit(1) mid-fit (rank 0 waits in the next all-reduce)
//   fit_fault uncaught  rank 1 throws out of main (std::terminate) while rank 0 waits in an all-reduce
//   fit_fault return    rank 1 returns 1 from main while rank 0 waits in an all-reduce
//   fit_fault clean     both ranks fit a few batches and return 0: the job must exit 0
// Each failure must end the job with a non-zero exit within seconds, not hang.
#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>
#include <eagerflow/eagerflow.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>

namespace {

int fit(const std::string& mode) {
  using namespace ef;
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
  o.epochs = mode == "clean" ? 1 : 1000;  // far longer than the test waits
  o.verbose = 0;
  o.callbacks.push_back(std::make_shared<train::LambdaCallback>(nullptr, nullptr, nullptr, [&](int batch, const train::Logs&) {
    if (dp->rank() != 1 || batch != 5) return;
    if (mode == "kill") std::raise(SIGKILL);
    if (mode == "exit") std::exit(1);
    if (mode == "throw") fail("fit_fault", "rank 1 fails on purpose at batch 5");
  }));
  model.fit(x, y, o);
  if (mode == "clean") return 0;
  std::cerr << "fit_fault: the fit ended normally, which it must not\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "throw";
  if (mode != "uncaught" && mode != "return") return fit(mode);
  ef::dist::init();
  if (ef::dist::rank() == 1) {
    if (mode == "uncaught") throw std::runtime_error("rank 1 throws out of main on purpose");
    return 1;
  }
  ef::dist::all_reduce(ef::ones({4}));  // rank 1 never comes
  std::cerr << "fit_fault: the all-reduce ended, which it must not\n";
  return 0;
}
