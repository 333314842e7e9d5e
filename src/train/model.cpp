#include "eagerflow/train/model.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/function/function.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"
#include "eagerflow/trace/context.h"
#include "eagerflow/train/callback_list.h"
#include "eagerflow/train/distribution.h"
#include "eagerflow/train/functional.h"
#include "eagerflow/train/interrupt.h"
#include "train/batch_source.h"

namespace ef::train {
namespace {

// [n, ...] -> [?, ...]: the steps take any batch size with one trace.
TensorSpec batch_spec(const Tensor& t) {
  std::vector<std::int64_t> dims = t.shape().dims();
  dims[0] = kDynamic;
  return {t.dtype(), Shape(dims), {}};
}

std::vector<TensorSpec> batch_specs(const std::vector<Tensor>& ts) {
  std::vector<TensorSpec> out;
  for (const auto& t : ts) out.push_back(batch_spec(t));
  return out;
}

Tensor rows(const Tensor& t, std::int64_t begin, std::int64_t end) { return slice(t, {begin}, {end}); }

std::vector<Tensor> rows(const std::vector<Tensor>& ts, std::int64_t begin, std::int64_t end) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(rows(t, begin, end));
  return out;
}

std::vector<Tensor> gathered(const std::vector<Tensor>& ts, const Tensor& idx) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(gather(t, idx, 0));
  return out;
}

StepData batch_rows(const StepData& d, std::int64_t begin, std::int64_t end) {
  return {rows(d.x, begin, end), rows(d.y, begin, end), rows(d.sample_weight, begin, end)};
}

// Rows [begin, end) of a concrete tensor as a view of its storage, no copy: the in-order
// batches of fit and evaluate, which the steps only read. (predict keeps copies: an output
// may be its input, and must not alias the caller's data.)
Tensor row_view(const Tensor& t, std::int64_t begin, std::int64_t end) {
  if (t.is_symbolic() || !t.impl().storage || t.rank() == 0) return rows(t, begin, end);
  std::vector<std::int64_t> dims = t.shape().dims();
  std::size_t row_bytes = size_of(t.dtype());
  for (std::size_t a = 1; a < dims.size(); ++a) row_bytes *= static_cast<std::size_t>(dims[a]);
  auto impl = new_tensor_impl(t.impl());
  impl->offset += static_cast<std::size_t>(begin) * row_bytes;
  dims[0] = end - begin;
  impl->shape = Shape(std::move(dims));
  return Tensor(std::move(impl));
}

std::vector<Tensor> row_views(const std::vector<Tensor>& ts, std::int64_t begin, std::int64_t end) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(row_view(t, begin, end));
  return out;
}

// Keras clamps the batch to the data: a batch_size of INT64_MAX over 10 examples is one batch.
std::int64_t clamped_batch(std::int64_t batch_size, std::int64_t n) { return std::max<std::int64_t>(1, std::min(batch_size, n)); }

// Validation data in the training data's dtypes (int32 labels for int64 ones, float64 inputs
// for float32), as Keras converts them, so the test step keeps one signature. A cast that
// could change values (floats to integers) is an error before training starts, as are
// per-example shapes that differ from the training data's.
Tensor conformed(const std::string& model, const std::string& what, const Tensor& v, const Tensor& train) {
  bool same_shape = v.rank() == train.rank();
  for (int a = 1; same_shape && a < v.rank(); ++a) same_shape = v.shape()[a] == train.shape()[a];
  if (!same_shape)
    fail(model, "validation " + what + " " + v.spec().str() + " do not match the training " + what + " " +
                    train.spec().str() + " (the same shape is needed apart from the batch axis)");
  if (v.dtype() == train.dtype()) return v;
  bool lossless = (is_integer(v.dtype()) && train.dtype() != DType::bool_) || (is_floating(v.dtype()) && is_floating(train.dtype()));
  if (!lossless)
    fail(kWrongType, model,
         "validation " + what + " are " + std::string(name_of(v.dtype())) + " but the training " + what + " are " +
             std::string(name_of(train.dtype())) + ": casting would change their values; pass them in one dtype");
  return cast(v, train.dtype());
}

std::vector<Tensor> conformed(const std::string& model, const std::string& what, const std::vector<Tensor>& v,
                              const std::vector<Tensor>& train) {
  if (v.size() != train.size())
    fail(model, "validation " + what + " has " + std::to_string(v.size()) + " tensors, the training data " +
                    std::to_string(train.size()));
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back(conformed(model, what, v[i], train[i]));
  return out;
}

// Every layer's trainable flag, depth first: freezing a layer after a fit must give a new
// train step (its trainable weights and a frozen BatchNormalization's mode are traced in).
void trainable_flags(const nn::Layer& layer, std::vector<bool>& out) {
  out.push_back(layer.trainable());
  for (const nn::Layer* child : layer.layers()) trainable_flags(*child, out);
}

// The number of examples in a batch, as a float64 scalar of the step (its batch dim is dynamic).
Tensor batch_count(const Tensor& t) { return sum(cast(slice(ef::shape(t), {0}, {1}), DType::float64)); }

double scalar_value(const Tensor& t) {
  Tensor v = t.num_elements() == 1 ? t : mean(cast(t, DType::float64));
  return cast(reshape(v, Shape{}), DType::float64).item<double>();
}

// Keras' class_weight: one weight per example from its label (a class index, or the argmax of
// a one-hot row); classes missing from the map weigh 1.
Tensor class_weights_for(const std::string& model, const Tensor& y, const std::map<std::int64_t, double>& class_weight) {
  Tensor labels = y;
  if (y.rank() == 2 && y.dim(1) > 1) labels = argmax(y, 1);
  else if (y.rank() == 2) labels = reshape(y, Shape{y.dim(0)});
  else if (y.rank() != 1)
    fail(model, "class_weight needs labels of shape [n], [n, 1] or one-hot [n, classes], got " + y.spec().str());
  std::vector<double> values = cast(labels, DType::float64).to_vector<double>();
  std::vector<float> weights(values.size(), 1.0f);
  for (std::size_t i = 0; i < values.size(); ++i) {
    auto it = class_weight.find(static_cast<std::int64_t>(std::llround(values[i])));
    if (it != class_weight.end()) weights[i] = static_cast<float>(it->second);
  }
  return tensor(weights);
}

