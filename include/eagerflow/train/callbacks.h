#pragma once
// Callbacks for Model::fit, as Keras': override what you need.
#include <iosfwd>
#include <memory>
#include <cstdint>
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

// Keras' Callback.params (steps per epoch: -1 when unknown).
struct CallbackParams {
  int verbose = 0, epochs = 1;
  std::int64_t steps = -1;
};

// Keras 3's hooks, called by fit in Keras' order (validation: on_test_* before on_epoch_end);
// evaluate calls on_test_*, predict on_predict_* (eagerflow/train/callback_list.h).
class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin() {}
  virtual void on_train_end() {}
  virtual void on_epoch_begin(int epoch) {}
  virtual void on_epoch_end(int epoch, const Logs& logs) {}
  // on_train_batch_begin/end call these unless overridden, as in Keras 3.
  virtual void on_batch_begin(int batch) {}
  virtual void on_batch_end(int batch, const Logs& logs) {}
  virtual void on_train_batch_begin(int batch) { on_batch_begin(batch); }
  virtual void on_train_batch_end(int batch, const Logs& logs) { on_batch_end(batch, logs); }
  virtual void on_test_begin() {}
  virtual void on_test_end(const Logs& logs) {}
  virtual void on_test_batch_begin(int batch) {}
  virtual void on_test_batch_end(int batch, const Logs& logs) {}
  virtual void on_predict_begin() {}
  virtual void on_predict_end() {}
  virtual void on_predict_batch_begin(int batch) {}
  virtual void on_predict_batch_end(int batch) {}
  // False: the batch-end hooks ignore their logs (then the loops may pass empty ones).
  virtual bool uses_batch_logs() const { return true; }
  Model* model = nullptr;  // set by fit (CallbackList::set_model)
  CallbackParams params;   // set by fit, evaluate and predict (CallbackList::set_params)
};

// Keras' History, which fit adds (unless given) and returns; on_train_begin clears `epoch`.
class History : public Callback {
 public:
  void on_train_begin() override { epoch.clear(); }
  void on_epoch_end(int epoch, const Logs& logs) override;
  bool uses_batch_logs() const override { return false; }
  std::map<std::string, std::vector<double>> history;  // "loss" -> one value per epoch
  std::vector<int> epoch;
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
// with patience 3 and no improvement after the first epoch, fit runs 4 epochs. A monitored
// value missing from the logs prints Keras' warning (once per fit) and skips the epoch.
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
  bool has_best_ = false, warned_ = false;
  double best_ = 0;
  int wait_ = 0, stopped_epoch_ = -1, best_epoch_ = -1;
  std::vector<Tensor> best_weights_;
};

// Keras' TerminateOnNaN: stops fit after the batch whose running loss is NaN or Inf (the
// epoch ends there: fit checks stop_training after each batch as well as each epoch), printing
// "Batch N: Invalid loss, terminating training". raise_error (Keras 3): throws an ef::Error
// ("NaN or Inf loss encountered at batch N. Loss value: nan. ...") instead.
class TerminateOnNaN : public Callback {
 public:
  explicit TerminateOnNaN(bool raise_error = false) : raise_error_(raise_error) {}
  void on_batch_end(int batch, const Logs& logs) override;
  bool terminated() const { return terminated_; }

 private:
  bool raise_error_;
  bool terminated_ = false;
};

// Keras' ReduceLROnPlateau options (the same names and defaults).
struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";  // "learning_rate" is in the logs it sees, as in Keras
  double factor = 0.1;               // new rate = max(rate * factor, min_lr); in (0, 1)
  int patience = 10;                 // epochs without improvement before a reduction
  int verbose = 0;                   // 1: "Epoch N: ReduceLROnPlateau reducing learning rate to X."
  std::string mode = "auto";
  double min_delta = 1e-4;  // a change smaller than this is no improvement
  int cooldown = 0;         // epochs after a reduction during which the wait does not grow
  double min_lr = 0.0;      // the rate is never reduced below this
};

// Multiplies the optimizer's learning rate by `factor` when `monitor` has not improved for
// `patience` epochs, step for step as Keras 3. The rate lives in a variable that the traced
// train step reads: the change takes effect at the next batch without a retrace. A monitored
// value missing from the logs prints a warning (once per fit) and skips the epoch, as Keras.
class ReduceLROnPlateau : public Callback {
 public:
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});
  void on_train_begin() override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  int wait() const { return wait_; }
  int cooldown_counter() const { return cooldown_counter_; }
  bool in_cooldown() const { return cooldown_counter_ > 0; }
  // The best monitored value so far (NaN before the first monitored epoch).
  double best() const { return has_best_ ? best_ : std::numeric_limits<double>::quiet_NaN(); }
  const ReduceLROnPlateauOptions& options() const { return o_; }

 private:
  ReduceLROnPlateauOptions o_;
  bool maximize_;
  bool has_best_ = false, warned_ = false;
  double best_ = 0;
  int wait_ = 0, cooldown_counter_ = 0;
};

