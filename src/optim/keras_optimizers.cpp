// Keras 3's remaining optimizers (eagerflow/optim/keras_optimizers.h). Each update follows
// the Keras source's order of operations, so that eagerflow and Keras agree to rounding.
#include "eagerflow/optim/keras_optimizers.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "eagerflow/function/control_flow.h"
#include "eagerflow/ops/math.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/trace/context.h"
#include "optim/arg_checks.h"

namespace ef::optim {
namespace {

// A scalar of `like`'s dtype.
Tensor c(const Tensor& like, double v) { return scalar_like(like, v); }

void expect_nonnegative(const std::string& optimizer, const char* name, double v) {
  if (!(std::isfinite(v) && v >= 0)) fail(optimizer, std::string(name) + " must be a finite number >= 0, got " + std::to_string(v));
}

}  // namespace

// ---------------------------------------------------------------- Adagrad
Adagrad::Adagrad(LearningRate learning_rate, double initial_accumulator_value, double epsilon, ClipOptions clip)
    : Optimizer("Adagrad", std::move(learning_rate), clip),
      initial_accumulator_value_(initial_accumulator_value),
      epsilon_(epsilon) {
  expect_nonnegative(name(), "initial_accumulator_value", initial_accumulator_value);
  expect_epsilon(name(), epsilon);
}

std::vector<std::pair<std::string, double>> Adagrad::hyperparameters() const {
  return {{"initial_accumulator_value", initial_accumulator_value_}, {"epsilon", epsilon_}};
}

std::vector<SlotSpec> Adagrad::slot_specs(const Variable&) const { return {{"accumulator", initial_accumulator_value_}}; }

void Adagrad::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) {
  Variable acc = slot(var, "accumulator");
  acc.assign_add(square(grad));
  var.assign_sub(lr * grad / sqrt(Tensor(acc) + c(grad, epsilon_)));
}

// ---------------------------------------------------------------- Adadelta
Adadelta::Adadelta(LearningRate learning_rate, double rho, double epsilon, ClipOptions clip)
    : Optimizer("Adadelta", std::move(learning_rate), clip), rho_(rho), epsilon_(epsilon) {
  expect_in(name(), "rho", rho, 0.0, 1.0, /*closed=*/true);
  expect_epsilon(name(), epsilon);
}

std::vector<std::pair<std::string, double>> Adadelta::hyperparameters() const {
  return {{"rho", rho_}, {"epsilon", epsilon_}};
}

std::vector<SlotSpec> Adadelta::slot_specs(const Variable&) const {
  return {{"accumulated_grad"}, {"accumulated_delta_var"}};
}

void Adadelta::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) {
  Variable acc_grad = slot(var, "accumulated_grad"), acc_delta = slot(var, "accumulated_delta_var");
  auto rms = [&](const Tensor& x) { return sqrt(x + c(x, epsilon_)); };
  acc_grad.assign(c(grad, rho_) * Tensor(acc_grad) + c(grad, 1 - rho_) * square(grad));
  Tensor delta = -(rms(Tensor(acc_delta)) * grad / rms(Tensor(acc_grad)));
  acc_delta.assign(c(grad, rho_) * Tensor(acc_delta) + c(grad, 1 - rho_) * square(delta));
  var.assign_add(lr * delta);
}

// ---------------------------------------------------------------- Adamax
Adamax::Adamax(LearningRate learning_rate, double beta_1, double beta_2, double epsilon, ClipOptions clip)
    : Optimizer("Adamax", std::move(learning_rate), clip), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {
  expect_in(name(), "beta_1", beta_1, 0.0, 1.0, /*closed=*/false);
  expect_in(name(), "beta_2", beta_2, 0.0, 1.0, /*closed=*/false);
  expect_epsilon(name(), epsilon);
}

