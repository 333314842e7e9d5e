#pragma once
// Keras' Model: a layer that compiles (optimizer, losses, metrics) and fits. The train, test
// and predict steps are ef::functions with a dynamic batch dimension: over a whole fit the
// train step traces once, including the smaller last batch and the first step that creates
// the optimizer's slots (tracing_count()). Override train_step / test_step / predict_step to
// customize them (Keras 3): fit still traces them once.
//
// Several inputs and outputs (a functional model, eagerflow/train/functional.h): x and y are
// lists in the model's input/output order or maps by input/output name; losses, loss weights
// and metrics are given per output (CompileOptions).
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "eagerflow/nn/layer.h"
#include "eagerflow/optim/optimizer.h"
#include "eagerflow/train/callbacks.h"
#include "eagerflow/train/losses.h"
#include "eagerflow/train/metrics.h"

namespace ef::data {
class Dataset;  // eagerflow/data/dataset.h
}  // namespace ef::data

namespace ef {
class ConcreteFunction;
}

namespace ef::train {

class FunctionalGraph;       // eagerflow/train/functional.h
class CallbackList;          // eagerflow/train/callback_list.h
class DistributionStrategy;  // eagerflow/train/distribution.h
namespace detail {
class BatchSource;     // src/train/batch_source.h: where fit's batches come from
class DatasetBatches;  // a Dataset's
}  // namespace detail

// Inputs, targets or sample weights of fit/evaluate/predict: one tensor, a list (in the
// model's input or output order) or a map by input or output name. Empty: none given.
struct Data {
  Data() = default;
  Data(Tensor t) { if (t.defined()) tensors.push_back(std::move(t)); }  // NOLINT: implicit, as Keras takes x
  Data(std::vector<Tensor> list) : tensors(std::move(list)) {}         // NOLINT
  Data(std::initializer_list<Tensor> list) : tensors(list) {}
  Data(const std::map<std::string, Tensor>& by_name);                  // NOLINT
  bool empty() const { return tensors.empty(); }
  std::vector<Tensor> tensors;
  std::vector<std::string> names;  // one per tensor when given by name, else empty
};

struct ValidationData {
  ValidationData(const std::pair<Tensor, Tensor>& xy) : x(xy.first), y(xy.second) {}  // NOLINT
  ValidationData(Data x_, Data y_, Data sample_weight_ = {}) : x(std::move(x_)), y(std::move(y_)), sample_weight(std::move(sample_weight_)) {}
  ValidationData(const data::Dataset& batches);  // NOLINT: (x, y[, sample_weight]) batches, as fit(dataset)
  Data x, y, sample_weight;
  std::shared_ptr<const data::Dataset> dataset;  // set: validate on it (x, y unused)
};

struct FitOptions {
  std::int64_t batch_size = 32;
  int epochs = 1;
  // Keras' initial_epoch: the epoch to start at (to resume a run); epochs is the last one.
  int initial_epoch = 0;
  double validation_split = 0.0;  // the last fraction of x, y (before shuffling), as Keras
  std::optional<ValidationData> validation_data;
  bool shuffle = true;
  std::vector<std::shared_ptr<Callback>> callbacks;
  int verbose = 1;  // 0 silent, 1 progress bar, 2 one line per epoch
  // Keras' sample_weight: [n] (or [n, 1]) per example, one for every output or one per output.
  Data sample_weight;
  // Keras' class_weight: a weight per class index, turned into per-example weights from the
  // labels (class indices, or one-hot rows). Single-output models only, as Keras.
  std::map<std::int64_t, double> class_weight;
  // fit(dataset) only (Keras): batches per epoch (-1: a whole pass of the dataset; needed for an
  // infinite one). The dataset's iterator then carries on across epochs; when it runs out,
  // training stops. validation_steps: batches of validation_data per validation (-1: all).
  std::int64_t steps_per_epoch = -1;
  std::int64_t validation_steps = -1;
};

// Keras' evaluate and predict arguments; callbacks get the on_test_* / on_predict_* hooks, and
// verbose adds a ProgbarLogger (a dataset's steps: batches to take, -1 for a whole pass).
struct EvaluateOptions {
  std::int64_t batch_size = 32;
  int verbose = 0;
  Data sample_weight;
  std::vector<std::shared_ptr<Callback>> callbacks;
  std::int64_t steps = -1;
};
struct PredictOptions {
  std::int64_t batch_size = 32;
  int verbose = 0;
  std::vector<std::shared_ptr<Callback>> callbacks;
};

// A loss or metric as an object or by Keras name ("mse", "accuracy").
struct LossRef {
  LossRef(Loss l) : loss(std::move(l)) {}                  // NOLINT
  LossRef(const std::string& name) : loss(loss_by_name(name)) {}  // NOLINT
  LossRef(const char* name) : LossRef(std::string(name)) {}      // NOLINT
  Loss loss;
};
struct MetricRef {
  MetricRef(std::shared_ptr<Metric> m) : value(std::move(m)) {}  // NOLINT
  MetricRef(std::string name) : value(std::move(name)) {}        // NOLINT
  MetricRef(const char* name) : value(std::string(name)) {}      // NOLINT
  std::variant<std::string, std::shared_ptr<Metric>> value;
};

// Keras' compile arguments. Losses: one for every output, one per output in order, or by
// output name (outputs without a loss do not train); loss_weights likewise. Metrics: for a
// single-output model a list; for several outputs a list applies each named metric to every
// output (reported as "<output>_<metric>"), or by output name.
struct CompileOptions {
  std::shared_ptr<optim::Optimizer> optimizer;
  std::vector<LossRef> loss;
  std::map<std::string, LossRef> loss_by_output;
  std::vector<double> loss_weights;
  std::map<std::string, double> loss_weights_by_output;
  std::vector<MetricRef> metrics;
  std::map<std::string, std::vector<MetricRef>> metrics_by_output;
  // Keras' weighted_metrics: updated with the sample weights (sample_weight, class_weight);
  // the metrics above are not. Laid out as metrics; a name that an unweighted metric already
  // reports under gets the prefix "weighted_".
  std::vector<MetricRef> weighted_metrics;
  std::map<std::string, std::vector<MetricRef>> weighted_metrics_by_output;
  bool run_eagerly = false;
};

// One batch as a train/test step sees it: inputs in the model's order, targets and sample
// weights in output order (sample_weight empty when none; an undefined entry: that output
// unweighted).
struct StepData {
  std::vector<Tensor> x, y, sample_weight;
};

using StepLogs = std::map<std::string, Tensor>;

// One trace of a model's train step (Model::train_step_traces): ef::function's trace record
// and the traced function.
struct StepTrace {
  int number = 0;  // 1 for the first
  std::string reason, signature;
  std::shared_ptr<const ConcreteFunction> function;
};

class Model : public nn::Layer {
 public:
  explicit Model(std::string name = "");