// Data parallel (eagerflow/train/distribution.h): this rank's share of a global batch, and
// every rank's rows of a batch (for metrics over the global batch).
StepData local_share(const DistributionStrategy& s, const StepData& d) {
  auto [begin, end] = s.local_rows(0, d.x.at(0).dim(0));
  return batch_rows(d, begin, end);
}
std::vector<Tensor> all_rows(DistributionStrategy& s, const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const auto& t : ts) out.push_back(t.defined() ? s.gather_rows(t) : t);
  return out;
}

}  // namespace

Data::Data(const std::map<std::string, Tensor>& by_name) {
  for (const auto& [k, v] : by_name) {
    names.push_back(k);
    tensors.push_back(v);
  }
}

Model::Model(std::string name) : nn::Layer(std::move(name)) {}

std::vector<std::string> Model::input_names() const {
  if (graph_) return graph_->input_names();
  return {"input"};
}

std::vector<std::string> Model::output_names() const {
  if (graph_) return graph_->output_names();
  if (losses_.size() <= 1) return {"output"};
  std::vector<std::string> names;
  for (std::size_t i = 0; i < losses_.size(); ++i) names.push_back("output_" + std::to_string(i + 1));
  return names;
}

void Model::compile(std::shared_ptr<optim::Optimizer> optimizer, LossRef loss, std::vector<MetricRef> metrics, bool run_eagerly) {
  CompileOptions o;
  o.optimizer = std::move(optimizer);
  o.loss.push_back(std::move(loss));
  o.metrics = std::move(metrics);
  o.run_eagerly = run_eagerly;
  compile(std::move(o));
}

void Model::compile(const std::string& optimizer, LossRef loss, std::vector<MetricRef> metrics, bool run_eagerly) {
  compile(optim::optimizer_by_name(optimizer), std::move(loss), std::move(metrics), run_eagerly);
}

void Model::compile_with_metrics(std::shared_ptr<optim::Optimizer> optimizer, Loss loss,
                                 std::vector<std::shared_ptr<Metric>> metrics, bool run_eagerly) {
  std::vector<MetricRef> refs(metrics.begin(), metrics.end());
  compile(std::move(optimizer), LossRef(std::move(loss)), std::move(refs), run_eagerly);
}

void Model::compile(CompileOptions o) {
  if (!o.optimizer) fail(name(), "compile needs an optimizer");
  std::vector<std::string> outputs = output_names();
  // A model that is not functional learns its output count from the losses given.
  if (!graph_ && o.loss.size() > 1 && outputs.size() == 1) {
    outputs.clear();
    for (std::size_t i = 0; i < o.loss.size(); ++i) outputs.push_back("output_" + std::to_string(i + 1));
  }
  const std::size_t n = outputs.size();
  auto index_of = [&](const std::string& key, const char* what) {
    auto it = std::find(outputs.begin(), outputs.end(), key);
    if (it == outputs.end()) {
      std::string known;
      for (const auto& s : outputs) known += (known.empty() ? "" : ", ") + s;
      fail(name(), std::string(what) + " names an output '" + key + "' the model does not have (its outputs: " + known + ")");
    }
    return static_cast<std::size_t>(it - outputs.begin());
  };
  std::vector<OutputLoss> losses(n);
  if (!o.loss.empty() && !o.loss_by_output.empty()) fail(name(), "compile: give losses as a list or by output name, not both");
  if (o.loss.size() == 1) {
    for (auto& l : losses) l.loss = o.loss[0].loss;
  } else if (!o.loss.empty()) {
    if (o.loss.size() != n)
      fail(name(), "compile got " + std::to_string(o.loss.size()) + " losses for a model with " + std::to_string(n) + " outputs");
    for (std::size_t i = 0; i < n; ++i) losses[i].loss = o.loss[i].loss;
  }
  for (const auto& [key, l] : o.loss_by_output) losses[index_of(key, "loss")].loss = l.loss;
  if (std::none_of(losses.begin(), losses.end(), [](const OutputLoss& l) { return l.loss.has_value(); }))
    fail(name(), "compile needs a loss");
  if (!o.loss_weights.empty()) {
    if (o.loss_weights.size() != n)
      fail(name(), "compile got " + std::to_string(o.loss_weights.size()) + " loss_weights for " + std::to_string(n) + " outputs");
    for (std::size_t i = 0; i < n; ++i) losses[i].weight = o.loss_weights[i];
  }
  for (const auto& [key, w] : o.loss_weights_by_output) losses[index_of(key, "loss_weights")].weight = w;
  for (const auto& l : losses)
    if (!std::isfinite(l.weight)) fail(name(), "loss_weights must be finite");
  if (n > 1)
    for (std::size_t i = 0; i < n; ++i)
      if (losses[i].loss) losses[i].tracker = std::make_shared<Mean>(outputs[i] + "_loss");

  std::vector<OutputMetric> metrics;
  std::set<const Metric*> seen;
  auto add_metric = [&](std::size_t out, const MetricRef& ref, bool weighted = false) {
    std::shared_ptr<Metric> m;
    if (const auto* named = std::get_if<std::string>(&ref.value)) {
      std::string loss_name = losses[out].loss ? losses[out].loss->name() : "";
      m = metric_by_name(*named, loss_name);
    } else {
      m = std::get<std::shared_ptr<Metric>>(ref.value);
      if (!m) fail(name(), "compile got a null metric");
      if (!seen.insert(m.get()).second)
        fail(name(), "compile got the metric object '" + m->name() + "' twice (or for several outputs): its state "
                     "would mix; give each output its own object, or the metric by name");
    }
    std::string log = n > 1 ? outputs[out] + "_" + m->name() : m->name();
    metrics.push_back({out, m, log, weighted});
  };
  for (const auto& ref : o.metrics)
    for (std::size_t out = 0; out < n; ++out) add_metric(out, ref);
  for (const auto& [key, refs] : o.metrics_by_output)
    for (const auto& ref : refs) add_metric(index_of(key, "metrics"), ref);
  const std::size_t unweighted = metrics.size();
  for (const auto& ref : o.weighted_metrics)
    for (std::size_t out = 0; out < n; ++out) add_metric(out, ref, true);
  for (const auto& [key, refs] : o.weighted_metrics_by_output)
    for (const auto& ref : refs) add_metric(index_of(key, "weighted_metrics"), ref, true);
  // As tf.keras: a weighted metric named like an unweighted one reports as "weighted_<name>".
  for (std::size_t i = unweighted; i < metrics.size(); ++i) {
    auto& wm = metrics[i];
    bool clash = std::any_of(metrics.begin(), metrics.begin() + static_cast<std::ptrdiff_t>(unweighted),
                             [&](const OutputMetric& m) { return m.log_name == wm.log_name; });
    if (clash)
      wm.log_name = n > 1 ? outputs[wm.output] + "_weighted_" + wm.metric->name() : "weighted_" + wm.metric->name();
  }
  std::set<std::string> log_names{"loss"};
  for (const auto& l : losses)
    if (l.tracker) log_names.insert(l.tracker->name());
  for (const auto& m : metrics)
    if (!log_names.insert(m.log_name).second)
      fail(name(), "compile: two metrics would report as '" + m.log_name + "'; give one of them another name");

  optimizer_ = o.optimizer;  // compile_options() keeps it too (saving reads the settings from there)
  losses_ = std::move(losses);
  metrics_ = std::move(metrics);
  loss_tracker_ = std::make_shared<Mean>("loss");
  compile_options_ = std::move(o);
  std::lock_guard lock(steps_mutex_);
  train_ = nullptr;  // new steps for the new configuration
  test_ = nullptr;
}

