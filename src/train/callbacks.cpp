#include "eagerflow/train/callbacks.h"

#include <cmath>
#include <cstdio>

#include "eagerflow/core/error.h"
#include "eagerflow/train/checkpoint.h"
#include "eagerflow/train/model.h"

namespace ef::train {
namespace {

// Keras' mode: "auto" maximizes names with "acc" in them, else minimizes.
bool maximizes(const std::string& monitor, const std::string& mode, const char* who) {
  if (mode == "auto") return monitor.find("acc") != std::string::npos;
  if (mode == "max") return true;
  if (mode == "min") return false;
  fail(who, "mode must be auto, min or max, got '" + mode + "'");
}

double monitored(const Logs& logs, const std::string& monitor, const char* who) {
  auto it = logs.find(monitor);
  if (it != logs.end()) return it->second;
  std::string known;
  for (const auto& [k, v] : logs) known += (known.empty() ? "" : ", ") + k;
  fail(who, "monitored value '" + monitor + "' is not in the logs (" + known + ")");
}

}  // namespace

EarlyStopping::EarlyStopping(std::string monitor, int patience, double min_delta, std::string mode)
    : monitor_(std::move(monitor)), patience_(patience), min_delta_(std::fabs(min_delta)),
      maximize_(maximizes(monitor_, mode, "EarlyStopping")) {}

void EarlyStopping::on_train_begin() {
  best_ = maximize_ ? -INFINITY : INFINITY;
  wait_ = 0;
  stopped_epoch_ = -1;
}

void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  double v = monitored(logs, monitor_, "EarlyStopping");
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

ModelCheckpoint::ModelCheckpoint(std::string filepath, std::string monitor, bool save_best_only, bool save_weights_only,
                                 std::string mode)
    : filepath_(std::move(filepath)), monitor_(std::move(monitor)), save_best_only_(save_best_only),
      save_weights_only_(save_weights_only), maximize_(maximizes(monitor_, mode, "ModelCheckpoint")) {
  if (filepath_.empty()) fail("ModelCheckpoint", "filepath is empty");
  format_path(0, {});  // a malformed pattern fails now, not after an epoch of training
}

void ModelCheckpoint::on_train_begin() { best_ = maximize_ ? -INFINITY : INFINITY; }

std::string ModelCheckpoint::format_path(int epoch, const Logs& logs) const {
  std::string out;
  for (std::size_t i = 0; i < filepath_.size(); ++i) {
    char c = filepath_[i];
    if (c != '{') {
      out += c;
      continue;
    }
    std::size_t close = filepath_.find('}', i);
    if (close == std::string::npos) fail("ModelCheckpoint", "unclosed '{' in '" + filepath_ + "'");
    std::string field = filepath_.substr(i + 1, close - i - 1), spec;
    if (std::size_t colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    // Only integer widths ("02d") and fixed decimals (".4f"): no other printf conversions.
    bool int_spec = spec.empty() || (spec.back() == 'd' && spec.find_first_not_of("0123456789", 0) == spec.size() - 1);
    bool float_spec = spec.size() >= 3 && spec[0] == '.' && spec.back() == 'f' &&
                      spec.find_first_not_of("0123456789", 1) == spec.size() - 1;
    if (field.empty() || (!int_spec && !float_spec) || spec.size() > 4)
      fail("ModelCheckpoint", "unsupported field '{" + filepath_.substr(i + 1, close - i - 1) + "}' in '" + filepath_ +
                                  "' (use {epoch}, {epoch:02d}, {name}, {name:.4f})");
    char buf[64];
    if (field == "epoch") {
      if (float_spec) fail("ModelCheckpoint", "{epoch} takes an integer format, not '" + spec + "'");
      std::snprintf(buf, sizeof buf, ("%" + (spec.empty() ? std::string("d") : spec)).c_str(), epoch + 1);
    } else {
      auto it = logs.find(field);
      if (it == logs.end()) {
        if (logs.empty()) {  // validating the pattern before training: any name may appear later
          out += "0";
          i = close;
          continue;
        }
        fail("ModelCheckpoint", "'{" + field + "}' in '" + filepath_ + "' is not in the logs");
      }
      std::snprintf(buf, sizeof buf, ("%" + (float_spec ? spec : std::string(".4f"))).c_str(), it->second);
    }
    out += buf;
    i = close;
  }
  return out;
}

void ModelCheckpoint::on_epoch_end(int epoch, const Logs& logs) {
  if (!model) return;
  if (save_best_only_) {
    double v = monitored(logs, monitor_, "ModelCheckpoint");
    if (!(maximize_ ? v > best_ : v < best_)) return;
    best_ = v;
  }
  std::string path = format_path(epoch, logs);
  if (save_weights_only_) {
    model->save_weights(path);
  } else {
    Checkpoint ckpt;
    ckpt.track("model", *model);
    if (model->optimizer()) ckpt.track("optimizer", *model->optimizer());
    ckpt.save(path);
  }
  last_saved_ = path;
}

}  // namespace ef::train
