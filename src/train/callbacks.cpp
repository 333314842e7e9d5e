#include "eagerflow/train/callbacks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "eagerflow/core/error.h"
#include "eagerflow/core/log.h"
#include "eagerflow/variable.h"
#include "eagerflow/saving/model.h"
#include "eagerflow/train/checkpoint.h"
#include "eagerflow/train/model.h"

namespace ef::train {
namespace {

// Keras' mode: "auto" minimizes losses and maximizes the metrics whose direction is up
// (accuracies, AUC, precision, recall, F-scores, R2); everything else is minimized.
bool maximizes(const std::string& monitor, const std::string& mode, const char* who) {
  if (mode == "auto") {
    std::string name = monitor.rfind("val_", 0) == 0 ? monitor.substr(4) : monitor;
    if (name == "loss") return false;
    for (const char* up : {"acc", "auc", "precision", "recall", "f1", "fbeta", "r2"})
      if (name.find(up) != std::string::npos) return true;
    return false;
  }
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

// A double as Python's repr() writes it (Keras prints floats that way): the shortest digits
// that read back to the same value; fixed notation for exponents in [-5, 16), else "1e-05".
std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-1.2345e-05"
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci = sci.substr(1);
  }
  std::size_t epos = sci.find('e');
  int exp = std::stoi(sci.substr(epos + 1));
  std::string digits = sci.substr(0, epos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  if (exp < -4 || exp >= 16) {
    std::string mant = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "");
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return sign + mant + e;
  }
  if (exp < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  std::size_t int_len = static_cast<std::size_t>(exp) + 1;
  if (digits.size() <= int_len) return sign + digits + std::string(int_len - digits.size(), '0') + ".0";
  return sign + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

// The logs' names as Keras lists them in its warnings: "loss,val_loss".
std::string available(const Logs& logs) {
  std::string known;
  for (const auto& [k, v] : logs) known += (known.empty() ? "" : ",") + k;
  return known;
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
  warned_ = false;
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
  auto found = logs.find(o_.monitor);
  if (found == logs.end()) {
    if (!warned_)
      log(LogLevel::warning, "[EarlyStopping] WARNING: Early stopping conditioned on metric `" + o_.monitor +
                                 "` which is not available. Available metrics are: " + available(logs));
    warned_ = true;
    return;
  }
  if (epoch < o_.start_from_epoch) return;
  double v = found->second;
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
      fail(ErrorCode::failed_precondition, "EarlyStopping",
           "the model's weights changed during fit: cannot restore the best weights");
    for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign(best_weights_[i]);
  }
}

// ---------------------------------------------------------------- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : o_(std::move(options)), maximize_(maximizes(o_.monitor, o_.mode, "ReduceLROnPlateau")) {
  if (o_.factor >= 1.0)
    fail("ReduceLROnPlateau", "ReduceLROnPlateau does not support a factor >= 1.0. Received factor=" +
                                  python_float_repr(o_.factor));
  if (!(o_.factor > 0.0))
    fail("ReduceLROnPlateau", "factor must be in (0, 1): a rate multiplied by " + python_float_repr(o_.factor) +
                                  " cannot train. Received factor=" + python_float_repr(o_.factor));
  if (o_.patience < 0) fail("ReduceLROnPlateau", "patience must be >= 0, got " + std::to_string(o_.patience));
  if (o_.cooldown < 0) fail("ReduceLROnPlateau", "cooldown must be >= 0, got " + std::to_string(o_.cooldown));
  if (!std::isfinite(o_.min_delta)) fail("ReduceLROnPlateau", "min_delta must be a finite number");
  if (!(std::isfinite(o_.min_lr) && o_.min_lr >= 0))
    fail("ReduceLROnPlateau", "min_lr must be a finite number >= 0, got " + python_float_repr(o_.min_lr));
  o_.min_delta = std::fabs(o_.min_delta);
}

void ReduceLROnPlateau::on_train_begin() {
  has_best_ = false;
  best_ = 0;
  cooldown_counter_ = 0;
  wait_ = 0;
  warned_ = false;
}

// Keras 3's rule, step for step: an epoch in cooldown counts the cooldown down and clears the
// wait; an improvement clears the wait; otherwise (out of cooldown) the wait grows, and on
// reaching patience the rate is reduced (when above min_lr) and the cooldown starts.
void ReduceLROnPlateau::on_epoch_end(int epoch, const Logs& logs) {
  if (!model || !model->optimizer())
    fail(ErrorCode::failed_precondition, "ReduceLROnPlateau", "the model has no optimizer (compile it first)");
  optim::Optimizer& opt = *model->optimizer();
  Logs seen = logs;
  seen["learning_rate"] = opt.learning_rate();  // Keras adds it before looking for the monitor
  auto found = seen.find(o_.monitor);
  if (found == seen.end()) {
    if (!warned_)
      log(LogLevel::warning, "[ReduceLROnPlateau] WARNING: Learning rate reduction is conditioned on metric `" + o_.monitor +
                                 "` which is not available. Available metrics are: " + available(seen) + ".");
    warned_ = true;
    return;
  }
  double current = found->second;
  if (in_cooldown()) {
    --cooldown_counter_;
    wait_ = 0;
  }
  bool improved = !has_best_ || (maximize_ ? current - o_.min_delta > best_ : current + o_.min_delta < best_);
  if (improved) {
    has_best_ = true;
    best_ = current;
    wait_ = 0;
    return;
  }
  if (in_cooldown()) return;
  if (++wait_ < o_.patience) return;
  // The rate is a float32 variable: Keras compares its value with min_lr as float32 and
  // computes the new rate in double from the float32 value.
  double old_lr = static_cast<double>(static_cast<float>(opt.learning_rate()));
  if (!(old_lr > static_cast<double>(static_cast<float>(o_.min_lr)))) return;
  double new_lr = std::max(old_lr * o_.factor, o_.min_lr);
  opt.set_learning_rate(new_lr);
  if (o_.verbose > 0)
    std::cout << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to " << python_float_repr(new_lr)
              << ".\n"
              << std::flush;
  cooldown_counter_ = o_.cooldown;
  wait_ = 0;
}

// ---------------------------------------------------------------- LambdaCallback

LambdaCallback::LambdaCallback(std::function<void(int)> on_epoch_begin, std::function<void(int, const Logs&)> on_epoch_end,
                               std::function<void(int)> on_batch_begin, std::function<void(int, const Logs&)> on_batch_end,
                               std::function<void()> on_train_begin, std::function<void()> on_train_end) {
  functions.on_epoch_begin = std::move(on_epoch_begin);
  functions.on_epoch_end = std::move(on_epoch_end);
  functions.on_batch_begin = std::move(on_batch_begin);
  functions.on_batch_end = std::move(on_batch_end);
  functions.on_train_begin = std::move(on_train_begin);
  functions.on_train_end = std::move(on_train_end);
}

void LambdaCallback::on_train_begin() {
  if (functions.on_train_begin) functions.on_train_begin();
}
void LambdaCallback::on_train_end() {
  if (functions.on_train_end) functions.on_train_end();
}
void LambdaCallback::on_epoch_begin(int epoch) {
  if (functions.on_epoch_begin) functions.on_epoch_begin(epoch);
}
void LambdaCallback::on_epoch_end(int epoch, const Logs& logs) {
  if (functions.on_epoch_end) functions.on_epoch_end(epoch, logs);
}
void LambdaCallback::on_batch_begin(int batch) {
  if (functions.on_batch_begin) functions.on_batch_begin(batch);
}
void LambdaCallback::on_batch_end(int batch, const Logs& logs) {
  if (functions.on_batch_end) functions.on_batch_end(batch, logs);
}

// ---------------------------------------------------------------- TerminateOnNaN

void TerminateOnNaN::on_batch_end(int batch, const Logs& logs) {
  auto it = logs.find("loss");
  if (it == logs.end() || std::isfinite(it->second) || !model) return;
  if (raise_error_) {
    terminated_ = true;
    throw Error("NaN or Inf loss encountered at batch " + std::to_string(batch) + ". Loss value: " +
                python_float_repr(it->second) + ". Terminating training immediately.");
  }
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
    fail(ErrorCode::failed_precondition, "CSVLogger",
         "'" + path_ + "' is not a file that a log can be written to (a directory, FIFO or socket)");
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
  if (!model || !model->optimizer())
    fail(ErrorCode::failed_precondition, "LearningRateScheduler", "the model has no optimizer (compile it first)");
  double rate = schedule_(epoch, model->optimizer()->learning_rate());
  if (!(std::isfinite(rate) && rate > 0))
    fail("LearningRateScheduler", "the schedule returned " + std::to_string(rate) + " for epoch " + std::to_string(epoch) +
                                      ": a learning rate must be a finite positive number");
  model->optimizer()->set_learning_rate(rate);
}

ModelCheckpoint::ModelCheckpoint(std::string filepath, std::string monitor, bool save_best_only, bool save_weights_only,
                                 std::string mode, std::int64_t save_freq)
    : filepath_(std::move(filepath)), monitor_(std::move(monitor)), save_best_only_(save_best_only),
      save_weights_only_(save_weights_only), maximize_(maximizes(monitor_, mode, "ModelCheckpoint")), save_freq_(save_freq) {
  if (filepath_.empty()) fail("ModelCheckpoint", "filepath is empty");
  if (save_freq < 0) fail("ModelCheckpoint", "save_freq must be 'epoch' or a positive number of batches");
  format_path(0, {});  // a malformed pattern fails now, not after an epoch of training
}

void ModelCheckpoint::on_train_begin() {
  best_ = maximize_ ? -INFINITY : INFINITY;
  batches_since_save_ = 0;
}

void ModelCheckpoint::on_train_batch_end(int batch, const Logs& logs) {
  if (save_freq_ <= 0 || ++batches_since_save_ < save_freq_) return;
  batches_since_save_ = 0;
  save(epoch_, logs);
}

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
  if (save_freq_ == 0) save(epoch, logs);
}

void ModelCheckpoint::save(int epoch, const Logs& logs) {
  if (!model) return;
  if (save_best_only_) {
    double v = monitored(logs, monitor_, "ModelCheckpoint");
    if (!(maximize_ ? v > best_ : v < best_)) return;
    best_ = v;
  }
  std::string path = format_path(epoch, logs);
  auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (save_weights_only_) {
    model->save_weights(path);
  } else if (ends_with(".efmodel") || ends_with(".keras") || ends_with(".h5")) {
    save_model(*model, path);  // the whole model, as Keras 3 (load_model reads it, from C++ or Python)
  } else {
    Checkpoint ckpt;
    ckpt.track("model", *model);
    if (model->optimizer()) ckpt.track("optimizer", *model->optimizer());
    ckpt.save(path);
  }
  last_saved_ = path;
}

}  // namespace ef::train
