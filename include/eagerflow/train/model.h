#pragma once
// Keras' Model: a layer that compiles (optimizer, loss, metrics) and fits. The train and test
// steps are ef::functions with a dynamic batch dimension: over a whole fit the train step
// traces once, including the smaller last batch and the first step that creates the
// optimizer's slots (tracing_count()).
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/nn/layer.h"
#include "eagerflow/optim/optimizer.h"
#include "eagerflow/train/callbacks.h"
#include "eagerflow/train/losses.h"
#include "eagerflow/train/metrics.h"

namespace ef::train {

struct FitOptions {
  std::int64_t batch_size = 32;
  int epochs = 1;
  // Keras' initial_epoch: the epoch to start at (to resume a run); epochs is the last one.
  int initial_epoch = 0;
  double validation_split = 0.0;  // the last fraction of x, y (before shuffling), as Keras
  std::optional<std::pair<Tensor, Tensor>> validation_data;
  bool shuffle = true;
  std::vector<std::shared_ptr<Callback>> callbacks;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
};

struct History {
  std::map<std::string, std::vector<double>> history;  // "loss" -> one value per epoch
  std::vector<int> epoch;
};

class Model : public nn::Layer {
 public:
  explicit Model(std::string name = "");

  void compile(std::shared_ptr<optim::Optimizer> optimizer, Loss loss, std::vector<std::string> metrics = {},
               bool run_eagerly = false);
  void compile(std::shared_ptr<optim::Optimizer> optimizer, const std::string& loss,
               std::vector<std::string> metrics = {}, bool run_eagerly = false) {
    compile(std::move(optimizer), loss_by_name(loss), std::move(metrics), run_eagerly);
  }
  // Metrics as objects (Keras' metrics=[SparseCategoricalAccuracy(name="acc")], or made in
  // Python): each reports under its own name. A distinct name, since compile(opt, loss, {}) must
  // stay unambiguous.
  void compile_with_metrics(std::shared_ptr<optim::Optimizer> optimizer, Loss loss,
                            std::vector<std::shared_ptr<Metric>> metrics, bool run_eagerly = false);
  History fit(const Tensor& x, const Tensor& y, const FitOptions& options = {});
  // The loss and metrics over (x, y), in batches.
  Logs evaluate(const Tensor& x, const Tensor& y, std::int64_t batch_size = 32, int verbose = 0);
  Tensor predict(const Tensor& x, std::int64_t batch_size = 32);
  // One step on one batch; returns the batch's logs (Keras' train_on_batch).
  Logs train_on_batch(const Tensor& x, const Tensor& y);

  // Traces of the train step so far (1 after any fit, whatever the batch sizes).
  int tracing_count() const;
  int test_tracing_count() const;
  // Keras' table: layer (type), output shape, parameter count; totals.
  void summary(std::ostream& os) const;
  void summary() const;

  const std::shared_ptr<optim::Optimizer>& optimizer() const { return optimizer_; }
  // The weights in a safetensors file, keyed by their paths below this model ("dense/kernel"),
  // so a model of the same structure loads them whatever its own name. Loading checks names,
  // shapes and dtypes first and reports every mismatch in one ef::Error (nothing is assigned
  // then); skip_mismatch loads what fits and leaves the rest (Keras' option).
  void save_weights(const std::string& path) const;
  void load_weights(const std::string& path, bool skip_mismatch = false);
  bool stop_training = false;  // callbacks set it to end fit after this epoch

 private:
  using Step = std::function<std::vector<Tensor>(const Tensor&, const Tensor&)>;
  void require_compiled(const char* what) const;
  void make_steps(const Tensor& x, const Tensor& y);
  Logs read_metrics(const std::string& prefix) const;
  void reset_metrics();
  std::vector<Tensor> run_step(bool train, const Tensor& x, const Tensor& y);

  std::shared_ptr<optim::Optimizer> optimizer_;
  std::optional<Loss> loss_;
  std::shared_ptr<Mean> loss_tracker_;
  std::vector<std::shared_ptr<Metric>> metrics_;
  bool run_eagerly_ = false;
  Step train_step_, test_step_;
  std::function<int()> train_count_, test_count_;
  std::vector<TensorSpec> step_signature_;
  std::vector<bool> trainable_flags_;  // of every layer, when the steps were made
};

// A stack of layers, each fed the previous one's output.
class Sequential : public Model {
 public:
  explicit Sequential(std::string name = "");
  Sequential(std::vector<std::shared_ptr<nn::Layer>> layers, std::string name = "");
  void add(std::shared_ptr<nn::Layer> layer);
  template <class L, class... Args>
  L& add(Args&&... args) {
    auto layer = std::make_shared<L>(std::forward<Args>(args)...);
    L& ref = *layer;
    add(std::move(layer));
    return ref;
  }
  const std::vector<std::shared_ptr<nn::Layer>>& stack() const { return stack_; }

 protected:
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  std::vector<std::shared_ptr<nn::Layer>> stack_;
};

}  // namespace ef::train