void Model::set_distribution(std::shared_ptr<DistributionStrategy> strategy) {
  distribution_ = std::move(strategy);
  drop_steps();
}

void Model::drop_steps() {
  std::lock_guard lock(steps_mutex_);
  train_ = nullptr;
  test_ = nullptr;
  predict_ = nullptr;
}

void Model::require_compiled(const char* what) const {
  if (!compiled())
    fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::value_error), name(),
         std::string(what) + " needs compile(optimizer, loss) first");
}

std::vector<std::shared_ptr<Metric>> Model::metrics() const {
  std::vector<std::shared_ptr<Metric>> out;
  if (loss_tracker_) out.push_back(loss_tracker_);
  for (const auto& l : losses_)
    if (l.tracker) out.push_back(l.tracker);
  for (const auto& m : metrics_) out.push_back(m.metric);
  return out;
}

void Model::init_functional(std::vector<Tensor> inputs, std::vector<Tensor> outputs, std::vector<std::string> output_names) {
  if (graph_) fail(ErrorCode::failed_precondition, name(), "already has a functional graph");
  if (!layers().empty() || built())
    fail(ErrorCode::failed_precondition, name(), "init_functional must come before the model has layers or is called");
  auto graph = std::make_shared<const FunctionalGraph>(name(), std::move(inputs), std::move(outputs), std::move(output_names));
  for (const auto& layer : graph->layers()) {
    if (layer.get() == this) fail(name(), "a model cannot contain itself");
    track(*layer);
  }
  graph_ = std::move(graph);
}

std::vector<Tensor> Model::call_multi(const std::vector<Tensor>& inputs, bool training) {
  if (graph_) return graph_->run(name(), inputs);
  return {inputs.size() == 1 ? call(inputs[0], training) : call(inputs, training)};
}

Tensor Model::call(const Tensor& inputs, bool training) {
  if (!graph_) return nn::Layer::call(inputs, training);
  std::vector<Tensor> outs = graph_->run(name(), {inputs});
  if (outs.size() != 1) fail(name(), "has " + std::to_string(outs.size()) + " outputs; call_outputs(inputs) returns all of them");
  return outs[0];
}

Tensor Model::call(const std::vector<Tensor>& inputs, bool training) {
  if (!graph_) return nn::Layer::call(inputs, training);
  std::vector<Tensor> outs = graph_->run(name(), inputs);
  if (outs.size() != 1) fail(name(), "has " + std::to_string(outs.size()) + " outputs; call_outputs(inputs) returns all of them");
  return outs[0];
}

std::vector<std::string> Model::metrics_names() const {
  std::vector<std::string> out{"loss"};
  for (const auto& l : losses_)
    if (l.tracker) out.push_back(l.tracker->name());
  for (const auto& m : metrics_) out.push_back(m.log_name);
  return out;
}

std::vector<Tensor> Model::call_model(const std::vector<Tensor>& x, bool training) { return call_outputs(x, training); }

Tensor Model::compute_loss(const StepData& data, const std::vector<Tensor>& y_pred) {
  require_compiled("compute_loss");
  if (y_pred.size() != losses_.size())
    fail(name(), "gives " + std::to_string(y_pred.size()) + " outputs but was compiled for " + std::to_string(losses_.size()) +
                     " (give one loss per output, or one for all)");
  if (data.y.size() != y_pred.size())
    fail(name(), "got " + std::to_string(data.y.size()) + " targets (y) for " + std::to_string(y_pred.size()) + " outputs");
  Tensor total;
  for (std::size_t i = 0; i < losses_.size(); ++i) {
    const OutputLoss& l = losses_[i];
    if (!l.loss) continue;
    Tensor sw = data.sample_weight.empty() ? Tensor() : data.sample_weight[i];
    Tensor value = sw.defined() ? (*l.loss)(data.y[i], y_pred[i], sw) : (*l.loss)(data.y[i], y_pred[i]);
    if (l.tracker) {
      Tensor mean = value, count = batch_count(y_pred[i]);
      if (distribution_) std::tie(mean, count) = distribution_->global_mean(mean, count);  // over every rank's examples
      l.tracker->update_state_weighted(mean, count);
    }
    if (l.weight != 1.0) value = value * scalar(static_cast<float>(l.weight));
    total = total.defined() ? total + value : value;
  }
  for (const Tensor& extra : losses()) total = total + cast(sum(extra), total.dtype());
  return total;
}