std::vector<std::pair<std::string, double>> Adamax::hyperparameters() const {
  return {{"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_}};
}

std::vector<SlotSpec> Adamax::slot_specs(const Variable&) const { return {{"momentum"}, {"norm"}}; }

void Adamax::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) {
  Variable m = slot(var, "momentum"), u = slot(var, "norm");
  Tensor beta_1_power = pow(c(step, beta_1_), step);
  m.assign_add((grad - Tensor(m)) * c(grad, 1 - beta_1_));
  u.assign(maximum(c(grad, beta_2_) * Tensor(u), abs(grad)));
  var.assign_sub(lr * Tensor(m) / ((1.0 - beta_1_power) * (Tensor(u) + c(grad, epsilon_))));
}

// ---------------------------------------------------------------- Nadam
Nadam::Nadam(LearningRate learning_rate, double beta_1, double beta_2, double epsilon, ClipOptions clip)
    : Optimizer("Nadam", std::move(learning_rate), clip), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {
  expect_in(name(), "beta_1", beta_1, 0.0, 1.0, /*closed=*/false);
  expect_in(name(), "beta_2", beta_2, 0.0, 1.0, /*closed=*/false);
  expect_epsilon(name(), epsilon);
  trace::EagerScope eager;
  u_product_ = Variable(scalar(1.0f), "Nadam/u_product", /*trainable=*/false);
}

std::vector<std::pair<std::string, double>> Nadam::hyperparameters() const {
  return {{"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_}};
}

std::vector<SlotSpec> Nadam::slot_specs(const Variable&) const { return {{"momentum"}, {"velocity"}}; }

std::vector<Variable> Nadam::variables() const {
  std::vector<Variable> out = Optimizer::variables();
  out.insert(out.begin() + 1, u_product_);
  return out;
}

// The product of the momentum schedule up to this step, once per step (Keras'
// _backend_update_step), before any variable's update reads it.
void Nadam::before_updates(const Tensor& step) {
  Tensor u = Tensor(u_product_);
  u_product_.assign(u * c(u, beta_1_) * (1.0 - 0.5 * pow(c(u, 0.96), step)));
}

void Nadam::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) {
  Tensor beta_1 = c(grad, beta_1_), beta_2 = c(grad, beta_2_), decay = c(grad, 0.96);
  Tensor u_t = beta_1 * (1.0 - 0.5 * pow(decay, step));
  Tensor u_t_1 = beta_1 * (1.0 - 0.5 * pow(decay, step + 1.0));
  Tensor u_product_t = cast(Tensor(u_product_), grad.dtype());
  Tensor u_product_t_1 = u_product_t * u_t_1;
  Tensor beta_2_power = pow(beta_2, step);
  Variable m = slot(var, "momentum"), v = slot(var, "velocity");
  m.assign_add((grad - Tensor(m)) * (1.0 - beta_1));
  v.assign_add((square(grad) - Tensor(v)) * (1.0 - beta_2));
  Tensor m_hat = u_t_1 * Tensor(m) / (1.0 - u_product_t_1) + (1.0 - u_t) * grad / (1.0 - u_product_t);
  Tensor v_hat = Tensor(v) / (1.0 - beta_2_power);
  var.assign_sub(m_hat * lr / (sqrt(v_hat) + c(grad, epsilon_)));
}

// ---------------------------------------------------------------- Ftrl
Ftrl::Ftrl(LearningRate learning_rate, double learning_rate_power, double initial_accumulator_value,
           double l1_regularization_strength, double l2_regularization_strength,
           double l2_shrinkage_regularization_strength, double beta, ClipOptions clip)
    : Optimizer("Ftrl", std::move(learning_rate), clip),
      power_(learning_rate_power),
      initial_accumulator_value_(initial_accumulator_value),
      l1_(l1_regularization_strength),
      l2_(l2_regularization_strength),
      l2_shrinkage_(l2_shrinkage_regularization_strength),
      beta_(beta) {
  if (!(std::isfinite(learning_rate_power) && learning_rate_power <= 0))
    fail(name(), "learning_rate_power must be a number <= 0, got " + std::to_string(learning_rate_power));
  expect_nonnegative(name(), "initial_accumulator_value", initial_accumulator_value);
  expect_nonnegative(name(), "l1_regularization_strength", l1_regularization_strength);
  expect_nonnegative(name(), "l2_regularization_strength", l2_regularization_strength);
  expect_nonnegative(name(), "l2_shrinkage_regularization_strength", l2_shrinkage_regularization_strength);
  expect_nonnegative(name(), "beta", beta);
}

std::vector<std::pair<std::string, double>> Ftrl::hyperparameters() const {
  return {{"learning_rate_power", power_},
          {"initial_accumulator_value", initial_accumulator_value_},
          {"l1_regularization_strength", l1_},
          {"l2_regularization_strength", l2_},
          {"l2_shrinkage_regularization_strength", l2_shrinkage_},
          {"beta", beta_}};
}

std::vector<SlotSpec> Ftrl::slot_specs(const Variable&) const {
  return {{"accumulator", initial_accumulator_value_}, {"linear"}};
}

void Ftrl::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) {
  Variable accum = slot(var, "accumulator"), linear = slot(var, "linear");
  Tensor w = Tensor(var), a = Tensor(accum);
  Tensor l2 = c(grad, l2_) + c(grad, beta_) / (2.0 * lr);
  Tensor grad_to_use = grad + c(grad, 2 * l2_shrinkage_) * w;
  Tensor new_accum = a + square(grad);
  Tensor p = c(grad, -power_);
  linear.assign_add(grad_to_use - (pow(new_accum, p) - pow(a, p)) / lr * w);
  Tensor quadratic = pow(new_accum, p) / lr + 2.0 * l2;
  Tensor lin = Tensor(linear);
  var.assign((clip(lin, -l1_, l1_) - lin) / quadratic);
  accum.assign(new_accum);
}

// ---------------------------------------------------------------- Lion
Lion::Lion(LearningRate learning_rate, double beta_1, double beta_2, ClipOptions clip)
    : Optimizer("Lion", std::move(learning_rate), clip), beta_1_(beta_1), beta_2_(beta_2) {
  // Keras: beta_1 must be in (0, 1]; 0 would make the step sign(g) with no momentum at all.
  if (!(beta_1 > 0 && beta_1 <= 1)) fail(name(), "beta_1 must be in (0, 1], got " + std::to_string(beta_1));
  expect_in(name(), "beta_2", beta_2, 0.0, 1.0, /*closed=*/true);
}

std::vector<std::pair<std::string, double>> Lion::hyperparameters() const {
  return {{"beta_1", beta_1_}, {"beta_2", beta_2_}};
}

std::vector<SlotSpec> Lion::slot_specs(const Variable&) const { return {{"momentum"}}; }

void Lion::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor&) {
  Variable m = slot(var, "momentum");
  Tensor mv = Tensor(m);
  var.assign_sub(lr * math::sign(mv * c(grad, beta_1_) + grad * c(grad, 1.0 - beta_1_)));
  m.assign(mv * c(grad, beta_2_) + grad * c(grad, 1.0 - beta_2_));
}

