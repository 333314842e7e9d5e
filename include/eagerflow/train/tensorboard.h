#pragma once
// Keras' TensorBoard callback: event files that TensorBoard shows.
//
//   model.fit(x, y, {.epochs = 5, .callbacks = {std::make_shared<ef::train::TensorBoard>("logs", 1)}});
//   // then: tensorboard --logdir logs
//
// As Keras 3: runs `<log_dir>/train` and `<log_dir>/validation`; at each epoch's end the
// scalars `epoch_<metric>` (validation values, without their `val_` prefix, go to the
// validation run) and `epoch_learning_rate`; with update_freq "batch" or N, `batch_<metric>`
// every N batches (the step counts batches over the whole fit, from 1); every histogram_freq
// epochs a histogram of each weight (`<weight path>/histogram`). With write_graph, the
// traced train step's graph (the graph dashboard) and, per trace, its reason as text
// (`train_step/trace_reasons`): the promise that every trace has a reason, in TensorBoard.
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/train/callbacks.h"

namespace ef {
class ConcreteFunction;
}
namespace ef::summary {
class SummaryWriter;
}

namespace ef::train {

// "epoch", "batch", or every N batches.
struct UpdateFreq {
  UpdateFreq(const char* s) : UpdateFreq(std::string(s)) {}  // NOLINT: implicit, as Keras' update_freq="batch"
  UpdateFreq(const std::string& s);                          // NOLINT
  UpdateFreq(int batches);                                   // NOLINT
  int batches = 0;  // 0: epoch only
};

class TensorBoard : public Callback {
 public:
  explicit TensorBoard(std::string log_dir = "logs", int histogram_freq = 0, bool write_graph = true,
                       UpdateFreq update_freq = "epoch");
  ~TensorBoard() override;
  void on_train_begin() override;
  void on_train_end() override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_batch_begin(int batch) override;
  void on_batch_end(int batch, const Logs& logs) override;

  const std::string& log_dir() const { return log_dir_; }
  // The event files written so far ("" before the first fit).
  std::string train_file() const;
  std::string validation_file() const;

 private:
  void write_new_traces();
  summary::SummaryWriter& validation_writer();
  std::string log_dir_;
  int histogram_freq_;
  bool write_graph_;
  int update_every_;
  std::int64_t global_batch_ = 0;
  std::vector<std::shared_ptr<const ConcreteFunction>> graphs_written_;
  std::unique_ptr<summary::SummaryWriter> train_, validation_;
};

}  // namespace ef::train
