#pragma once
// What fit, evaluate and predict consult to train one model across several processes
// (Model::set_distribution). The loops stay the same: they ask the strategy for this rank's
// share of each global batch, to reduce the gradients inside the traced train step, for the
// global loss and metrics, to make every rank's state equal when fit starts and after each
// epoch, which rank prints, and what an error does. ef::dist::DataParallel implements it
// (eagerflow/dist/data_parallel.h); train knows no implementation.
#include <cstdint>
#include <exception>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::train {

class Model;

class DistributionStrategy {
 public:
  virtual ~DistributionStrategy() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // Rank 0 prints the progress bar (the other ranks fit with verbose 0).
  bool is_root() const { return rank() == 0; }
  // This rank's share [begin, end) of the global batch's rows [begin, end): contiguous, sizes
  // differing by at most one (a rank may get none of a batch smaller than the world).
  std::pair<std::int64_t, std::int64_t> local_rows(std::int64_t begin, std::int64_t end) const;
  // In the train step: the gradients of this rank's mean loss over `local_count` examples,
  // made the gradients of the mean over every rank's examples.
  virtual std::vector<Tensor> reduce_gradients(const std::vector<Tensor>& gradients, const Tensor& local_count) = 0;
  // (the mean over every rank's examples, their count) from this rank's mean and count.
  virtual std::pair<Tensor, Tensor> global_mean(const Tensor& local_mean, const Tensor& local_count) = 0;
  // Every rank's rows, in rank order.
  virtual Tensor gather_rows(const Tensor& t) = 0;
  // When fit starts, the model built: make every rank's training state the same.
  virtual void on_fit_begin(Model& model) {}
  // At the end of each epoch, after validation and before the callbacks see the model.
  virtual void on_epoch_end(Model& model) {}
  // An exception is leaving fit on this rank; when this returns, it propagates.
  virtual void on_fit_error(const std::exception& error) {}
};

// Whether this process writes files (save_weights, save_model, ModelCheckpoint,
// Checkpoint::save): true unless a distribution backend says otherwise (ef::dist: only rank 0
// of a running job of several processes), so the ranks do not write the same file at once.
bool is_file_writer();
// For a distribution backend: the rule is_file_writer asks (nullptr: every process writes).
void set_file_writer_rule(bool (*rule)());

}  // namespace ef::train
