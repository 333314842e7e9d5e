#pragma once
// Keras 3's CallbackList and ProgbarLogger (eagerflow/train/callbacks.h has Callback and
// History): what fit, evaluate and predict call, and the progress bar as a callback.
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "eagerflow/train/callbacks.h"

namespace ef::train {

class ProgressBar;  // src/train/progress_bar.h

// Keras' ProgbarLogger: the progress bar, through ef::write_progress (stdout unless a progress
// sink is set, eagerflow/core/log.h). fit adds one when verbose is not 0 (unless its callbacks
// hold one); verbose comes from params:
//   Epoch 1/5
//   63/63 [==============================] - 1s 9ms/step - loss: 0.2900 - accuracy: 0.9176
// redrawn in place (with ETA) on a terminal, one line per epoch otherwise; verbose 2: the line
// without the bar. Inside fit the validation is silent (its values join the epoch's line);
// evaluate and predict print their own line.
class ProgbarLogger : public Callback {
 public:
  ProgbarLogger();
  ~ProgbarLogger() override;
  ProgbarLogger(const ProgbarLogger&) = delete;
  ProgbarLogger& operator=(const ProgbarLogger&) = delete;
  void on_train_begin() override;
  void on_train_end() override;
  void on_epoch_begin(int epoch) override;
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_test_begin() override;
  void on_test_batch_end(int batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin() override;
  void on_predict_batch_end(int batch) override;
  void on_predict_end() override;
  bool uses_batch_logs() const override;

 private:
  void start();
  void update(int batch, const Logs& logs);
  void finish(const Logs& logs);
  std::unique_ptr<ProgressBar> bar_;
  std::int64_t seen_ = 0;
  bool in_fit_ = false, terminal_ = false;
};

// Keras' CallbackList: calls every callback's hook in order. add_history / add_progbar append a
// History / ProgbarLogger unless the list holds one already (as Keras: fit adds History always
// and ProgbarLogger when verbose is not 0).
class CallbackList : public Callback {
 public:
  explicit CallbackList(std::vector<std::shared_ptr<Callback>> callbacks = {}, bool add_history = false,
                        bool add_progbar = false, Model* model = nullptr, std::optional<CallbackParams> params = std::nullopt);
  void append(std::shared_ptr<Callback> callback);
  const std::vector<std::shared_ptr<Callback>>& callbacks() const { return callbacks_; }
  // The list's History and ProgbarLogger (given or added); null when it has none.
  const std::shared_ptr<History>& history() const { return history_; }
  const std::shared_ptr<ProgbarLogger>& progbar() const { return progbar_; }
  void set_model(Model* m);
  void set_params(const CallbackParams& p);

  void on_train_begin() override;
  void on_train_end() override;
  void on_epoch_begin(int epoch) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_batch_begin(int batch) override;
  void on_batch_end(int batch, const Logs& logs) override;
  void on_train_batch_begin(int batch) override;
  void on_train_batch_end(int batch, const Logs& logs) override;
  void on_test_begin() override;
  void on_test_end(const Logs& logs) override;
  void on_test_batch_begin(int batch) override;
  void on_test_batch_end(int batch, const Logs& logs) override;
  void on_predict_begin() override;
  void on_predict_end() override;
  void on_predict_batch_begin(int batch) override;
  void on_predict_batch_end(int batch) override;
  bool uses_batch_logs() const override;

 private:
  std::vector<std::shared_ptr<Callback>> callbacks_;
  std::shared_ptr<History> history_;
  std::shared_ptr<ProgbarLogger> progbar_;
};

}  // namespace ef::train
