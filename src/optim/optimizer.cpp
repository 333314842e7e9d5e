#include "eagerflow/optim/optimizer.h"

#include <cmath>

#include <cfloat>

#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/trace/context.h"
#include "optim/arg_checks.h"

namespace ef::optim {

Optimizer::Optimizer(std::string name, LearningRate learning_rate, ClipOptions clip)
    : name_(std::move(name)), schedule_(std::move(learning_rate)), clip_(clip) {
  if (!schedule_.schedule()) expect_rate(name_, schedule_.value());
  // An infinite norm would scale gradients by Inf / Inf = NaN.
  for (auto [what, v] : {std::pair{"clipnorm", clip.clipnorm}, std::pair{"global_clipnorm", clip.global_clipnorm}})
    if (v && !(std::isfinite(*v) && *v > 0)) fail(name_, std::string(what) + " must be a finite positive number, got " + std::to_string(*v));
  if (clip.clipvalue && !(std::isfinite(*clip.clipvalue) && *clip.clipvalue > 0))
    fail(name_, "clipvalue must be a finite positive number, got " + std::to_string(*clip.clipvalue));
  if (clip.clipnorm && clip.global_clipnorm) fail(name_, "set clipnorm or global_clipnorm, not both (as Keras)");
  if (clip.use_ema) expect_in(name_, "ema_momentum", clip.ema_momentum, 0.0, 1.0, /*closed=*/true);
  if (clip.ema_overwrite_frequency && *clip.ema_overwrite_frequency < 1)
    fail(name_, "ema_overwrite_frequency must be >= 1, got " + std::to_string(*clip.ema_overwrite_frequency));
  if (clip.weight_decay && !(std::isfinite(*clip.weight_decay) && *clip.weight_decay >= 0))
    fail(name_, "weight_decay must be a finite number >= 0, got " + std::to_string(*clip.weight_decay));
  trace::EagerScope eager;  // made eagerly even if the optimizer is built inside a trace
  lr_ = Variable(scalar(static_cast<float>(schedule_.value())), name_ + "/learning_rate", /*trainable=*/false);
  iterations_ = Variable(zeros({}, DType::int64), name_ + "/iterations", /*trainable=*/false);
}

double Optimizer::learning_rate() const {
  if (!schedule_.schedule()) return Tensor(lr_).item<float>();
  Tensor step = iterations_.defined() ? cast(Tensor(iterations_), DType::float32) : scalar(0.0f);
  return (*schedule_.schedule())(step).item<float>();
}

void Optimizer::set_learning_rate(double rate) {
  if (schedule_.schedule())
    fail(ErrorKind(ErrorCode::failed_precondition, PythonBuiltin::type_error), name_,
         "the learning rate follows a schedule; it cannot be set");
  expect_rate(name_, rate);
  lr_.assign(scalar(static_cast<float>(rate)));
}

std::vector<SlotSpec> Optimizer::slot_specs(const Variable&) const { return {}; }

Variable Optimizer::slot(const Variable& var, const std::string& slot) {
  auto& slots = slots_[var.state_ptr().get()];
  auto it = slots.find(slot);
  if (it != slots.end()) return it->second;
  SlotSpec spec{slot};
  for (auto& s : slot_specs(var))
    if (s.name == slot) spec = s;
  Shape shape = spec.shape ? *spec.shape : var.shape();
  trace::EagerScope eager;  // a slot is made once, from the variable's value now (Keras' build)
  Tensor initial = spec.copy_of_variable       ? Tensor(var.value())
                   : spec.initial_value == 0.0 ? zeros(shape, var.dtype())
                                               : full(shape, spec.initial_value, var.dtype());
  Variable v(initial, var.name() + "/" + slot, /*trainable=*/false);
  slots.emplace(slot, v);
  slot_order_.push_back(v);
  return v;
}

void Optimizer::build(const std::vector<Variable>& variables) {
  trace::EagerScope eager;
  get_or_create_iterations();
  for (const auto& var : variables) {
    if (!var.defined()) fail(name_, "build: a variable is undefined");
    for (const auto& s : slot_specs(var)) slot(var, s.name);
    if (clip_.use_ema) slot(var, "average");
  }
}

std::map<std::string, Variable> Optimizer::slots_of(const Variable& var) const {
  auto it = slots_.find(var.state_ptr().get());
  return it == slots_.end() ? std::map<std::string, Variable>{} : it->second;
}

Variable Optimizer::get_or_create_slot(const Variable& var, const std::string& name) {
  trace::EagerScope eager;
  return slot(var, name);
}

Variable Optimizer::get_or_create_iterations() {
  trace::EagerScope eager;
  if (!iterations_.defined()) iterations_ = Variable(zeros({}, DType::int64), name_ + "/iterations", false);
  return iterations_;
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out;
  if (iterations_.defined()) out.push_back(iterations_);
  out.insert(out.end(), slot_order_.begin(), slot_order_.end());
  return out;
}

void Optimizer::apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  if (gradients.size() != variables.size())
    fail(name_, "got " + std::to_string(gradients.size()) + " gradients for " + std::to_string(variables.size()) + " variables");
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!variables[i].defined()) fail(name_, "variable " + std::to_string(i) + " is undefined");
    // Every update runs in the variable's dtype: float32 or float64 (bfloat16 and float16 hold too
    // few bits for the moments' 1 - 0.999^t; mixed precision policies keep variables float32).
    DType vd = variables[i].dtype();
    if (gradients[i].defined() && vd != DType::float32 && vd != DType::float64)
      fail(kWrongType, name_,
           "variable '" + variables[i].name() + "' is " + TensorSpec{vd, variables[i].shape(), {}}.str() +
               ": optimizers update float32 or float64 variables (a mixed precision policy keeps variables float32)");
    if (gradients[i].defined() && (gradients[i].dtype() != variables[i].dtype() ||
                                   (gradients[i].shape().is_static() && gradients[i].shape() != variables[i].shape())))
      fail(name_, "gradient " + gradients[i].spec().str() + " does not fit variable '" + variables[i].name() + "' " +
                      TensorSpec{variables[i].dtype(), variables[i].shape(), {}}.str());
  }
  if (!iterations_.defined()) iterations_ = Variable(zeros({}, DType::int64), name_ + "/iterations", false);
  std::vector<Tensor> grads = gradients;
  if (clip_.clipvalue)  // Keras clips values before norms
    for (auto& g : grads)
      if (g.defined()) g = clip(g, -*clip_.clipvalue, *clip_.clipvalue);
  if (clip_.clipnorm) {
    for (auto& g : grads)
      if (g.defined()) {
        Tensor norm = sqrt(sum(square(g)));
        g = g * (*clip_.clipnorm / maximum(norm, scalar_like(norm, *clip_.clipnorm)));
      }
  } else if (clip_.global_clipnorm) {
    Tensor total;
    for (const auto& g : grads)
      if (g.defined()) total = total.defined() ? total + sum(square(g)) : sum(square(g));
    if (total.defined()) {
      Tensor norm = sqrt(total);
      Tensor scale = *clip_.global_clipnorm / maximum(norm, scalar_like(norm, *clip_.global_clipnorm));
      for (auto& g : grads)
        if (g.defined()) g = g * scale;
    }
  }
  // The step being taken, counting from 1 (Adam's bias correction), as float32.
  Tensor step = cast(Tensor(iterations_), DType::float32) + 1.0f;
  // A schedule's rate is checked where it is computed, at every step: NaN or Inf from a
  // schedule is an error at the step that produced it, before any weight changes.
  Tensor lr = schedule_.schedule() ? check_numerics((*schedule_.schedule())(step - 1.0f), name_ + ": learning_rate from the schedule")
                                   : Tensor(lr_);
  before_updates(step);
  // The rate and step in each variable's dtype, cast once per dtype (not once per variable).
  std::map<DType, std::pair<Tensor, Tensor>> in_dtype;
  for (std::size_t i = 0; i < variables.size(); ++i) {
    if (!grads[i].defined()) continue;
    DType dtype = variables[i].dtype();
    auto it = in_dtype.find(dtype);
    if (it == in_dtype.end())
      it = in_dtype.emplace(dtype, std::pair{lr.dtype() == dtype ? lr : cast(lr, dtype), step.dtype() == dtype ? step : cast(step, dtype)}).first;
    if (clip_.weight_decay && *clip_.weight_decay > 0 && is_floating(dtype))
      variables[i].assign_sub(Tensor(variables[i]) * (it->second.first * *clip_.weight_decay));
    update(variables[i], grads[i], it->second.first, it->second.second);
  }
  if (clip_.use_ema) update_moving_averages(variables);
  iterations_.assign_add(ones({}, DType::int64));
}

