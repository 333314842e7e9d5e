// Keras 3's CallbackList, History and ProgbarLogger (eagerflow/train/callbacks.h): what fit,
// evaluate and predict call, and the two callbacks fit adds.
#include <algorithm>
#include <set>

#include "eagerflow/core/error.h"
#include "eagerflow/core/progress.h"
#include "eagerflow/train/callback_list.h"
#include "eagerflow/train/model.h"
#include "train/progress_bar.h"

namespace ef::train {

// ---------------------------------------------------------------- History
void History::on_epoch_end(int e, const Logs& logs) {
  epoch.push_back(e);
  for (const auto& [k, v] : logs) history[k].push_back(v);
}

// ---------------------------------------------------------------- ProgbarLogger
namespace {

bool is_validation_key(const std::string& k) { return k.rfind("val_", 0) == 0; }

// The bar's order, as fit logged it before callbacks: the model's metrics_names (loss, the
// per-output losses, the compiled metrics), the step's other values by name, then the
// validation values in that same order and the validation-only ones by name.
OrderedLogs ordered_logs(const Model* model, const Logs& logs) {
  OrderedLogs out;
  std::set<std::string> used;
  auto take = [&](const std::string& k) {
    auto it = logs.find(k);
    if (it != logs.end() && used.insert(k).second) out.emplace_back(k, it->second);
  };
  if (model)
    for (const auto& n : model->metrics_names()) take(n);
  for (const auto& [k, v] : logs)
    if (!is_validation_key(k)) take(k);
  const std::size_t train_count = out.size();
  for (std::size_t i = 0; i < train_count; ++i) take("val_" + out[i].first);
  for (const auto& [k, v] : logs) take(k);
  return out;
}

}  // namespace

ProgbarLogger::ProgbarLogger() = default;
ProgbarLogger::~ProgbarLogger() = default;

void ProgbarLogger::start() {
  seen_ = 0;
  bar_.reset();
  if (params.verbose == 0) return;
  terminal_ = progress_to_terminal();
  bar_ = std::make_unique<ProgressBar>([](const std::string& text) { write_progress(text); }, params.steps, params.verbose,
                                       terminal_);
}

void ProgbarLogger::update(int batch, const Logs& logs) {
  seen_ = static_cast<std::int64_t>(batch) + 1;
  if (bar_ && uses_batch_logs()) bar_->update(seen_, ordered_logs(model, logs));
}

void ProgbarLogger::finish(const Logs& logs) {
  if (!bar_) return;
  bar_->finish(ordered_logs(model, logs), seen_);
  bar_.reset();
}

// Redraws need each batch's logs: verbose 1 on a terminal only.
bool ProgbarLogger::uses_batch_logs() const { return bar_ && params.verbose == 1 && terminal_; }

void ProgbarLogger::on_train_begin() { in_fit_ = true; }
void ProgbarLogger::on_train_end() { in_fit_ = false; }

void ProgbarLogger::on_epoch_begin(int epoch) {
  start();
  if (params.verbose) write_progress("Epoch " + std::to_string(epoch + 1) + "/" + std::to_string(params.epochs) + "\n");
}

void ProgbarLogger::on_train_batch_end(int batch, const Logs& logs) { update(batch, logs); }
void ProgbarLogger::on_epoch_end(int, const Logs& logs) { finish(logs); }

// Inside fit the validation is silent: its values join the epoch's line.
void ProgbarLogger::on_test_begin() {
  if (!in_fit_) start();
}
void ProgbarLogger::on_test_batch_end(int batch, const Logs& logs) {
  if (!in_fit_) update(batch, logs);
}
void ProgbarLogger::on_test_end(const Logs& logs) {
  if (!in_fit_) finish(logs);
}

void ProgbarLogger::on_predict_begin() { start(); }
void ProgbarLogger::on_predict_batch_end(int batch) { update(batch, {}); }
void ProgbarLogger::on_predict_end() { finish({}); }

// ---------------------------------------------------------------- CallbackList
CallbackList::CallbackList(std::vector<std::shared_ptr<Callback>> callbacks, bool add_history, bool add_progbar, Model* m,
                           std::optional<CallbackParams> p) {
  for (auto& cb : callbacks) append(std::move(cb));
  if (!history_ && add_history) append(std::make_shared<History>());
  if (!progbar_ && add_progbar) append(std::make_shared<ProgbarLogger>());
  if (m) set_model(m);
  if (p) set_params(*p);
}

void CallbackList::append(std::shared_ptr<Callback> callback) {
  if (!callback) fail("CallbackList", "got a null callback");
  if (!history_)
    if (auto h = std::dynamic_pointer_cast<History>(callback)) history_ = std::move(h);
  if (!progbar_)
    if (auto p = std::dynamic_pointer_cast<ProgbarLogger>(callback)) progbar_ = std::move(p);
  if (model) callback->model = model;
  callbacks_.push_back(std::move(callback));
}

void CallbackList::set_model(Model* m) {
  model = m;
  for (auto& cb : callbacks_) cb->model = m;
}

void CallbackList::set_params(const CallbackParams& p) {
  params = p;
  for (auto& cb : callbacks_) cb->params = p;
}

void CallbackList::on_train_begin() {
  for (auto& cb : callbacks_) cb->on_train_begin();
}
void CallbackList::on_train_end() {
  for (auto& cb : callbacks_) cb->on_train_end();
}
void CallbackList::on_epoch_begin(int epoch) {
  for (auto& cb : callbacks_) cb->on_epoch_begin(epoch);
}
void CallbackList::on_epoch_end(int epoch, const Logs& logs) {
  for (auto& cb : callbacks_) cb->on_epoch_end(epoch, logs);
}
void CallbackList::on_batch_begin(int batch) {
  for (auto& cb : callbacks_) cb->on_batch_begin(batch);
}
void CallbackList::on_batch_end(int batch, const Logs& logs) {
  for (auto& cb : callbacks_) cb->on_batch_end(batch, logs);
}
void CallbackList::on_train_batch_begin(int batch) {
  for (auto& cb : callbacks_) cb->on_train_batch_begin(batch);
}
void CallbackList::on_train_batch_end(int batch, const Logs& logs) {
  for (auto& cb : callbacks_) cb->on_train_batch_end(batch, logs);
}
void CallbackList::on_test_begin() {
  for (auto& cb : callbacks_) cb->on_test_begin();
}
void CallbackList::on_test_end(const Logs& logs) {
  for (auto& cb : callbacks_) cb->on_test_end(logs);
}
void CallbackList::on_test_batch_begin(int batch) {
  for (auto& cb : callbacks_) cb->on_test_batch_begin(batch);
}
void CallbackList::on_test_batch_end(int batch, const Logs& logs) {
  for (auto& cb : callbacks_) cb->on_test_batch_end(batch, logs);
}
void CallbackList::on_predict_begin() {
  for (auto& cb : callbacks_) cb->on_predict_begin();
}
void CallbackList::on_predict_end() {
  for (auto& cb : callbacks_) cb->on_predict_end();
}
void CallbackList::on_predict_batch_begin(int batch) {
  for (auto& cb : callbacks_) cb->on_predict_batch_begin(batch);
}
void CallbackList::on_predict_batch_end(int batch) {
  for (auto& cb : callbacks_) cb->on_predict_batch_end(batch);
}

bool CallbackList::uses_batch_logs() const {
  return std::any_of(callbacks_.begin(), callbacks_.end(), [](const auto& cb) { return cb->uses_batch_logs(); });
}

}  // namespace ef::train