  void compile(CompileOptions options);
  void compile(std::shared_ptr<optim::Optimizer> optimizer, LossRef loss, std::vector<MetricRef> metrics = {},
               bool run_eagerly = false);
  // The optimizer by Keras name ("adam", "sgd", "adamw", "rmsprop": optim::optimizer_by_name).
  void compile(const std::string& optimizer, LossRef loss, std::vector<MetricRef> metrics = {},
               bool run_eagerly = false);
  // Metrics as objects (kept for existing callers; compile takes objects too).
  void compile_with_metrics(std::shared_ptr<optim::Optimizer> optimizer, Loss loss,
                            std::vector<std::shared_ptr<Metric>> metrics, bool run_eagerly = false);
  History fit(const Data& x, const Data& y, const FitOptions& options = {});
  // From a dataset of batches (eagerflow/data/dataset.h), as Keras' fit(dataset): each element
  // is (x, y) or (x, y, sample_weight) (tuples), or a map by input and output name. batch_size,
  // shuffle and validation_split do not apply (the dataset batches and shuffles). The progress
  // bar shows n/N when the dataset's cardinality is known, else counts up.
  History fit(const data::Dataset& dataset, const FitOptions& options = {});
  Logs evaluate(const data::Dataset& dataset, int verbose = 0, std::int64_t steps = -1);
  Logs evaluate(const data::Dataset& dataset, const EvaluateOptions& options);
  // Elements: x alone, or (x, ...) whose first part is x.
  Tensor predict(const data::Dataset& dataset, std::int64_t steps = -1);
  std::vector<Tensor> predict_outputs(const data::Dataset& dataset, std::int64_t steps = -1);
  // The loss and metrics over (x, y), in batches.
  Logs evaluate(const Data& x, const Data& y, std::int64_t batch_size = 32, int verbose = 0,
                const Data& sample_weight = {});
  Logs evaluate(const Data& x, const Data& y, const EvaluateOptions& options);
  // The model's output over x in batches, through a traced predict step (one trace).
  Tensor predict(const Data& x, std::int64_t batch_size = 32);
  // Every output (a model with several).
  std::vector<Tensor> predict_outputs(const Data& x, std::int64_t batch_size = 32);
  std::vector<Tensor> predict_outputs(const Data& x, const PredictOptions& options);
  // One step on one batch; returns the batch's logs (Keras' train_on_batch).
  Logs train_on_batch(const Data& x, const Data& y, const Data& sample_weight = {});
  Logs test_on_batch(const Data& x, const Data& y, const Data& sample_weight = {});