// Reads data.y and data.sample_weight only: data parallel steps pass no x (gathering every
// rank's inputs would move the largest tensor of the step for nothing).
StepLogs Model::compute_metrics(const StepData& data, const std::vector<Tensor>& y_pred) {
  for (auto& m : metrics_) {
    Tensor sw = m.weighted && !data.sample_weight.empty() ? data.sample_weight.at(m.output) : Tensor();
    if (sw.defined())
      m.metric->update_state(data.y.at(m.output), y_pred.at(m.output), sw);
    else
      m.metric->update_state(data.y.at(m.output), y_pred.at(m.output));
  }
  StepLogs logs;
  logs["loss"] = loss_tracker_->result();
  for (const auto& l : losses_)
    if (l.tracker) logs[l.tracker->name()] = l.tracker->result();
  for (const auto& m : metrics_) logs[m.log_name] = m.metric->result();
  return logs;
}

StepLogs Model::train_step(const StepData& data) {
  GradientTape tape;
  std::vector<Tensor> y_pred = call_model(data.x, /*training=*/true);
  Tensor loss = compute_loss(data, y_pred);
  std::vector<Variable> vars = trainable_weights();
  std::vector<Tensor> grads = tape.gradient(optimizer_->scale_loss(loss), vars);
  Tensor count = batch_count(data.x.at(0));
  // Data parallel: the gradient of the mean over every rank's examples (fused all-reduces).
  if (distribution_) grads = distribution_->reduce_gradients(grads, count);
  optimizer_->apply_gradients(grads, vars);
  apply_constraints();  // Keras projects constrained weights right after the update
  if (distribution_) {  // logs of the global batch: the same on every rank
    std::tie(loss, count) = distribution_->global_mean(loss, count);
    loss_tracker_->update_state_weighted(loss, count);
    return compute_metrics({{}, all_rows(*distribution_, data.y), all_rows(*distribution_, data.sample_weight)},
                           all_rows(*distribution_, y_pred));
  }
  loss_tracker_->update_state_weighted(loss, count);
  return compute_metrics(data, y_pred);
}

StepLogs Model::test_step(const StepData& data) {
  std::vector<Tensor> y_pred = call_model(data.x, /*training=*/false);
  Tensor loss = compute_loss(data, y_pred);
  if (distribution_) {  // as train_step
    auto [mean, count] = distribution_->global_mean(loss, batch_count(data.x.at(0)));
    loss_tracker_->update_state_weighted(mean, count);
    return compute_metrics({{}, all_rows(*distribution_, data.y), all_rows(*distribution_, data.sample_weight)},
                           all_rows(*distribution_, y_pred));
  }
  loss_tracker_->update_state_weighted(loss, batch_count(data.x.at(0)));
  return compute_metrics(data, y_pred);
}

std::vector<Tensor> Model::predict_step(const std::vector<Tensor>& x) { return call_model(x, /*training=*/false); }

namespace {
// What a step is traced for: the batch specs of x, y and sample weights, and their counts.
std::vector<TensorSpec> step_signature(const StepData& example) {
  std::vector<TensorSpec> signature = batch_specs(example.x);
  for (const auto& s : batch_specs(example.y)) signature.push_back(s);
  for (const auto& s : batch_specs(example.sample_weight)) signature.push_back(s);
  signature.push_back(TensorSpec{DType::int32, Shape{static_cast<std::int64_t>(example.x.size()),
                                                     static_cast<std::int64_t>(example.y.size()),
                                                     static_cast<std::int64_t>(example.sample_weight.size())}, {}});
  return signature;
}
}  // namespace

struct Model::Step {
  using TrainOrTest = std::function<StepLogs(const StepData&)>;
  using Predict = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  TrainOrTest run;
  Predict predict;
  std::function<int()> count;
  std::function<std::vector<StepTrace>()> traces;  // the train step's, when traced
  std::vector<TensorSpec> signature;
  std::vector<bool> trainable_flags;  // of every layer, when the step was made
};

std::shared_ptr<const Model::Step> Model::current_step(const std::shared_ptr<const Step>& slot) const {
  std::lock_guard lock(steps_mutex_);
  return slot;
}

// The train and test steps are made (traced) each for its own data: validation data with
// sample weights, say, gives the test step its own signature and leaves the train step's trace.
// Under steps_mutex_: threads making the first call at once make one step (ef::function then
// traces it once); making only wraps the function, so the lock is held briefly.
std::shared_ptr<const Model::Step> Model::make_step(const StepData& example, bool train) {
  std::vector<TensorSpec> signature = step_signature(example);
  std::vector<bool> flags;
  trainable_flags(*this, flags);
  std::lock_guard lock(steps_mutex_);
  std::shared_ptr<const Step>& slot = train ? train_ : test_;
  if (slot && signature == slot->signature && flags == slot->trainable_flags) return slot;
  auto made = std::make_shared<Step>();
  made->signature = std::move(signature);
  made->trainable_flags = std::move(flags);
  std::function<StepLogs(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&)> step;
  if (train)
    step = [this](const std::vector<Tensor>& x, const std::vector<Tensor>& y, const std::vector<Tensor>& sw) {
      return train_step(StepData{x, y, sw});
    };
  else
    step = [this](const std::vector<Tensor>& x, const std::vector<Tensor>& y, const std::vector<Tensor>& sw) {
      return test_step(StepData{x, y, sw});
    };
  if (compile_options_.run_eagerly) {
    made->run = [step](const StepData& d) { return step(d.x, d.y, d.sample_weight); };
    made->count = [] { return 0; };
    slot = made;
    return slot;
  }
  FunctionOptions options;
  options.input_signature =
      InputSignature{ArgSpec(batch_specs(example.x)), ArgSpec(batch_specs(example.y)), ArgSpec(batch_specs(example.sample_weight))};
  options.arg_names = {"x", "y", "sample_weight"};
  options.name = name() + (train ? "/train_step" : "/test_step");
  auto traced = function(step, options);
  made->run = [traced](const StepData& d) { return traced(d.x, d.y, d.sample_weight); };
  made->count = [traced] { return traced.tracing_count(); };
  if (train)
    made->traces = [traced] {
      std::vector<TraceRecord> records = traced.traces();
      auto functions = traced.concrete_functions();
      // Traces evicted from the cache (max_traces) have no function; the cached are the latest.
      std::size_t evicted = records.size() - std::min(records.size(), functions.size());
      std::vector<StepTrace> out;
      for (std::size_t i = 0; i < records.size(); ++i)
        out.push_back({records[i].number, records[i].reason, records[i].signature, i >= evicted ? functions[i - evicted] : nullptr});
      return out;
    };
  slot = made;
  return slot;
}