std::vector<std::pair<std::string, double>> SGD::hyperparameters() const {
  return {{"momentum", momentum_}, {"nesterov", nesterov_ ? 1.0 : 0.0}};
}
std::vector<SlotSpec> SGD::slot_specs(const Variable&) const {
  return momentum_ == 0.0 ? std::vector<SlotSpec>{} : std::vector<SlotSpec>{{"momentum"}};
}
std::vector<std::pair<std::string, double>> Adam::hyperparameters() const {
  return {{"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_}};
}
std::vector<SlotSpec> Adam::slot_specs(const Variable&) const { return {{"m"}, {"v"}}; }
std::vector<std::pair<std::string, double>> AdamW::hyperparameters() const {
  auto h = Adam::hyperparameters();
  h.insert(h.begin(), {"weight_decay", weight_decay_});
  return h;
}
std::vector<std::pair<std::string, double>> RMSprop::hyperparameters() const {
  return {{"rho", rho_}, {"momentum", momentum_}, {"epsilon", epsilon_}};
}
std::vector<SlotSpec> RMSprop::slot_specs(const Variable&) const {
  if (momentum_ > 0) return {{"velocity"}, {"momentum"}};
  return {{"velocity"}};
}

// Keras' _update_model_variables_moving_average, then its overwrite every k-th step (a select,
// so that a traced step needs no branch).
void Optimizer::update_moving_averages(const std::vector<Variable>& variables) {
  Tensor it = Tensor(iterations_);
  Tensor first = equal(it, zeros({}, DType::int64));
  Tensor overwrite;
  if (clip_.ema_overwrite_frequency) {
    // (step + 1) divisible by k, in float64: exact for any step count an int64 loop reaches.
    Tensor ratio = (cast(it, DType::float64) + 1.0) / static_cast<double>(*clip_.ema_overwrite_frequency);
    overwrite = equal(floor(ratio), ratio);
  }
  for (const auto& var : variables) {
    if (!is_floating(var.dtype()) || !var.trainable()) continue;
    Variable average = slot(var, "average");
    Tensor v = Tensor(var);
    Tensor m = where(first, zeros({}, var.dtype()), full({}, clip_.ema_momentum, var.dtype()));
    Tensor next = m * Tensor(average) + (1.0 - m) * v;
    average.assign(next);
    if (overwrite.defined()) var.assign(where(overwrite, next, v));
  }
}

// ---------------------------------------------------------------- SGD
SGD::SGD(LearningRate learning_rate, double momentum, bool nesterov, ClipOptions clip)
    : Optimizer("SGD", std::move(learning_rate), clip), momentum_(momentum), nesterov_(nesterov) {
  expect_in("SGD", "momentum", momentum, 0.0, 1.0, /*closed=*/true);
}

// The updates are fused ops (apply_sgd and friends, src/optim/fused_updates.cpp): one pass per
// variable that writes the variable and its slots in place, eagerly and traced alike.
void SGD::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) {
  if (momentum_ == 0.0) apply_sgd(var, grad, lr);
  else apply_momentum(var, slot(var, "momentum"), grad, lr, momentum_, nesterov_);
}

// ---------------------------------------------------------------- Adam
Adam::Adam(LearningRate learning_rate, double beta_1, double beta_2, double epsilon, ClipOptions clip)
    : Optimizer("Adam", std::move(learning_rate), clip), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {
  expect_in(name(), "beta_1", beta_1, 0.0, 1.0, /*closed=*/false);
  expect_in(name(), "beta_2", beta_2, 0.0, 1.0, /*closed=*/false);
  expect_epsilon(name(), epsilon);
}

void Adam::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) {
  apply_adam(var, slot(var, "m"), slot(var, "v"), grad, lr, step, beta_1_, beta_2_, epsilon_);
}