// ---------------------------------------------------------------- Lamb
Lamb::Lamb(LearningRate learning_rate, double beta_1, double beta_2, double epsilon, ClipOptions clip)
    : Optimizer("Lamb", std::move(learning_rate), clip), beta_1_(beta_1), beta_2_(beta_2), epsilon_(epsilon) {
  expect_in(name(), "beta_1", beta_1, 0.0, 1.0, /*closed=*/false);
  expect_in(name(), "beta_2", beta_2, 0.0, 1.0, /*closed=*/false);
  expect_epsilon(name(), epsilon);
}

std::vector<std::pair<std::string, double>> Lamb::hyperparameters() const {
  return {{"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_}};
}

std::vector<SlotSpec> Lamb::slot_specs(const Variable&) const { return {{"momentum"}, {"velocity"}}; }

void Lamb::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) {
  Variable m = slot(var, "momentum"), v = slot(var, "velocity");
  Tensor beta_1_power = pow(c(step, beta_1_), step), beta_2_power = pow(c(step, beta_2_), step);
  m.assign_add((grad - Tensor(m)) * c(grad, 1 - beta_1_));
  v.assign_add((square(grad) - Tensor(v)) * c(grad, 1 - beta_2_));
  Tensor m_hat = Tensor(m) / (1.0 - beta_1_power);
  Tensor v_sqrt = sqrt(Tensor(v) / (1.0 - beta_2_power)) + c(grad, epsilon_);
  Tensor step_dir = m_hat / v_sqrt;
  Tensor w_norm = sqrt(sum(square(Tensor(var)))), g_norm = sqrt(sum(square(step_dir)));
  Tensor zero = c(grad, 0.0), one = c(grad, 1.0);
  Tensor ratio = where(w_norm > zero, where(g_norm > zero, w_norm / g_norm, one), one);
  var.assign_sub(ratio * lr * step_dir);
}

// ---------------------------------------------------------------- Adafactor
Adafactor::Adafactor(LearningRate learning_rate, double beta_2_decay, double epsilon_1, double epsilon_2,
                     double clip_threshold, bool relative_step, ClipOptions clip)
    : Optimizer("Adafactor", std::move(learning_rate), clip),
      beta_2_decay_(beta_2_decay),
      epsilon_1_(epsilon_1),
      epsilon_2_(epsilon_2),
      clip_threshold_(clip_threshold),
      relative_step_(relative_step) {
  if (!std::isfinite(beta_2_decay) || beta_2_decay > 0)
    fail(name(), "beta_2_decay must be a number <= 0, got " + std::to_string(beta_2_decay));
  expect_nonnegative(name(), "epsilon_1", epsilon_1);
  expect_nonnegative(name(), "epsilon_2", epsilon_2);
  if (!(std::isfinite(clip_threshold) && clip_threshold > 0))
    fail(name(), "clip_threshold must be a finite number > 0, got " + std::to_string(clip_threshold));
}

std::vector<std::pair<std::string, double>> Adafactor::hyperparameters() const {
  return {{"beta_2_decay", beta_2_decay_},
          {"epsilon_1", epsilon_1_},
          {"epsilon_2", epsilon_2_},
          {"clip_threshold", clip_threshold_},
          {"relative_step", relative_step_ ? 1.0 : 0.0}};
}

// Rank >= 2: row means r (the shape without the last axis) and column means c (without the
// one before it); the velocity is their outer product, kept at the variable's shape.
std::vector<SlotSpec> Adafactor::slot_specs(const Variable& var) const {
  const Shape& s = var.shape();
  if (s.rank() < 2) return {{"velocity"}};
  std::vector<std::int64_t> dims = s.dims();
  std::vector<std::int64_t> r(dims.begin(), dims.end() - 1);
  std::vector<std::int64_t> col(dims.begin(), dims.end() - 2);
  col.push_back(dims.back());
  return {{"r", 0.0, Shape(r)}, {"c", 0.0, Shape(col)}, {"velocity"}};
}

void Adafactor::update(const Variable& var, const Tensor& grad, const Tensor& lr_in, const Tensor& step) {
  Tensor lr = lr_in;
  Tensor inv_sqrt_step = 1.0 / sqrt(step);
  // Keras caps the rate at 1/sqrt(step) with relative_step, unless the rate is a schedule.
  if (!learning_rate_setting().schedule() && relative_step_) lr = minimum(lr, inv_sqrt_step);
  auto rms = [](const Tensor& x) { return sqrt(mean(square(x))); };
  Tensor rho_t = minimum(lr, inv_sqrt_step);
  Tensor alpha_t = maximum(c(grad, epsilon_2_), rms(Tensor(var))) * rho_t;
  Tensor regulated = square(grad) + c(grad, epsilon_1_);
  Tensor beta_2_t = 1.0 - pow(step, c(step, beta_2_decay_));
  Variable v = slot(var, "velocity");
  int rank = static_cast<int>(var.shape().rank());
  if (rank >= 2) {
    Variable r = slot(var, "r"), col = slot(var, "c");
    r.assign(beta_2_t * Tensor(r) + (1.0 - beta_2_t) * mean(regulated, {-1}));
    col.assign(beta_2_t * Tensor(col) + (1.0 - beta_2_t) * mean(regulated, {-2}));
    Tensor rv = Tensor(r);
    v.assign(expand_dims(rv / mean(rv, {-1}, /*keepdims=*/true), -1) * expand_dims(Tensor(col), -2));
  } else {
    v.assign(beta_2_t * Tensor(v) + (1.0 - beta_2_t) * regulated);
  }
  Tensor u_t = grad / sqrt(Tensor(v));
  Tensor u_t_hat = u_t / maximum(c(grad, 1.0), rms(u_t) / c(grad, clip_threshold_));
  var.assign_sub(alpha_t * u_t_hat);
}

// ---------------------------------------------------------------- Muon
Muon::Muon(LearningRate learning_rate, Options options, ClipOptions clip)
    : Optimizer("Muon", std::move(learning_rate), clip), o_(options) {
  expect_in(name(), "adam_beta_1", o_.adam_beta_1, 0.0, 1.0, /*closed=*/false);
  expect_in(name(), "adam_beta_2", o_.adam_beta_2, 0.0, 1.0, /*closed=*/false);
  expect_in(name(), "momentum", o_.momentum, 0.0, 1.0, /*closed=*/true);
  expect_epsilon(name(), o_.epsilon);
  expect_nonnegative(name(), "weight_decay", o_.weight_decay);
  expect_nonnegative(name(), "adam_weight_decay", o_.adam_weight_decay);
  expect_nonnegative(name(), "adam_lr_ratio", o_.adam_lr_ratio);
  if (o_.ns_steps < 0 || o_.ns_steps > 100) fail(name(), "ns_steps must be in [0, 100], got " + std::to_string(o_.ns_steps));
  if (o_.rms_rate) expect_nonnegative(name(), "rms_rate", *o_.rms_rate);
  if (clip.weight_decay) fail(name(), "takes weight_decay and adam_weight_decay as its own arguments");
}

std::vector<std::pair<std::string, double>> Muon::hyperparameters() const {
  return {{"adam_beta_1", o_.adam_beta_1}, {"adam_beta_2", o_.adam_beta_2},
          {"adam_weight_decay", o_.adam_weight_decay}, {"epsilon", o_.epsilon},
          {"weight_decay", o_.weight_decay}, {"exclude_embeddings", o_.exclude_embeddings ? 1.0 : 0.0},
          {"muon_a", o_.muon_a}, {"muon_b", o_.muon_b}, {"muon_c", o_.muon_c},
          {"adam_lr_ratio", o_.adam_lr_ratio}, {"momentum", o_.momentum},
          {"ns_steps", static_cast<double>(o_.ns_steps)}, {"nesterov", o_.nesterov ? 1.0 : 0.0},
          {"rms_rate", o_.rms_rate ? *o_.rms_rate : -1.0}};
}

bool Muon::uses_adamw(const Variable& var) const {
  if (var.shape().rank() != 2) return true;
  if (!o_.exclude_embeddings) return false;
  std::string n = var.name();
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return n.find("embedding") != std::string::npos;
}

std::vector<SlotSpec> Muon::slot_specs(const Variable& var) const {
  if (uses_adamw(var)) return {{"momentum"}, {"velocity"}};
  return {{"momentum"}};
}

// Keras' zeropower_via_newtonschulz5 for a 2-D matrix: normalized, transposed to be wide.
Tensor Muon::orthogonalize(const Tensor& g) const {
  bool tall = g.shape()[0] > g.shape()[1];
  Tensor x = tall ? transpose(g) : g;
  x = x / (sqrt(sum(square(x))) + c(x, 1e-7));
  for (std::int64_t i = 0; i < o_.ns_steps; ++i) {
    Tensor a = matmul(x, x, false, true);
    Tensor b = c(x, o_.muon_b) * a + c(x, o_.muon_c) * matmul(a, a);
    x = c(x, o_.muon_a) * x + matmul(b, x);
  }
  return tall ? transpose(x) : x;
}

void Muon::update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) {
  bool adam = uses_adamw(var);
  // Keras' _apply_weight_decay: before the step, at the base rate, per kind of weight.
  double wd = adam ? o_.adam_weight_decay : o_.weight_decay;
  if (wd > 0) var.assign_sub(Tensor(var) * (lr * wd));
  Variable m = slot(var, "momentum");
  if (adam) {
    Variable v = slot(var, "velocity");
    Tensor rate = lr * o_.adam_lr_ratio;
    Tensor b1_power = pow(c(step, o_.adam_beta_1), step), b2_power = pow(c(step, o_.adam_beta_2), step);
    Tensor alpha = rate * sqrt(1.0 - b2_power) / (1.0 - b1_power);
    m.assign_add((grad - Tensor(m)) * c(grad, 1 - o_.adam_beta_1));
    v.assign_add((square(grad) - Tensor(v)) * c(grad, 1 - o_.adam_beta_2));
    var.assign_sub(Tensor(m) * alpha / (sqrt(Tensor(v)) + c(grad, o_.epsilon)));
    return;
  }
  m.assign_add(grad + Tensor(m) * c(grad, o_.momentum - 1));
  Tensor g = o_.nesterov ? grad + c(grad, o_.momentum) * Tensor(m) : Tensor(m);
  Tensor update = lr * orthogonalize(g);
  if (o_.rms_rate) {
    double n = static_cast<double>(std::max(var.shape()[0], var.shape()[1]));
    update = update * (std::sqrt(n) * *o_.rms_rate);
  }
  var.assign_sub(update);
}