std::shared_ptr<const Model::Step> Model::make_predict_step(const std::vector<TensorSpec>& signature) {
  std::lock_guard lock(steps_mutex_);
  if (predict_ && predict_->signature == signature) return predict_;
  auto made = std::make_shared<Step>();
  made->signature = signature;
  if (compile_options_.run_eagerly) {
    made->predict = [this](const std::vector<Tensor>& x) { return predict_step(x); };
    made->count = [] { return 0; };
  } else {
    FunctionOptions options;
    options.input_signature = InputSignature{ArgSpec(signature)};
    options.arg_names = {"x"};
    options.name = name() + "/predict_step";
    auto fn = function([this](const std::vector<Tensor>& x) { return predict_step(x); }, options);
    made->predict = [fn](const std::vector<Tensor>& x) { return fn(x); };
    made->count = [fn] { return fn.tracing_count(); };
  }
  predict_ = made;
  return predict_;
}

std::vector<StepTrace> Model::train_step_traces() const {
  auto step = current_step(train_);
  return step && step->traces ? step->traces() : std::vector<StepTrace>{};
}

int Model::tracing_count() const {
  auto step = current_step(train_);
  return step ? step->count() : 0;
}
int Model::test_tracing_count() const {
  auto step = current_step(test_);
  return step ? step->count() : 0;
}
int Model::predict_tracing_count() const {
  auto step = current_step(predict_);
  return step ? step->count() : 0;
}

void Model::reset_metrics() {
  for (auto& m : metrics()) m->reset_state();
}

Logs Model::to_logs(const StepLogs& logs) const {
  Logs out;
  for (const auto& [k, v] : logs)
    if (v.defined() && v.num_elements() >= 1) out[k] = scalar_value(v);
  return out;
}

StepLogs Model::run_train(const StepData& batch) {
  // A callback may compile the model again during fit: the next batch runs the new steps.
  auto step = current_step(train_);
  if (!step) step = make_step(batch, true);
  return step->run(batch);
}

StepLogs Model::run_test(const StepData& batch) {
  auto step = current_step(test_);
  if (!step) step = make_step(batch, false);
  return step->run(batch);
}

std::vector<Tensor> Model::order_by_name(const char* what, const Data& d, const std::vector<std::string>& names) const {
  if (d.names.empty()) return d.tensors;
  std::vector<Tensor> out(names.size());
  for (std::size_t i = 0; i < d.names.size(); ++i) {
    auto it = std::find(names.begin(), names.end(), d.names[i]);
    if (it == names.end()) {
      std::string known;
      for (const auto& s : names) known += (known.empty() ? "" : ", ") + s;
      fail(name(), std::string(what) + " has a key '" + d.names[i] + "' that is not one of the model's names (" + known + ")");
    }
    out[static_cast<std::size_t>(it - names.begin())] = d.tensors[i];
  }
  for (std::size_t i = 0; i < names.size(); ++i)
    if (!out[i].defined()) fail(name(), std::string(what) + " has no entry for '" + names[i] + "'");
  return out;
}

StepData Model::conform(const char* what, const Data& x, const Data& y, const Data& sample_weight, bool need_y) const {
  StepData d;
  const std::vector<std::string> in_names = input_names(), out_names = output_names();
  const bool fixed_inputs = graph_ != nullptr;
  d.x = order_by_name("x", x, in_names);
  if (d.x.empty()) fail(name(), std::string(what) + " needs inputs x");
  if (fixed_inputs && d.x.size() != in_names.size())
    fail(name(), std::string(what) + " got " + std::to_string(d.x.size()) + " input tensors for a model with " +
                     std::to_string(in_names.size()) + " inputs");
  std::size_t n_out = losses_.empty() ? out_names.size() : losses_.size();
  if (need_y) {
    d.y = order_by_name("y", y, out_names);
    if (d.y.size() != n_out)
      fail(name(), std::string(what) + " got " + std::to_string(d.y.size()) + " targets (y) for a model with " +
                       std::to_string(n_out) + " outputs");
    if (!sample_weight.empty()) {
      std::vector<Tensor> sw = order_by_name("sample_weight", sample_weight, out_names);
      if (sw.size() == 1 && n_out > 1) sw.assign(n_out, sw[0]);  // one weight per example for every output
      if (sw.size() != n_out)
        fail(name(), std::string(what) + " got " + std::to_string(sw.size()) + " sample weights for " + std::to_string(n_out) + " outputs");
      for (auto& w : sw) w = cast(w, DType::float32);
      d.sample_weight = std::move(sw);
    }
  }
  auto check = [&](const char* kind, const std::vector<Tensor>& ts) {
    for (const auto& t : ts) {
      if (!t.defined()) fail(name(), std::string(what) + ": " + kind + " has an undefined tensor");
      if (t.is_symbolic() || t.is_keras_tensor())
        fail(name(), std::string(what) + ": " + kind + " must be concrete data, got a placeholder " + t.spec().str());
      if (t.rank() < 1) fail(name(), std::string(what) + ": " + kind + " need a batch axis, got " + t.spec().str());
      if (t.dim(0) != d.x[0].dim(0))
        fail(name(), std::string(what) + ": x and y have different numbers of examples: " + d.x[0].spec().str() + " vs " +
                         std::string(kind) + " " + t.spec().str());
    }
  };
  check("x", d.x);
  check("y", d.y);
  check("sample_weight", d.sample_weight);
  for (const auto& w : d.sample_weight)
    if (w.rank() > 2 || (w.rank() == 2 && w.dim(1) != 1))
      fail(name(), std::string(what) + ": a sample_weight is [n] or [n, 1], got " + w.spec().str());
  return d;
}

Logs Model::train_on_batch(const Data& x, const Data& y, const Data& sample_weight) {
  require_compiled("train_on_batch");
  StepData d = conform("train_on_batch", x, y, sample_weight, true);
  // The mean loss of no examples is 0/0: a step on it would turn every weight into NaN.
  if (d.x[0].dim(0) == 0) fail(name(), "train_on_batch got no examples (x is " + d.x[0].spec().str() + ")");
  make_step(d, true);
  reset_metrics();
  return to_logs(run_train(d));
}

