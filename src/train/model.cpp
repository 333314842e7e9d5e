#include "eagerflow/train/model.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>

#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/function/function.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"
#include "train/progress_bar.h"

namespace ef::train {
namespace {

// [n, ...] -> [?, ...]: the steps take any batch size with one trace.
TensorSpec batch_spec(const Tensor& t) {
  std::vector<std::int64_t> dims = t.shape().dims();
  dims[0] = kDynamic;
  return {t.dtype(), Shape(dims), {}};
}

void expect_batched(const std::string& what, const Tensor& x, const Tensor& y) {
  if (!x.defined() || !y.defined()) fail("fit", what + ": x and y must be defined tensors");
  if (x.rank() < 1 || y.rank() < 1) fail("fit", what + ": x and y need a batch axis, got " + x.spec().str() + " and " + y.spec().str());
  if (x.dim(0) != y.dim(0))
    fail("fit", what + ": x and y have different numbers of examples: " + x.spec().str() + " vs " + y.spec().str());
}

Tensor rows(const Tensor& t, std::int64_t begin, std::int64_t end) { return slice(t, {begin}, {end}); }

// Keras clamps the batch to the data: a batch_size of INT64_MAX over 10 examples is one batch.
std::int64_t clamped_batch(std::int64_t batch_size, std::int64_t n) { return std::max<std::int64_t>(1, std::min(batch_size, n)); }

// Validation data in the training data's dtypes (int32 labels for int64 ones, float64 inputs
// for float32), as Keras converts them, so the test step keeps one signature. A cast that
// could change values (floats to integers) is an error before training starts, as are
// per-example shapes that differ from the training data's.
Tensor conformed(const std::string& model, const char* what, const Tensor& v, const Tensor& train) {
  bool same_shape = v.rank() == train.rank();
  for (int a = 1; same_shape && a < v.rank(); ++a) same_shape = v.shape()[a] == train.shape()[a];
  if (!same_shape)
    fail(model, std::string("validation ") + what + " " + v.spec().str() + " do not match the training " + what + " " +
                    train.spec().str() + " (the same shape is needed apart from the batch axis)");
  if (v.dtype() == train.dtype()) return v;
  bool lossless = (is_integer(v.dtype()) && train.dtype() != DType::bool_) || (is_floating(v.dtype()) && is_floating(train.dtype()));
  if (!lossless)
    fail(model, std::string("validation ") + what + " are " + std::string(name_of(v.dtype())) + " but the training " + what + " are " +
                    std::string(name_of(train.dtype())) + ": casting would change their values; pass them in one dtype");
  return cast(v, train.dtype());
}

// Every layer's trainable flag, depth first: freezing a layer after a fit must give a new
// train step (its trainable weights and a frozen BatchNormalization's mode are traced in).
void trainable_flags(const nn::Layer& layer, std::vector<bool>& out) {
  out.push_back(layer.trainable());
  for (const nn::Layer* child : layer.layers()) trainable_flags(*child, out);
}

bool stdout_is_terminal() { return isatty(fileno(stdout)) != 0; }

}  // namespace

Model::Model(std::string name) : nn::Layer(std::move(name)) {}

void Model::compile(std::shared_ptr<optim::Optimizer> optimizer, Loss loss, std::vector<std::string> metrics,
                    bool run_eagerly) {
  std::vector<std::shared_ptr<Metric>> objects;
  for (const auto& m : metrics) objects.push_back(metric_by_name(m, loss.name()));
  compile_with_metrics(std::move(optimizer), std::move(loss), std::move(objects), run_eagerly);
}

void Model::compile_with_metrics(std::shared_ptr<optim::Optimizer> optimizer, Loss loss,
                                 std::vector<std::shared_ptr<Metric>> metrics, bool run_eagerly) {
  if (!optimizer) fail(this->name(), "compile needs an optimizer");
  for (const auto& m : metrics)
    if (!m) fail(this->name(), "compile got a null metric");
  optimizer_ = std::move(optimizer);
  loss_tracker_ = std::make_shared<Mean>("loss");
  metrics_ = std::move(metrics);
  loss_ = std::move(loss);
  run_eagerly_ = run_eagerly;
  train_step_ = nullptr;  // new steps for the new configuration
  test_step_ = nullptr;
}

void Model::require_compiled(const char* what) const {
  if (!optimizer_ || !loss_) fail(name(), std::string(what) + " needs compile(optimizer, loss) first");
}

void Model::make_steps(const Tensor& x, const Tensor& y) {
  std::vector<TensorSpec> signature{batch_spec(x), batch_spec(y)};
  std::vector<bool> flags;
  trainable_flags(*this, flags);
  if (train_step_ && signature == step_signature_ && flags == trainable_flags_) return;
  step_signature_ = signature;
  trainable_flags_ = std::move(flags);
  auto train = [this](const Tensor& xb, const Tensor& yb) -> std::vector<Tensor> {
    GradientTape tape;
    Tensor pred = (*this)(xb, /*training=*/true);
    Tensor loss = (*loss_)(yb, pred);
    std::vector<Variable> vars = trainable_weights();
    optimizer_->apply_gradients(tape.gradient(loss, vars), vars);
    Tensor batch = sum(cast(slice(ef::shape(xb), {0}, {1}), DType::float64));
    loss_tracker_->update_state_weighted(loss, batch);
    for (auto& m : metrics_) m->update_state(yb, pred);
    return {loss};
  };
  auto test = [this](const Tensor& xb, const Tensor& yb) -> std::vector<Tensor> {
    Tensor pred = (*this)(xb, /*training=*/false);
    Tensor loss = (*loss_)(yb, pred);
    Tensor batch = sum(cast(slice(ef::shape(xb), {0}, {1}), DType::float64));
    loss_tracker_->update_state_weighted(loss, batch);
    for (auto& m : metrics_) m->update_state(yb, pred);
    return {loss};
  };
  if (run_eagerly_) {
    train_step_ = train;
    test_step_ = test;
    train_count_ = test_count_ = [] { return 0; };
    return;
  }
  FunctionOptions options;
  options.input_signature = InputSignature(signature);
  options.arg_names = {"x", "y"};
  options.name = name() + "/train_step";
  auto train_fn = function(train, options);
  options.name = name() + "/test_step";
  auto test_fn = function(test, options);
  train_step_ = [train_fn](const Tensor& a, const Tensor& b) { return train_fn(a, b); };
  test_step_ = [test_fn](const Tensor& a, const Tensor& b) { return test_fn(a, b); };
  train_count_ = [train_fn] { return train_fn.tracing_count(); };
  test_count_ = [test_fn] { return test_fn.tracing_count(); };
}

int Model::tracing_count() const { return train_count_ ? train_count_() : 0; }
int Model::test_tracing_count() const { return test_count_ ? test_count_() : 0; }

void Model::reset_metrics() {
  loss_tracker_->reset_state();
  for (auto& m : metrics_) m->reset_state();
}

Logs Model::read_metrics(const std::string& prefix) const {
  Logs logs;
  logs[prefix + "loss"] = loss_tracker_->result().item<float>();
  for (const auto& m : metrics_) logs[prefix + m->name()] = m->result().item<float>();
  return logs;
}

std::vector<Tensor> Model::run_step(bool train, const Tensor& x, const Tensor& y) {
  // A callback may compile the model again during fit: the next batch runs the new steps.
  if (!train_step_) make_steps(x, y);
  return train ? train_step_(x, y) : test_step_(x, y);
}

Logs Model::train_on_batch(const Tensor& x, const Tensor& y) {
  require_compiled("train_on_batch");
  expect_batched("train_on_batch", x, y);
  // The mean loss of no examples is 0/0: a step on it would turn every weight into NaN.
  if (x.dim(0) == 0) fail(name(), "train_on_batch got no examples (x is " + x.spec().str() + ")");
  make_steps(x, y);
  reset_metrics();
  run_step(true, x, y);
  return read_metrics("");
}

Logs Model::evaluate(const Tensor& x, const Tensor& y, std::int64_t batch_size, int verbose) {
  require_compiled("evaluate");
  expect_batched("evaluate", x, y);
  if (batch_size < 1) fail(name(), "batch_size must be at least 1, got " + std::to_string(batch_size));
  std::int64_t n = x.dim(0);
  if (n == 0) fail(name(), "evaluate got no examples (x is " + x.spec().str() + "): there is no loss to report");
  batch_size = clamped_batch(batch_size, n);
  make_steps(x, y);
  reset_metrics();
  std::int64_t steps = (n + batch_size - 1) / batch_size;
  for (std::int64_t b = 0; b < steps; ++b) run_step(false, rows(x, b * batch_size, std::min(n, (b + 1) * batch_size)),
                                                    rows(y, b * batch_size, std::min(n, (b + 1) * batch_size)));
  Logs logs = read_metrics("");
  if (verbose) {
    ProgressBar bar(std::cout, steps, verbose, false);
    OrderedLogs ordered{{"loss", logs["loss"]}};
    for (const auto& m : metrics_) ordered.emplace_back(m->name(), logs[m->name()]);
    bar.finish(ordered);
  }
  return logs;
}

Tensor Model::predict(const Tensor& x, std::int64_t batch_size) {
  if (!x.defined() || x.rank() < 1) fail(name(), "predict needs a batched tensor");
  if (batch_size < 1) fail(name(), "batch_size must be at least 1, got " + std::to_string(batch_size));
  std::int64_t n = x.dim(0);
  batch_size = clamped_batch(batch_size, n);
  std::vector<Tensor> outs;
  for (std::int64_t b = 0; b < n; b += batch_size) outs.push_back((*this)(rows(x, b, std::min(n, b + batch_size)), false));
  if (outs.empty()) return (*this)(x, false);
  return outs.size() == 1 ? outs[0] : concat(outs, 0);
}

History Model::fit(const Tensor& x_all, const Tensor& y_all, const FitOptions& o) {
  require_compiled("fit");
  expect_batched("fit", x_all, y_all);
  if (o.batch_size < 1) fail(name(), "batch_size must be at least 1, got " + std::to_string(o.batch_size));
  if (o.epochs < 0) fail(name(), "epochs must be >= 0");
  if (!(o.validation_split >= 0.0 && o.validation_split < 1.0))
    fail(name(), "validation_split must be in [0, 1), got " + std::to_string(o.validation_split));
  // Keras takes the validation split from the end, before shuffling.
  Tensor x = x_all, y = y_all;
  std::optional<std::pair<Tensor, Tensor>> validation = o.validation_data;
  std::int64_t n_all = x_all.dim(0);
  if (o.validation_split > 0 && !validation) {
    std::int64_t n_val = static_cast<std::int64_t>(std::floor(static_cast<double>(n_all) * o.validation_split));
    std::int64_t n_train = n_all - n_val;
    if (n_val == 0 || n_train == 0) fail(name(), "validation_split leaves no examples on one side");
    x = rows(x_all, 0, n_train);
    y = rows(y_all, 0, n_train);
    validation = std::make_pair(rows(x_all, n_train, n_all), rows(y_all, n_train, n_all));
  }
  if (validation) {
    expect_batched("validation_data", validation->first, validation->second);
    if (validation->first.dim(0) == 0) fail(name(), "validation_data has no examples");
    validation = std::make_pair(conformed(name(), "inputs", validation->first, x),
                                conformed(name(), "labels", validation->second, y));
  }
  std::int64_t n = x.dim(0);
  if (n == 0) fail(name(), "fit got no examples");
  const std::int64_t batch_size = clamped_batch(o.batch_size, n);
  make_steps(x, y);
  std::int64_t steps = (n + batch_size - 1) / batch_size;
  bool terminal = stdout_is_terminal();
  History history;
  stop_training = false;
  for (auto& cb : o.callbacks) cb->model = this;
  for (auto& cb : o.callbacks) cb->on_train_begin();
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  if (o.initial_epoch < 0 || o.initial_epoch > o.epochs)
    fail(name(), "initial_epoch " + std::to_string(o.initial_epoch) + " is outside [0, epochs=" + std::to_string(o.epochs) + "]");
  for (int epoch = o.initial_epoch; epoch < o.epochs && !stop_training; ++epoch) {
    for (auto& cb : o.callbacks) cb->on_epoch_begin(epoch);
    if (o.verbose) std::cout << "Epoch " << epoch + 1 << "/" << o.epochs << "\n" << std::flush;
    reset_metrics();
    std::iota(order.begin(), order.end(), 0);
    if (o.shuffle) {
      // Each epoch's order draws from ef's generator when the epoch starts: set_seed repeats
      // a fit, and a run restored from a checkpoint (with the generator's state) shuffles
      // its next epoch as the uninterrupted run would have.
      std::mt19937_64 rng(static_cast<std::uint64_t>(
          random::uniform({}, 0.0, 1.0, DType::float64).item<double>() * 9007199254740992.0));
      std::shuffle(order.begin(), order.end(), rng);
    }
    ProgressBar bar(std::cout, steps, o.verbose, terminal);
    for (std::int64_t b = 0; b < steps; ++b) {
      for (auto& cb : o.callbacks) cb->on_batch_begin(static_cast<int>(b));
      std::int64_t begin = b * batch_size, end = std::min(n, begin + batch_size);
      Tensor xb, yb;
      if (o.shuffle) {
        Tensor idx = tensor(std::vector<std::int64_t>(order.begin() + begin, order.begin() + end));
        xb = gather(x, idx, 0);
        yb = gather(y, idx, 0);
      } else {
        xb = rows(x, begin, end);
        yb = rows(y, begin, end);
      }
      run_step(true, xb, yb);
      bool need_logs = !o.callbacks.empty() || (o.verbose == 1 && terminal);
      if (need_logs) {
        Logs logs = read_metrics("");
        for (auto& cb : o.callbacks) cb->on_batch_end(static_cast<int>(b), logs);
        OrderedLogs ordered{{"loss", logs["loss"]}};
        for (const auto& m : metrics_) ordered.emplace_back(m->name(), logs[m->name()]);
        bar.update(b + 1, ordered);
      }
      if (stop_training) break;  // a callback stopped the run mid-epoch (TerminateOnNaN), as Keras
    }
    Logs logs = read_metrics("");
    OrderedLogs ordered{{"loss", logs["loss"]}};
    for (const auto& m : metrics_) ordered.emplace_back(m->name(), logs[m->name()]);
    if (validation) {
      Logs val = evaluate(validation->first, validation->second, batch_size, 0);
      logs["val_loss"] = val["loss"];
      ordered.emplace_back("val_loss", val["loss"]);
      for (const auto& m : metrics_) {
        logs["val_" + m->name()] = val[m->name()];
        ordered.emplace_back("val_" + m->name(), val[m->name()]);
      }
    }
    bar.finish(ordered);
    for (const auto& [k, v] : logs) history.history[k].push_back(v);
    history.epoch.push_back(epoch);
    for (auto& cb : o.callbacks) cb->on_epoch_end(epoch, logs);
  }
  for (auto& cb : o.callbacks) cb->on_train_end();
  return history;
}

void Model::summary() const { summary(std::cout); }

void Model::summary(std::ostream& os) const {
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