// ---------------------------------------------------------------- ScheduleFreeAdamW
ScheduleFreeAdamW::ScheduleFreeAdamW(LearningRate learning_rate, double beta_1, double beta_2, double epsilon,
                                     std::int64_t warmup_steps, ClipOptions clip)
    : Optimizer("ScheduleFreeAdamW", std::move(learning_rate), clip),
      beta_1_(beta_1),
      beta_2_(beta_2),
      epsilon_(epsilon),
      warmup_steps_(warmup_steps) {
  // beta_1 divides: 0 is refused (Keras' x_old would be Inf).
  if (!(beta_1 > 0 && beta_1 < 1)) fail(name(), "beta_1 must be in (0, 1), got " + std::to_string(beta_1));
  expect_in(name(), "beta_2", beta_2, 0.0, 1.0, /*closed=*/false);
  expect_epsilon(name(), epsilon);
  if (warmup_steps < 0) fail(name(), "warmup_steps must be >= 0, got " + std::to_string(warmup_steps));
}

std::vector<std::pair<std::string, double>> ScheduleFreeAdamW::hyperparameters() const {
  return {{"beta_1", beta_1_}, {"beta_2", beta_2_}, {"epsilon", epsilon_},
          {"warmup_steps", static_cast<double>(warmup_steps_)}};
}