Logs Model::test_on_batch(const Data& x, const Data& y, const Data& sample_weight) {
  require_compiled("test_on_batch");
  StepData d = conform("test_on_batch", x, y, sample_weight, true);
  if (d.x[0].dim(0) == 0) fail(name(), "test_on_batch got no examples (x is " + d.x[0].spec().str() + ")");
  make_step(d, false);
  reset_metrics();
  return to_logs(run_test(d));
}

Logs Model::evaluate(const Data& x, const Data& y, std::int64_t batch_size, int verbose, const Data& sample_weight) {
  return evaluate(x, y, EvaluateOptions{batch_size, verbose, sample_weight, {}, -1});
}

Logs Model::evaluate(const Data& x, const Data& y, const EvaluateOptions& o) {
  require_compiled("evaluate");
  StepData d = conform("evaluate", x, y, o.sample_weight, true);
  if (o.batch_size < 1) fail(name(), "batch_size must be at least 1, got " + std::to_string(o.batch_size));
  std::int64_t n = d.x[0].dim(0);
  if (n == 0) fail(name(), "evaluate got no examples (x is " + d.x[0].spec().str() + "): there is no loss to report");
  detail::ArrayBatches source(d, clamped_batch(o.batch_size, n), /*shuffle=*/false);
  return evaluate_batches(source, o.verbose, o.callbacks);
}

Logs Model::evaluate_batches(detail::BatchSource& source, int verbose, const std::vector<std::shared_ptr<Callback>>& given) {
  if (distribution_ && !distribution_->is_root()) verbose = 0;  // data parallel: rank 0 prints
  CallbackList callbacks(given, /*add_history=*/false, /*add_progbar=*/verbose != 0, this, CallbackParams{verbose, 1, source.steps()});
  return evaluate_batches(source, callbacks);
}

// evaluate's loop; fit's validation too, calling fit's callbacks (as Keras 3).
Logs Model::evaluate_batches(detail::BatchSource& source, CallbackList& callbacks) {
  source.begin_epoch();
  reset_metrics();
  callbacks.on_test_begin();
  const bool batch_logs = callbacks.uses_batch_logs();
  StepLogs last;
  StepData batch;
  std::int64_t steps = 0;
  for (; source.next(batch); ++steps) {
    if (steps > 0) check_interrupt();  // Ctrl-C stops between batches
    if (distribution_) batch = local_share(*distribution_, batch);
    if (steps == 0) make_step(batch, false);
    callbacks.on_test_batch_begin(static_cast<int>(steps));
    last = run_test(batch);
    callbacks.on_test_batch_end(static_cast<int>(steps), batch_logs ? to_logs(last) : Logs());
  }
  if (steps == 0) fail(name(), "evaluate got no batches: there is no loss to report");
  Logs logs = to_logs(last);
  callbacks.on_test_end(logs);
  return logs;
}

std::vector<Tensor> Model::predict_outputs(const Data& x, std::int64_t batch_size) {
  return predict_outputs(x, PredictOptions{batch_size, 0, {}});
}

std::vector<Tensor> Model::predict_outputs(const Data& x_data, const PredictOptions& o) {
  if (o.batch_size < 1) fail(name(), "batch_size must be at least 1, got " + std::to_string(o.batch_size));
  StepData d = conform("predict", x_data, Data(), Data(), false);
  std::int64_t n = d.x[0].dim(0);
  for (const auto& t : d.x)
    if (t.dim(0) != n) fail(name(), "predict: the inputs have different numbers of examples");
  // This call keeps its step alive, whatever another thread's call makes meanwhile.
  std::shared_ptr<const Step> step = make_predict_step(batch_specs(d.x));
  if (n == 0) return step->predict(d.x);
  const std::int64_t batch_size = clamped_batch(o.batch_size, n);
  const int verbose = distribution_ && !distribution_->is_root() ? 0 : o.verbose;  // data parallel: rank 0 prints
  CallbackList callbacks(o.callbacks, /*add_history=*/false, /*add_progbar=*/verbose != 0, this,
                         CallbackParams{verbose, 1, (n + batch_size - 1) / batch_size});
  callbacks.on_predict_begin();
  std::vector<std::vector<Tensor>> parts;
  for (std::int64_t b = 0; b < n; b += batch_size) {
    if (b > 0) check_interrupt();  // Ctrl-C stops between batches
    const int index = static_cast<int>(b / batch_size);
    callbacks.on_predict_batch_begin(index);
    std::int64_t begin = b, end = std::min(n, b + batch_size);
    // Data parallel: each rank predicts its share of the batch; the rows are gathered.
    if (distribution_) std::tie(begin, end) = distribution_->local_rows(begin, end);
    parts.push_back(step->predict(rows(d.x, begin, end)));
    if (distribution_) parts.back() = all_rows(*distribution_, parts.back());
    callbacks.on_predict_batch_end(index);
  }
  callbacks.on_predict_end();
  std::vector<Tensor> outs;
  for (std::size_t i = 0; i < parts[0].size(); ++i) {
    std::vector<Tensor> pieces;
    for (const auto& p : parts) pieces.push_back(p[i]);
    outs.push_back(pieces.size() == 1 ? pieces[0] : concat(pieces, 0));
  }
  return outs;
}

Tensor Model::predict(const Data& x, std::int64_t batch_size) {
  std::vector<Tensor> outs = predict_outputs(x, batch_size);
  if (outs.size() != 1)
    fail(name(), "has " + std::to_string(outs.size()) + " outputs; predict_outputs(x) returns all of them");
  return outs[0];
}

void Model::build(const Shape& input_shape) { build(std::vector<Shape>{input_shape}); }

void Model::build(const std::vector<Shape>& input_shapes) {
  // From a first call the call itself builds the sub-layers; from the user, a symbolic call
  // (nothing runs) does, as Keras' Model.build.
  if (building_for_call() || building_) return;
  std::vector<TensorSpec> specs;
  for (const auto& s : input_shapes) specs.push_back(TensorSpec{DType::float32, s, {}});
  build_for_specs(specs);
}

