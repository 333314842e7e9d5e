#pragma once
// Callbacks for Model::fit, as Keras': override what you need.
#include <iosfwd>
#include <memory>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::train {

class Model;
using Logs = std::map<std::string, double>;  // "loss", "accuracy", "val_loss", ...

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin() {}
  virtual void on_train_end() {}
  virtual void on_epoch_begin(int epoch) {}
  virtual void on_epoch_end(int epoch, const Logs& logs) {}
  virtual void on_batch_begin(int batch) {}
  virtual void on_batch_end(int batch, const Logs& logs) {}
  Model* model = nullptr;  // set by fit
};

// Keras' EarlyStopping options.
struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double min_delta = 0.0;  // a change smaller than this is no improvement
  int patience = 0;        // epochs without improvement before stopping
  int verbose = 0;         // 1: prints "Epoch N: early stopping" (and the restore) at the end
  std::string mode = "auto";
  std::optional<double> baseline;     // the wait only restarts on beating it too
  bool restore_best_weights = false;  // at the end of training, the weights of the best epoch
  int start_from_epoch = 0;           // epochs of warm-up that are not monitored
};

// Stops training when `monitor` has not improved by min_delta for `patience` epochs, as Keras:
// with patience 3 and no improvement after the first epoch, fit runs 4 epochs.
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  explicit EarlyStopping(std::string monitor = "val_loss", int patience = 0, double min_delta = 0.0,
                         std::string mode = "auto");
  void on_train_begin() override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end() override;
  // The epoch (from 0) at which training stopped; -1 when it did not stop early.
  int stopped_epoch() const { return stopped_epoch_; }
  // The best epoch (from 0) and its monitored value; -1 before any monitored epoch.
  int best_epoch() const { return best_epoch_; }
  double best() const { return best_; }

 private:
  bool improves(double value, double reference) const;
  EarlyStoppingOptions o_;
  bool maximize_;
  bool has_best_ = false;
  double best_ = 0;
  int wait_ = 0, stopped_epoch_ = -1, best_epoch_ = -1;
  std::vector<Tensor> best_weights_;
};

// Keras' TerminateOnNaN: stops fit after the batch whose running loss is NaN or Inf (the
// epoch ends there: fit checks stop_training after each batch as well as each epoch).
class TerminateOnNaN : public Callback {
 public:
  void on_batch_end(int batch, const Logs& logs) override;
  bool terminated() const { return terminated_; }

 private:
  bool terminated_ = false;
};

// Appends one CSV row per epoch: epoch, then the logs in name order.
class CSVLogger : public Callback {
 public:
  explicit CSVLogger(std::string path, bool append = false);
  ~CSVLogger() override;
  CSVLogger(CSVLogger&&) noexcept;
  CSVLogger& operator=(CSVLogger&&) noexcept;
  void on_train_begin() override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end() override;

 private:
  std::string path_;
  bool append_;
  std::unique_ptr<std::ofstream> out_;  // never null (except moved from)
  bool header_written_ = false;
};

// Sets the optimizer's learning rate at each epoch's start: schedule(epoch, current_rate).
class LearningRateScheduler : public Callback {
 public:
  explicit LearningRateScheduler(std::function<double(int, double)> schedule) : schedule_(std::move(schedule)) {}
  void on_epoch_begin(int epoch) override;

 private:
  std::function<double(int, double)> schedule_;
};

// Saves the model during fit (Keras' ModelCheckpoint), atomically: every epoch, or only when
// `monitor` improves (save_best_only). The path may name the epoch and logged values:
// "ckpt/epoch{epoch:02d}-{val_loss:.3f}.safetensors" (epochs count from 1, as Keras prints).
// save_weights_only: the weights (Model::save_weights); otherwise a Checkpoint of the model,
// its optimizer and the random generator, from which a run resumes exactly.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(std::string filepath, std::string monitor = "val_loss", bool save_best_only = false,
                           bool save_weights_only = true, std::string mode = "auto");
  void on_train_begin() override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  // The file written last ("" before the first save).
  const std::string& last_saved() const { return last_saved_; }
  // The path for an epoch and its logs (public for tests and for finding the files).
  std::string format_path(int epoch, const Logs& logs) const;

 private:
  std::string filepath_, monitor_;
  bool save_best_only_, save_weights_only_, maximize_;
  double best_ = 0;
  std::string last_saved_;
};

}  // namespace ef::train