// The functions a LambdaCallback calls; an empty one is skipped.
struct LambdaCallbackFunctions {
  std::function<void(int epoch)> on_epoch_begin;
  std::function<void(int epoch, const Logs& logs)> on_epoch_end;
  std::function<void(int batch)> on_batch_begin;
  std::function<void(int batch, const Logs& logs)> on_batch_end;
  std::function<void()> on_train_begin;
  std::function<void()> on_train_end;
};

// Keras' LambdaCallback: a callback made of functions.
//   LambdaCallback cb(nullptr, [](int epoch, const Logs& logs) { ... });
class LambdaCallback : public Callback {
 public:
  explicit LambdaCallback(LambdaCallbackFunctions functions) : functions(std::move(functions)) {}
  explicit LambdaCallback(std::function<void(int)> on_epoch_begin = nullptr,
                          std::function<void(int, const Logs&)> on_epoch_end = nullptr,
                          std::function<void(int)> on_batch_begin = nullptr,
                          std::function<void(int, const Logs&)> on_batch_end = nullptr,
                          std::function<void()> on_train_begin = nullptr, std::function<void()> on_train_end = nullptr);
  void on_train_begin() override;
  void on_train_end() override;
  void on_epoch_begin(int epoch) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_batch_begin(int batch) override;
  void on_batch_end(int batch, const Logs& logs) override;
  LambdaCallbackFunctions functions;
};

// Keras' BackupAndRestore: at the end of every epoch, the training state (the model's weights,
// the optimizer's slots, step and learning rate, the random generator and the next epoch) is
// written to one file in backup_dir, atomically (a kill mid-write leaves the previous backup).
// When fit starts and a backup exists, the state is restored and fit continues at the epoch
// after the backed-up one; the run ends with the same weights, bit for bit, as one that was
// never interrupted. When fit completes (on_train_end; also after EarlyStopping), the backup
// is deleted (delete_checkpoint). The model must be built (called once) before fit when a
// backup exists, as Keras requires. A damaged backup is an ef::Error naming the file (every
// backup carries a checksum).
//
// save_freq: "epoch" only. Keras' every-N-batches backups re-run the interrupted epoch from
// its start with mid-epoch weights, which cannot end with the uninterrupted run's weights;
// it is refused rather than inexact.
class BackupAndRestore : public Callback {
 public:
  explicit BackupAndRestore(std::string backup_dir, std::string save_freq = "epoch", bool delete_checkpoint = true);
  void on_train_begin() override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_end() override;
  // The backup file: <backup_dir>/latest.safetensors.
  std::string backup_path() const;
  const std::string& backup_dir() const { return backup_dir_; }
  // The epoch (from 0) the last fit resumed at; -1 when it found no backup.
  int restored_epoch() const { return restored_epoch_; }

 private:
  std::string backup_dir_;
  bool delete_checkpoint_;
  int restored_epoch_ = -1;
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
// save_weights_only: the weights (Model::save_weights); otherwise, for a path ending in
// ".efmodel" or ".keras", the whole model (ef::save_model: architecture, weights, compile
// settings, optimizer state; what Keras 3 saves), else a Checkpoint of the model, its
// optimizer and the random generator, from which a run resumes exactly.
class ModelCheckpoint : public Callback {
 public:
  // save_freq: 0 saves at each epoch's end; N > 0 every N training batches (counted across
  // epochs, the batch's logs monitored), as Keras' save_freq=N.
  explicit ModelCheckpoint(std::string filepath, std::string monitor = "val_loss", bool save_best_only = false,
                           bool save_weights_only = true, std::string mode = "auto", std::int64_t save_freq = 0);
  void on_train_begin() override;
  void on_epoch_begin(int epoch) override { epoch_ = epoch; }
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  // The file written last ("" before the first save).
  const std::string& last_saved() const { return last_saved_; }
  // The path for an epoch and its logs (public for tests and for finding the files).
  std::string format_path(int epoch, const Logs& logs) const;

 private:
  void save(int epoch, const Logs& logs);
  std::string filepath_, monitor_;
  bool save_best_only_, save_weights_only_, maximize_;
  std::int64_t save_freq_, batches_since_save_ = 0;
  int epoch_ = 0;
  double best_ = 0;
  std::string last_saved_;
};

}  // namespace ef::train