AdamW::AdamW(LearningRate learning_rate, double weight_decay, double beta_1, double beta_2, double epsilon, ClipOptions clip)
    : Adam(std::move(learning_rate), beta_1, beta_2, epsilon, clip), weight_decay_(weight_decay) {
  if (!(std::isfinite(weight_decay) && weight_decay >= 0))
    fail("AdamW", "weight_decay must be a finite number >= 0, got " + std::to_string(weight_decay));
}

// The decay happens inside the same pass, before the Adam step (var - var * lr * weight_decay).
void AdamW::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) {
  apply_adam(var, slot(var, "m"), slot(var, "v"), grad, lr, step, beta_1_, beta_2_, epsilon_, weight_decay_);
}

// ---------------------------------------------------------------- RMSprop
RMSprop::RMSprop(LearningRate learning_rate, double rho, double momentum, double epsilon, ClipOptions clip)
    : Optimizer("RMSprop", std::move(learning_rate), clip), rho_(rho), momentum_(momentum), epsilon_(epsilon) {
  expect_in("RMSprop", "rho", rho, 0.0, 1.0, /*closed=*/false);
  expect_in("RMSprop", "momentum", momentum, 0.0, 1.0, /*closed=*/true);
  expect_epsilon("RMSprop", epsilon);
}

void RMSprop::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) {
  Variable v = slot(var, "velocity");
  if (momentum_ > 0) apply_rmsprop(var, v, grad, lr, rho_, epsilon_, slot(var, "momentum"), momentum_);
  else apply_rmsprop(var, v, grad, lr, rho_, epsilon_);
}

}  // namespace ef::optim
