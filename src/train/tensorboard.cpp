#include "eagerflow/train/tensorboard.h"

#include <algorithm>
#include <filesystem>

#include "eagerflow/core/error.h"
#include "eagerflow/function/concrete_function.h"
#include "eagerflow/summary/summary.h"
#include "eagerflow/train/model.h"

namespace ef::train {

UpdateFreq::UpdateFreq(const std::string& s) {
  if (s == "epoch") batches = 0;
  else if (s == "batch") batches = 1;
  else fail("TensorBoard", "update_freq must be \"epoch\", \"batch\" or a number of batches, got \"" + s + "\"");
}

UpdateFreq::UpdateFreq(int n) : batches(n) {
  if (n < 1) fail("TensorBoard", "update_freq must be at least 1 batch, got " + std::to_string(n));
}

TensorBoard::TensorBoard(std::string log_dir, int histogram_freq, bool write_graph, UpdateFreq update_freq)
    : log_dir_(std::move(log_dir)), histogram_freq_(histogram_freq), write_graph_(write_graph), update_every_(update_freq.batches) {
  if (log_dir_.empty()) fail("TensorBoard", "log_dir is empty");
  if (histogram_freq_ < 0) fail("TensorBoard", "histogram_freq must be >= 0, got " + std::to_string(histogram_freq_));
}

TensorBoard::~TensorBoard() = default;

std::string TensorBoard::train_file() const { return train_ ? train_->path() : std::string(); }
std::string TensorBoard::validation_file() const { return validation_ ? validation_->path() : std::string(); }

summary::SummaryWriter& TensorBoard::validation_writer() {
  if (!validation_)
    validation_ = std::make_unique<summary::SummaryWriter>(
        summary::create_file_writer((std::filesystem::path(log_dir_) / "validation").string()));
  return *validation_;
}

void TensorBoard::on_train_begin() {
  // Keras: the batch step starts again at each fit; a fit after the previous one's end writes
  // new event files in the same runs (TensorBoard joins them).
  global_batch_ = 0;
  if (!train_ || train_->closed())
    train_ = std::make_unique<summary::SummaryWriter>(summary::create_file_writer((std::filesystem::path(log_dir_) / "train").string()));
  if (validation_ && validation_->closed()) validation_.reset();
}

void TensorBoard::on_train_end() {
  if (train_) train_->close();
  if (validation_) validation_->close();
}

void TensorBoard::write_new_traces() {
  if (!write_graph_ || !model || !train_) return;
  for (const auto& t : model->train_step_traces()) {
    if (!t.function) continue;
    if (std::find(graphs_written_.begin(), graphs_written_.end(), t.function) != graphs_written_.end()) continue;
    graphs_written_.push_back(t.function);
    train_->write_graph(*t.function, global_batch_);
    auto scope = train_->as_default();
    summary::text("train_step/trace_reasons",
                  "trace " + std::to_string(t.number) + " of `" + t.function->name() + "`: " + t.reason + "  \nsignature: `" +
                      t.signature + "`",
                  std::int64_t{t.number});
  }
}

void TensorBoard::on_batch_begin(int) { ++global_batch_; }

void TensorBoard::on_batch_end(int, const Logs& logs) {
  if (!train_) return;  // used outside fit
  write_new_traces();
  if (update_every_ > 0 && global_batch_ % update_every_ == 0) {
    auto scope = train_->as_default();
    for (const auto& [name, value] : logs) summary::scalar("batch_" + name, value, global_batch_);
  }
}

void TensorBoard::on_epoch_end(int epoch, const Logs& logs) {
  if (!train_) return;
  write_new_traces();
  {
    auto scope = train_->as_default();
    for (const auto& [name, value] : logs)
      if (name.rfind("val_", 0) != 0) summary::scalar("epoch_" + name, value, epoch);
    if (!logs.count("learning_rate") && model && model->optimizer())
      summary::scalar("epoch_learning_rate", model->optimizer()->learning_rate(), epoch);
    if (histogram_freq_ > 0 && epoch % histogram_freq_ == 0 && model)
      for (const auto& w : model->weights()) summary::histogram(w.name() + "/histogram", w.value(), epoch);
  }
  train_->flush();
  bool any_val = std::any_of(logs.begin(), logs.end(), [](const auto& kv) { return kv.first.rfind("val_", 0) == 0; });
  if (any_val) {
    auto& vw = validation_writer();
    auto scope = vw.as_default();
    for (const auto& [name, value] : logs)
      if (name.rfind("val_", 0) == 0) summary::scalar("epoch_" + name.substr(4), value, epoch);
    vw.flush();
  }
}

}  // namespace ef::train