  // Keras' Model.build: creates the weights for inputs of this shape (batch dim included, or
  // kDynamic), so that summary, save_weights and load_weights work before any call.
  void build(const Shape& input_shape) override;
  void build(const std::vector<Shape>& input_shapes) override;

  // The steps fit/evaluate/predict trace. Override them as in Keras 3; the defaults are:
  // train: forward under a GradientTape, compute_loss, apply the gradients, apply weight
  // constraints, update the metrics, return every metric's result.
  virtual StepLogs train_step(const StepData& data);
  virtual StepLogs test_step(const StepData& data);
  virtual std::vector<Tensor> predict_step(const std::vector<Tensor>& x);
  // For custom steps. compute_loss: the compiled losses (weighted per output and by sample
  // weight) plus the model's losses() (regularizers, add_loss). compute_metrics: updates the
  // compiled metrics and returns every metric's result, "loss" from the loss tracker.
  Tensor compute_loss(const StepData& data, const std::vector<Tensor>& y_pred);
  StepLogs compute_metrics(const StepData& data, const std::vector<Tensor>& y_pred);
  // The loss tracker ("loss"), per-output loss trackers, then the compiled metrics. fit resets
  // every one at each epoch's start, evaluate (and validation) at its start, as Keras: a model
  // with a custom train_step and metrics of its own overrides this to list them too.
  virtual std::vector<std::shared_ptr<Metric>> metrics() const;
  // The names they log under, in that order (Keras' metrics_names): "loss", "<output>_loss",
  // "<metric>" or, with several outputs, "<output>_<metric>".
  std::vector<std::string> metrics_names() const;
  // Every output of the model on inputs x (in the model's input order).
  std::vector<Tensor> call_model(const std::vector<Tensor>& x, bool training);

  // Names of the inputs and outputs, for x/y maps and per-output losses: a functional model's
  // Input names and output layer names; "input" / "output" (numbered from output_1 when a
  // model gives several) otherwise.
  virtual std::vector<std::string> input_names() const;
  virtual std::vector<std::string> output_names() const;

  // Keras' Model(inputs, outputs): this model's call runs the layer graph from the Keras
  // tensors `inputs` (made by Input) to `outputs` (eagerflow/train/functional.h), checked here.
  // Once, before the model is called. output_names: names for the outputs (else the names of
  // the layers making them).
  void init_functional(std::vector<Tensor> inputs, std::vector<Tensor> outputs, std::vector<std::string> output_names = {});
  const FunctionalGraph* functional_graph() const { return graph_.get(); }

  // Traces of the train step so far (1 after any fit, whatever the batch sizes).
  int tracing_count() const;
  int test_tracing_count() const;
  int predict_tracing_count() const;
  // The current train step's traces, in order, with their reasons and graphs (what the
  // TensorBoard callback shows). Empty before the first train step and with run_eagerly.
  std::vector<StepTrace> train_step_traces() const;
  // Keras' table: layer (type), output shape, parameter count; totals.
  virtual void summary(std::ostream& os) const;
  void summary() const;