void Model::build_for_specs(const std::vector<TensorSpec>& input_specs) {
  if (building_for_call() || building_) return;
  if (input_specs.empty()) fail(name(), "build needs an input shape");
  building_ = true;
  try {
    trace::TraceContext ctx(name() + "/build", /*allow_variable_creation=*/true);
    trace::TraceScope scope(ctx);
    std::vector<Tensor> inputs;
    for (const auto& spec : input_specs) {
      if (spec.shape.rank() < 1)
        fail(name(), "build takes the input shape with its batch axis (kDynamic for any), got " + spec.shape.str());
      inputs.push_back(ctx.add_input(spec));
    }
    call_outputs(inputs, false);
  } catch (...) {
    building_ = false;
    throw;
  }
  building_ = false;
}

History Model::fit(const Data& x, const Data& y, const FitOptions& o) {
  if (!distribution_) return fit_arrays(x, y, o);
  try {
    begin_distributed_fit(x);
    return fit_arrays(x, y, o);
  } catch (const std::exception& e) {
    distribution_->on_fit_error(e);  // DataParallel ends the job here (MPI_Abort)
    throw;
  }
}

void Model::begin_distributed_fit(const Data& x) {
  if (!built() && x.empty())
    fail(ErrorCode::failed_precondition, name(), "fit(dataset) with a DataParallel strategy needs the model built first (model.build(shape), or "
                 "call it once), so that rank 0's weights can be broadcast before training");
  if (!built()) {
    // The weights must exist before rank 0's are broadcast: a predict on one example builds them.
    Data one = x;
    for (Tensor& t : one.tensors)
      if (t.defined() && t.rank() >= 1 && t.dim(0) > 0) t = slice(t, {0}, {1});
    predict_outputs(one, 1);
  }
  distribution_->on_fit_begin(*this);
}

History Model::fit_arrays(const Data& x_in, const Data& y_in, const FitOptions& o) {
  require_compiled("fit");
  if (!o.class_weight.empty() && !o.sample_weight.empty())
    fail(name(), "fit got both class_weight and sample_weight; give one (Keras does not combine them)");
  StepData all = conform("fit", x_in, y_in, o.sample_weight, true);
  if (!o.class_weight.empty()) {
    if (all.y.size() != 1) fail(name(), "class_weight is for models with one output; use sample_weight per output");
    all.sample_weight = {class_weights_for(name(), all.y[0], o.class_weight)};
  }
  if (o.batch_size < 1) fail(name(), "batch_size must be at least 1, got " + std::to_string(o.batch_size));
  if (o.epochs < 0) fail(name(), "epochs must be >= 0");
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0))
    fail(name(), "validation_split must be in [0, 1), got " + std::to_string(o.validation_split));
  // Keras takes the validation split from the end, before shuffling.
  StepData train = all;
  std::optional<StepData> validation;
  std::int64_t n_all = all.x[0].dim(0);
  if (o.validation_split > 0 && !o.validation_data) {
    std::int64_t n_val = static_cast<std::int64_t>(std::floor(static_cast<double>(n_all) * o.validation_split));
    std::int64_t n_train = n_all - n_val;
    if (n_val == 0 || n_train == 0) fail(name(), "validation_split leaves no examples on one side");
    train = batch_rows(all, 0, n_train);
    validation = batch_rows(all, n_train, n_all);
  }
  if (o.validation_data && !o.validation_data->dataset) {
    StepData v = conform("validation_data", o.validation_data->x, o.validation_data->y, o.validation_data->sample_weight, true);
    if (v.x[0].dim(0) == 0) fail(name(), "validation_data has no examples");
    v.x = conformed(name(), "inputs", v.x, train.x);
    v.y = conformed(name(), "labels", v.y, train.y);
    validation = std::move(v);  // with or without sample weights: the test step is traced for its own data
  }
  std::int64_t n = train.x[0].dim(0);
  if (n == 0) fail(name(), "fit got no examples");
  const std::int64_t batch_size = clamped_batch(o.batch_size, n);
  detail::ArrayBatches train_batches(std::move(train), batch_size, o.shuffle);
  std::optional<detail::ArrayBatches> validation_batches;
  std::optional<detail::DatasetBatches> validation_dataset;
  detail::BatchSource* val = nullptr;
  if (validation) {
    std::int64_t n_val = validation->x[0].dim(0);
    val = &validation_batches.emplace(std::move(*validation), clamped_batch(batch_size, n_val), false);
  } else if (o.validation_data && o.validation_data->dataset) {
    val = &validation_dataset.emplace(*this, *o.validation_data->dataset, o.validation_steps, "validation_data", true);
  }
  return fit_batches(train_batches, val, o);
}

