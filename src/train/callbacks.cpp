#include "eagerflow/train/callbacks.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "eagerflow/core/error.h"
#include "eagerflow/variable.h"
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

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : o_(std::move(options)), maximize_(maximizes(o_.monitor, o_.mode, "EarlyStopping")) {
  if (o_.patience < 0) fail("EarlyStopping", "patience must be >= 0, got " + std::to_string(o_.patience));
  if (o_.start_from_epoch < 0) fail("EarlyStopping", "start_from_epoch must be >= 0, got " + std::to_string(o_.start_from_epoch));
  if (!std::isfinite(o_.min_delta)) fail("EarlyStopping", "min_delta must be a finite number");
  if (o_.baseline && std::isnan(*o_.baseline)) fail("EarlyStopping", "baseline is NaN");
  o_.min_delta = std::fabs(o_.min_delta);
}

EarlyStopping::EarlyStopping(std::string monitor, int patience, double min_delta, std::string mode)
    : EarlyStopping([&] {
        // Assigned rather than designated: GCC's -Wextra warns about each member a designated
        // initializer leaves out.
        EarlyStoppingOptions o;
        o.monitor = std::move(monitor);
        o.min_delta = min_delta;
        o.patience = patience;
        o.mode = std::move(mode);
        return o;
      }()) {}

void EarlyStopping::on_train_begin() {
  best_ = maximize_ ? -INFINITY : INFINITY;
  wait_ = 0;
  stopped_epoch_ = -1;
  best_epoch_ = -1;
  has_best_ = false;
  best_weights_.clear();
}

bool EarlyStopping::improves(double value, double reference) const {
  return maximize_ ? value - o_.min_delta > reference : value + o_.min_delta < reference;
}

static std::vector<Tensor> weight_values(const Model& model) {
  std::vector<Tensor> values;
  for (const Variable& v : model.weights()) values.push_back(Tensor(v).clone());
  return values;
}

// Keras' rule, step for step: the wait grows every monitored epoch and restarts on an
// improvement; training stops once it reaches patience (never after the first epoch).
void EarlyStopping::on_epoch_end(int epoch, const Logs& logs) {
  if (epoch < o_.start_from_epoch) return;
  double v = monitored(logs, o_.monitor, "EarlyStopping");
  if (o_.restore_best_weights && best_weights_.empty() && model) {
    best_weights_ = weight_values(*model);  // until something improves, the first weights are the best
    best_epoch_ = epoch;
  }
  ++wait_;
  if (!has_best_ || improves(v, best_)) {
    has_best_ = true;
    best_ = v;
    best_epoch_ = epoch;
    if (o_.restore_best_weights && model) best_weights_ = weight_values(*model);
    if (!o_.baseline || improves(v, *o_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= o_.patience && epoch > 0 && model) {
    model->stop_training = true;
    stopped_epoch_ = epoch;
  }
}

void EarlyStopping::on_train_end() {
  if (stopped_epoch_ > 0 && o_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping\n" << std::flush;
  if (o_.restore_best_weights && !best_weights_.empty() && model) {
    if (o_.verbose > 0)
      std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << ".\n" << std::flush;
    std::vector<Variable> vars = model->weights();
    if (vars.size() != best_weights_.size())
      fail("EarlyStopping", "the model's weights changed during fit: cannot restore the best weights");
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign(best_weights_[i]);
  }
}

void TerminateOnNaN::on_batch_end(int batch, const Logs& logs) {
  auto it = logs.find("loss");
  if (it == logs.end() || std::isfinite(it->second) || !model) return;
  std::cout << "Batch " << batch << ": Invalid loss, terminating training\n" << std::flush;
  model->stop_training = true;
  terminated_ = true;
}

CSVLogger::CSVLogger(std::string path, bool append)
    : path_(std::move(path)), append_(append), out_(std::make_unique<std::ofstream>()) {}
CSVLogger::~CSVLogger() = default;
CSVLogger::CSVLogger(CSVLogger&&) noexcept = default;
CSVLogger& CSVLogger::operator=(CSVLogger&&) noexcept = default;

void CSVLogger::on_train_end() { out_->close(); }

void CSVLogger::on_train_begin() {
  // Opening a FIFO for writing blocks until a reader comes: fit would hang before its first
  // epoch. A directory or a socket cannot hold a log either. (/dev/null and other character
  // devices are fine: a log thrown away.)
  std::error_code ec;
  auto status = std::filesystem::status(path_, ec);
  if (!ec && (std::filesystem::is_fifo(status) || std::filesystem::is_directory(status) || std::filesystem::is_socket(status)))
    fail("CSVLogger", "'" + path_ + "' is not a file that a log can be written to (a directory, FIFO or socket)");
  out_->open(path_, append_ ? std::ios::app : std::ios::trunc);
  if (!*out_) fail("CSVLogger", "cannot open '" + path_ + "' for writing");
  header_written_ = append_;
}

void CSVLogger::on_epoch_end(int epoch, const Logs& logs) {
  if (!header_written_) {
    *out_ << "epoch";
    for (const auto& [k, v] : logs) *out_ << "," << k;
    *out_ << "\n";
    header_written_ = true;
  }
  *out_ << epoch;
  for (const auto& [k, v] : logs) *out_ << "," << v;
  *out_ << "\n" << std::flush;
}

void LearningRateScheduler::on_epoch_begin(int epoch) {
  if (!model || !model->optimizer()) fail("LearningRateScheduler", "the model has no optimizer (compile it first)");
  double rate = schedule_(epoch, model->optimizer()->learning_rate());
  if (!(std::isfinite(rate) && rate > 0))
    fail("LearningRateScheduler", "the schedule returned " + std::to_string(rate) + " for epoch " + std::to_string(epoch) +
                                      ": a learning rate must be a finite positive number");
  model->optimizer()->set_learning_rate(rate);
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