std::vector<SlotSpec> ScheduleFreeAdamW::slot_specs(const Variable&) const {
  SlotSpec momentum{"momentum"};
  momentum.copy_of_variable = true;
  return {momentum, {"velocity"}};
}

void ScheduleFreeAdamW::update(const Variable& var, const Tensor& grad, const Tensor& lr_in, const Tensor& step) {
  Tensor lr = lr_in;
  if (warmup_steps_ > 0) lr = lr * minimum(step / static_cast<double>(warmup_steps_), c(step, 1.0));
  Variable momentum = slot(var, "momentum"), velocity = slot(var, "velocity");
  Tensor bias_correction_2 = 1.0 - pow(c(step, beta_2_), step);
  velocity.assign_add((square(grad) - Tensor(velocity)) * c(grad, 1 - beta_2_));
  Tensor denom = sqrt(Tensor(velocity) / bias_correction_2) + c(grad, epsilon_);
  momentum.assign_sub(lr * grad / denom);
  Tensor weight = 1.0 / step;
  Tensor y_old = Tensor(var);
  // Keras' x_old reads the momentum after its update: its `momentum.value` is the live
  // variable under the TensorFlow backend. Matching Keras' numbers means doing the same.
  Tensor x_old = (y_old - c(grad, 1 - beta_1_) * Tensor(momentum)) / c(grad, beta_1_);
  Tensor x_new = (1.0 - weight) * x_old + weight * Tensor(momentum);
  var.assign(c(grad, 1 - beta_1_) * Tensor(momentum) + c(grad, beta_1_) * x_new);
}

