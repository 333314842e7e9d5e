#pragma once
// Data parallelism (Horovod's DistributedOptimizer + broadcast; TF's MultiWorkerMirrored
// strategy; PyTorch DDP): the same program on every rank of an MPI job, each rank on its own
// slice of every global batch, gradients averaged across ranks.
//
//   auto dp = std::make_shared<ef::dist::DataParallel>();
//   model.set_distribution(dp);
//   model.fit(x, y, {.batch_size = 128});   // 128 = the global batch, split among the ranks
//
// fit with a strategy (the loop consults it: eagerflow/train/distribution.h):
// - starts by broadcasting rank 0's weights, optimizer state and random generator (seed and
//   counter), so every rank starts equal and draws the same shuffle;
// - each rank takes its contiguous share of every global batch (sizes differ by at most one;
//   a rank may get none of a last batch smaller than the world);
// - inside the one traced train step, the gradients of the local (mean) loss are weighted by
//   the local example count and summed across ranks with all-reduces fused into buckets of
//   at most bucket_bytes (as DDP), then divided by the global count: the mean over the
//   global batch, exactly what one process computes for it;
// - loss and metrics are global: the loss tracker adds every rank's loss and count, metrics
//   are updated with every rank's targets and predictions (gathered): every rank logs the
//   same numbers, so callbacks decide alike (EarlyStopping stops every rank together); only
//   rank 0 prints;
// - BatchNormalization normalizes with each rank's own batch statistics (Keras' default,
//   synchronized=False); its moving statistics (every non-trainable float weight) are
//   averaged across ranks at the end of each epoch, before the callbacks, so every rank
//   evaluates and saves the same model;
// - evaluate and predict split each batch among the ranks the same way and gather;
// - files (save_weights, ModelCheckpoint, Checkpoint) are written by rank 0 only;
// - an error on any rank ends the whole job (MPI_Abort, exit code 1): the other ranks would
//   otherwise wait forever in their next collective.
// Every rank must run the same fit (same data size, batch size, callbacks).
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"
#include "eagerflow/train/distribution.h"
#include "eagerflow/variable.h"

namespace ef::optim {
class Optimizer;
}
namespace ef::train {
class Model;
}  // namespace ef::train

namespace ef::dist {

// What Model consults (Model::set_distribution): the interface lives in train, which knows no
// implementation; DataParallel is one.
using Strategy = train::DistributionStrategy;

struct DataParallelOptions {
  // Gradient buckets (DDP's bucket_cap_mb is 25 MB): fewer, larger all-reduces.
  std::int64_t bucket_bytes = 16 << 20;
  // An error in a distributed fit ends every rank (MPI_Abort); false: rethrown (the other
  // ranks then hang in their next collective unless the program ends them).
  bool abort_on_error = true;
  // Average the non-trainable weights (BatchNormalization's moving statistics) across ranks
  // at the end of each epoch.
  bool average_non_trainable = true;
};

class DataParallel : public Strategy {
 public:
  // Starts MPI (ef::dist::init) if nobody has.
  explicit DataParallel(DataParallelOptions options = {});
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  const DataParallelOptions& options() const { return options_; }

  std::vector<Tensor> reduce_gradients(const std::vector<Tensor>& gradients, const Tensor& local_count) override;
  std::pair<Tensor, Tensor> global_mean(const Tensor& local_mean, const Tensor& local_count) override;
  Tensor gather_rows(const Tensor& t) override;
  // fit's start: rank 0's state to every rank (broadcast_model).
  void on_fit_begin(train::Model& model) override;
  // Averages the non-trainable float weights across ranks (average_non_trainable).
  void on_epoch_end(train::Model& model) override;
  // Ends every rank of the job (abort_on_error), printing the error first.
  void on_fit_error(const std::exception& error) override;

  // For custom loops (Horovod style): the mean of each gradient over the ranks, bucketed.
  // Undefined gradients stay undefined.
  std::vector<Tensor> average_gradients(const std::vector<Tensor>& gradients);
  // root's values into every rank's variables.
  void broadcast_variables(const std::vector<Variable>& variables, int root = 0);
  // root's weights, optimizer state (its variables made so far) and random generator.
  void broadcast_model(train::Model& model, int root = 0);

 private:
  DataParallelOptions options_;
  int rank_ = 0, world_ = 1;
};

// Horovod's DistributedOptimizer: apply_gradients averages the gradients across ranks first.
class DistributedOptimizer {
 public:
  DistributedOptimizer(std::shared_ptr<optim::Optimizer> optimizer, std::shared_ptr<DataParallel> strategy = nullptr);
  void apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  const std::shared_ptr<optim::Optimizer>& optimizer() const { return optimizer_; }
  const std::shared_ptr<DataParallel>& strategy() const { return strategy_; }

 private:
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::shared_ptr<DataParallel> strategy_;
};

}  // namespace ef::dist