  const std::shared_ptr<optim::Optimizer>& optimizer() const { return optimizer_; }
  // The arguments of the latest compile (what ef::save_model records).
  const CompileOptions& compile_options() const { return compile_options_; }
  bool compiled() const { return optimizer_ != nullptr && !losses_.empty(); }
  // The weights in a safetensors file, keyed by their paths below this model ("dense/kernel"),
  // so a model of the same structure loads them whatever its own name. Loading checks names,
  // shapes and dtypes first and reports every mismatch in one ef::Error (nothing is assigned
  // then); skip_mismatch loads what fits and leaves the rest (Keras' option).
  void save_weights(const std::string& path) const;
  void load_weights(const std::string& path, bool skip_mismatch = false);
  // Keras' get_weights / set_weights: every weight's value, in weights() order. set_weights
  // checks the count, every shape and every dtype first (one ef::Error listing each mismatch)
  // and assigns only when all fit.
  std::vector<Tensor> get_weights() const;
  void set_weights(const std::vector<Tensor>& values);
  // Keras' Model.build for inputs of other dtypes (a Sequential whose Input is int64).
  void build_for_specs(const std::vector<TensorSpec>& input_specs);
  // Data parallelism (eagerflow/train/distribution.h; over MPI: eagerflow/dist/data_parallel.h):
  // fit, evaluate and predict split each global batch among the ranks and the train step
  // averages the gradients; null (the default): this process alone. New steps are traced for it.
  void set_distribution(std::shared_ptr<DistributionStrategy> strategy);
  const std::shared_ptr<DistributionStrategy>& distribution() const { return distribution_; }
  bool stop_training = false;  // callbacks set it to end fit after this epoch
  // Set by a callback's on_train_begin (BackupAndRestore): fit starts at this epoch instead of
  // FitOptions::initial_epoch. fit resets it to -1 when it starts.
  int resume_epoch = -1;

 protected:
  // Outputs as several tensors: models whose call gives one output use call(). A functional
  // model runs its graph.
  std::vector<Tensor> call_multi(const std::vector<Tensor>& inputs, bool training) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;

 private:
  struct OutputLoss {
    std::optional<Loss> loss;
    double weight = 1.0;
    std::shared_ptr<Mean> tracker;  // "<output>_loss", with several outputs
  };
  struct OutputMetric {
    std::size_t output;
    std::shared_ptr<Metric> metric;
    std::string log_name;
    bool weighted = false;  // a weighted_metrics entry: updated with the sample weights
  };
  struct Batching;  // src/train/model.cpp
  // A step as made (traced) for one configuration. Made at most once per configuration, under
  // steps_mutex_; a call takes a copy of the pointer under the lock and runs without it, so a
  // step replaced meanwhile (compile, new data) stays alive until every call through it returns.
  struct Step;  // src/train/model.cpp
  void require_compiled(const char* what) const;
  std::shared_ptr<const Step> make_step(const StepData& example, bool train);
  std::shared_ptr<const Step> make_predict_step(const std::vector<TensorSpec>& signature);
  std::shared_ptr<const Step> current_step(const std::shared_ptr<const Step>& slot) const;
  void drop_steps();
  void reset_metrics();
  Logs to_logs(const StepLogs& logs) const;
  StepData conform(const char* what, const Data& x, const Data& y, const Data& sample_weight, bool need_y) const;
  std::vector<Tensor> order_by_name(const char* what, const Data& d, const std::vector<std::string>& names) const;
  StepLogs run_train(const StepData& batch);
  StepLogs run_test(const StepData& batch);
  // fit's and evaluate's loops over batches from any source (arrays or a dataset).
  friend class detail::DatasetBatches;
  History fit_batches(detail::BatchSource& train, detail::BatchSource* validation, const FitOptions& o);
  Logs evaluate_batches(detail::BatchSource& source, CallbackList& callbacks);
  Logs evaluate_batches(detail::BatchSource& source, int verbose, const std::vector<std::shared_ptr<Callback>>& callbacks);
  // fit's bodies; fit runs them under the strategy's error handling.
  History fit_arrays(const Data& x, const Data& y, const FitOptions& o);
  History fit_dataset(const data::Dataset& dataset, const FitOptions& o);
  // With a strategy: builds the model (from x's first example) and lets the strategy make
  // every rank's state the same.
  void begin_distributed_fit(const Data& x);

  std::shared_ptr<const FunctionalGraph> graph_;
  std::shared_ptr<DistributionStrategy> distribution_;
  std::shared_ptr<optim::Optimizer> optimizer_;
  std::vector<OutputLoss> losses_;
  std::shared_ptr<Mean> loss_tracker_;
  std::vector<OutputMetric> metrics_;
  CompileOptions compile_options_;
  bool building_ = false;
  mutable std::mutex steps_mutex_;
  std::shared_ptr<const Step> train_, test_, predict_;
};

// A stack of layers, each fed the previous one's output.
class Sequential : public Model {
 public:
  explicit Sequential(std::string name = "");
  // Built at once when the first layer declares its input shape (Layer::declared_input_shape).
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