// ---------------------------------------------------------------- LossScaleOptimizer
LossScaleOptimizer::LossScaleOptimizer(std::shared_ptr<Optimizer> inner_optimizer, double initial_scale,
                                       std::int64_t dynamic_growth_steps)
    : Optimizer("LossScaleOptimizer", 1.0, {}),
      inner_(std::move(inner_optimizer)),
      initial_scale_(initial_scale),
      growth_steps_(dynamic_growth_steps) {
  if (!inner_) fail(name(), "needs an inner optimizer");
  if (dynamic_cast<LossScaleOptimizer*>(inner_.get())) fail(name(), "the inner optimizer is a LossScaleOptimizer already");
  float f = static_cast<float>(initial_scale);
  if (!(std::isfinite(initial_scale) && initial_scale > 0 && std::isfinite(f) && f > 0))
    fail(name(), "initial_scale must be a positive number that float32 holds, got " + std::to_string(initial_scale));
  if (dynamic_growth_steps < 1) fail(name(), "dynamic_growth_steps must be >= 1, got " + std::to_string(dynamic_growth_steps));
  trace::EagerScope eager;
  scale_ = Variable(scalar(f), "LossScaleOptimizer/dynamic_scale", /*trainable=*/false);
  counter_ = Variable(zeros({}, DType::int64), "LossScaleOptimizer/step_counter", /*trainable=*/false);
}