// ---------------------------------------------------------------- the training loop
// fit's epochs over batches from any source: in-memory arrays or a Dataset. The order of the
// callbacks' hooks is Keras 3's (keras/src/backend/tensorflow/trainer.py): the progress bar and
// History are callbacks too, added after the user's.
History Model::fit_batches(detail::BatchSource& source, detail::BatchSource* validation, const FitOptions& o) {
  const int verbose = distribution_ && !distribution_->is_root() ? 0 : o.verbose;  // data parallel: rank 0 prints
  CallbackList callbacks(o.callbacks, /*add_history=*/true, /*add_progbar=*/verbose != 0, this,
                         CallbackParams{verbose, o.epochs, source.steps()});
  stop_training = false;
  if (o.initial_epoch < 0 || o.initial_epoch > o.epochs)
    fail(name(), "initial_epoch " + std::to_string(o.initial_epoch) + " is outside [0, epochs=" + std::to_string(o.epochs) + "]");
  resume_epoch = -1;
  callbacks.on_train_begin();
  int first_epoch = resume_epoch >= 0 ? std::min(resume_epoch, o.epochs) : o.initial_epoch;
  resume_epoch = -1;
  bool first_batch = true;
  for (int epoch = first_epoch; epoch < o.epochs && !stop_training; ++epoch) {
    callbacks.on_epoch_begin(epoch);
    reset_metrics();
    source.begin_epoch();
    const bool batch_logs = callbacks.uses_batch_logs();
    StepLogs last;
    StepData batch;
    std::int64_t b = 0;
    for (;; ++b) {
      if (!source.next(batch)) break;
      // Ctrl-C stops between batches, the weights as the last step left them (as Keras).
      if (!first_batch) check_interrupt();
      if (distribution_) batch = local_share(*distribution_, batch);  // this rank's share of the global batch
      callbacks.on_train_batch_begin(static_cast<int>(b));
      // Each fit checks the step against its data once (a new dtype or a frozen layer traces a
      // new step; the same data keeps the trace).
      if (first_batch) make_step(batch, true);
      first_batch = false;
      last = run_train(batch);
      callbacks.on_train_batch_end(static_cast<int>(b), batch_logs ? to_logs(last) : Logs());
      if (stop_training) {  // a callback stopped the run mid-epoch (TerminateOnNaN), as Keras
        ++b;
        break;
      }
    }
    if (b == 0) {
      if (epoch == first_epoch && !source.exhausted()) fail(name(), "fit got no batches from its data");
      std::cout << std::flush;
      std::cerr << "[fit] the input ran out of data after " << epoch << " epoch(s): training stops (give the dataset "
                << "repeat() or fewer steps_per_epoch)\n";
      break;
    }
    Logs logs = to_logs(last);
    if (validation) {
      // Every value the test step logs, as Keras (a custom test_step's own keys too).
      Logs val = evaluate_batches(*validation, callbacks);
      for (const auto& [k, v] : val) logs["val_" + k] = v;
    }
    if (distribution_) distribution_->on_epoch_end(*this);  // before the callbacks see the model
    callbacks.on_epoch_end(epoch, logs);
    if (source.exhausted()) {
      std::cerr << "[fit] the input ran out of data during epoch " << epoch + 1 << ": training stops\n";
      break;
    }
  }
  callbacks.on_train_end();
  return *callbacks.history();
}

// ---------------------------------------------------------------- ArrayBatches
namespace detail {

ArrayBatches::ArrayBatches(StepData data, std::int64_t batch_size, bool shuffle)
    : data_(std::move(data)), n_(data_.x[0].dim(0)), batch_size_(batch_size), shuffle_(shuffle) {}

void ArrayBatches::begin_epoch() {
  step_ = 0;
  if (!shuffle_) return;
  order_.resize(static_cast<std::size_t>(n_));
  std::iota(order_.begin(), order_.end(), 0);
  // Each epoch's order draws from ef's generator when the epoch starts: set_seed repeats a
  // fit, and a run restored from a checkpoint (with the generator's state) shuffles its next
  // epoch as the uninterrupted run would have.
  std::mt19937_64 rng(static_cast<std::uint64_t>(random::uniform({}, 0.0, 1.0, DType::float64).item<double>() * 9007199254740992.0));
  std::shuffle(order_.begin(), order_.end(), rng);
}

bool ArrayBatches::next(StepData& batch) {
  std::int64_t begin = step_ * batch_size_;
  if (begin >= n_) return false;
  std::int64_t end = std::min(n_, begin + batch_size_);
  ++step_;
  if (shuffle_) {
    Tensor idx = tensor(std::vector<std::int64_t>(order_.begin() + begin, order_.begin() + end));
    batch = {gathered(data_.x, idx), gathered(data_.y, idx), gathered(data_.sample_weight, idx)};
  } else {
    batch = {row_views(data_.x, begin, end), row_views(data_.y, begin, end), row_views(data_.sample_weight, begin, end)};
  }
  return true;
}

}  // namespace detail

void Model::summary() const { summary(std::cout); }

void Model::summary(std::ostream& os) const {
  if (graph_) return graph_->summary(os, *this);
  auto count = [](const std::vector<Variable>& vs) {
    std::int64_t n = 0;
    for (const auto& v : vs) n += v.shape().num_elements();
    return n;
  };
  auto with_commas = [](std::int64_t v) {
    std::string s = std::to_string(v);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
    return s;
  };
  auto shape_text = [](const std::optional<TensorSpec>& spec) -> std::string {
    if (!spec) return "(unbuilt)";
    std::string s = "(None";
    for (int a = 1; a < spec->shape.rank(); ++a) s += ", " + (spec->shape[a] == kDynamic ? std::string("None") : std::to_string(spec->shape[a]));
    return s + (spec->shape.rank() == 1 ? ",)" : ")");
  };
  std::string rule(65, '_'), double_rule(65, '=');
  os << "Model: \"" << name() << "\"\n" << rule << "\n";
  os << std::left << std::setw(29) << " Layer (type)" << std::setw(26) << "Output Shape" << "Param #\n" << double_rule << "\n";
  for (const nn::Layer* l : layers()) {
    os << std::left << std::setw(29) << (" " + l->name() + " (" + l->type_name() + ")") << std::setw(26)
       << shape_text(l->output_spec()) << with_commas(count(l->weights())) << "\n";
  }
  std::int64_t trainable = count(trainable_weights()), frozen = count(non_trainable_weights());
  os << double_rule << "\nTotal params: " << with_commas(trainable + frozen) << "\nTrainable params: " << with_commas(trainable)
     << "\nNon-trainable params: " << with_commas(frozen) << "\n" << rule << "\n";
}

// ---------------------------------------------------------------- Sequential
Sequential::Sequential(std::string name) : Model(std::move(name)) {}

Sequential::Sequential(std::vector<std::shared_ptr<nn::Layer>> layers, std::string name) : Model(std::move(name)) {
  for (auto& l : layers) add(std::move(l));
  // Keras 2: a first layer with input_shape= builds the model at once, as an Input would.
  if (!stack_.empty() && stack_.front()->declared_input_shape()) build(*stack_.front()->declared_input_shape());
}

void Sequential::add(std::shared_ptr<nn::Layer> layer) {
  if (!layer) fail(name(), "cannot add a null layer");
  stack_.push_back(std::move(layer));
  track(*stack_.back());  // sub-layer from the start: summary lists it, its weights belong to the model
}

Tensor Sequential::call(const Tensor& inputs, bool training) {
  if (stack_.empty()) fail(name(), "a Sequential model needs at least one layer");
  Tensor x = inputs;
  for (auto& l : stack_) x = (*l)(x, training);
  return x;
}

}  // namespace ef::train
