#include "eagerflow/train/callbacks.h"

#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/train/model.h"

namespace ef::train {

EarlyStopping::EarlyStopping(std::string monitor, int patience, double min_delta, std::string mode)
    : monitor_(std::move(monitor)), patience_(patience), min_delta_(std::fabs(min_delta)) {
  if (mode == "auto") maximize_ = monitor_.find("acc") != std::string::npos;
  else if (mode == "max") maximize_ = true;
  else if (mode == "min") maximize_ = false;
  else fail("EarlyStopping", "mode must be auto, min or max, got '" + mode + "'");
}

void EarlyStopping::on_train_begin() {
  best_ = maximize_ ? -INFINITY : INFINITY;
  wait_ = 0;
  stopped_epoch_ = -1;
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  auto it = logs.find(monitor_);
  if (it == logs.end()) {
    std::string known;
    for (const auto& [k, v] : logs) known += (known.empty() ? "" : ", ") + k;
    fail("EarlyStopping", "monitored value '" + monitor_ + "' is not in the logs (" + known + ")");
  }
  double v = it->second;
  bool improved = maximize_ ? v > best_ + min_delta_ : v < best_ - min_delta_;
  if (improved) {
    best_ = v;
    wait_ = 0;
    return;
  }
  if (++wait_ > patience_ && model) {
    model->stop_training = true;
    stopped_epoch_ = epoch;
  }
}

void CSVLogger::on_train_begin() {
  out_.open(path_, append_ ? std::ios::app : std::ios::trunc);
  if (!out_) fail("CSVLogger", "cannot open '" + path_ + "' for writing");
  header_written_ = append_;
}

void CSVLogger::on_epoch_end(int epoch, const Logs& logs) {
  if (!header_written_) {
    out_ << "epoch";
    for (const auto& [k, v] : logs) out_ << "," << k;
    out_ << "\n";
    header_written_ = true;
  }
  out_ << epoch;
  for (const auto& [k, v] : logs) out_ << "," << v;
  out_ << "\n" << std::flush;
}

void LearningRateScheduler::on_epoch_begin(int epoch) {
  if (!model || !model->optimizer()) fail("LearningRateScheduler", "the model has no optimizer (compile it first)");
  model->optimizer()->set_learning_rate(schedule_(epoch, model->optimizer()->learning_rate()));
}

}  // namespace ef::train