std::vector<std::pair<std::string, double>> LossScaleOptimizer::hyperparameters() const {
  return {{"initial_scale", initial_scale_}, {"dynamic_growth_steps", static_cast<double>(growth_steps_)}};
}

std::vector<Variable> LossScaleOptimizer::variables() const {
  std::vector<Variable> out{counter_, scale_};
  for (const auto& v : inner_->variables()) out.push_back(v);
  return out;
}

Tensor LossScaleOptimizer::scale_loss(const Tensor& loss) const { return loss * cast(Tensor(scale_), loss.dtype()); }

void LossScaleOptimizer::apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) {
  if (gradients.size() != variables.size())
    fail(name(), "got " + std::to_string(gradients.size()) + " gradients for " + std::to_string(variables.size()) + " variables");
  // Slots are made before the branch: variables come to life eagerly, never inside ef::cond.
  inner_->build(variables);
  Tensor finite = ones({}, DType::bool_);
  for (const auto& g : gradients)
    if (g.defined()) finite = logical_and(finite, all(math::is_finite(g)));
  Tensor scale = Tensor(scale_);
  std::vector<Tensor> unscaled;
  for (const auto& g : gradients) unscaled.push_back(g.defined() ? g / cast(scale, g.dtype()) : g);
  cond(
      finite,
      [&] {
        inner_->apply_gradients(unscaled, variables);
        return scalar(0.0f);
      },
      [&] { return scalar(0.0f); });
  Tensor counter = Tensor(counter_);
  Tensor at_growth = equal(counter, scalar_like(counter, static_cast<double>(growth_steps_ - 1)));
  Tensor zero = zeros({}, DType::int64);
  counter_.assign(where(finite, where(at_growth, zero, counter + ones({}, DType::int64)), zero));
  scale_.assign(where(finite, where(at_growth, scale * 2.0f, scale), scale * 0.5f));
}

}  // namespace ef::optim
