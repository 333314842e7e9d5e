#pragma once
// The rest of Keras 3's optimizers, each with Keras' update rule, defaults and argument checks
// (src/optim/keras_optimizers.cpp). Their updates are compositions of ef ops, so they run
// eagerly and inside a traced train step alike, and save and restore their slots as
// optimizer.h's do. LossScaleOptimizer wraps another optimizer for float16 training.
#include <memory>

#include "eagerflow/optim/optimizer.h"

namespace ef::optim {

// accumulator += g^2; var -= lr * g / sqrt(accumulator + epsilon).
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(LearningRate learning_rate = 0.001, double initial_accumulator_value = 0.1, double epsilon = 1e-7,
                   ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double initial_accumulator_value_, epsilon_;
};

// Zeiler's Adadelta: running averages of squared gradients and of squared updates.
class Adadelta : public Optimizer {
 public:
  explicit Adadelta(LearningRate learning_rate = 0.001, double rho = 0.95, double epsilon = 1e-7, ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double rho_, epsilon_;
};

// Adam with the infinity norm: u = max(beta_2 * u, |g|).
class Adamax : public Optimizer {
 public:
  explicit Adamax(LearningRate learning_rate = 0.001, double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7,
                  ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double beta_1_, beta_2_, epsilon_;
};

// Adam with Nesterov momentum and Keras' momentum schedule (a running product of
// beta_1 * (1 - 0.5 * 0.96^step), one variable per optimizer).
class Nadam : public Optimizer {
 public:
  explicit Nadam(LearningRate learning_rate = 0.001, double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7,
                 ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;
  std::vector<Variable> variables() const override;

 protected:
  void before_updates(const Tensor& step) override;
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  Variable u_product_;
};

// Follow The Regularized Leader (McMahan et al.), with L1, L2 and shrinkage L2.
class Ftrl : public Optimizer {
 public:
  explicit Ftrl(LearningRate learning_rate = 0.001, double learning_rate_power = -0.5,
                double initial_accumulator_value = 0.1, double l1_regularization_strength = 0.0,
                double l2_regularization_strength = 0.0, double l2_shrinkage_regularization_strength = 0.0,
                double beta = 0.0, ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double power_, initial_accumulator_value_, l1_, l2_, l2_shrinkage_, beta_;
};

// Lion (Chen et al. 2023): var -= lr * sign(beta_1 * m + (1 - beta_1) * g).
class Lion : public Optimizer {
 public:
  explicit Lion(LearningRate learning_rate = 0.001, double beta_1 = 0.9, double beta_2 = 0.99, ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double beta_1_, beta_2_;
};

// LAMB (You et al.): Adam's step scaled per variable by ||var|| / ||step||.
class Lamb : public Optimizer {
 public:
  explicit Lamb(LearningRate learning_rate = 0.001, double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7,
                ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double beta_1_, beta_2_, epsilon_;
};

// Adafactor (Shazeer & Stern): second moments factored into row and column means for
// variables of rank >= 2.
class Adafactor : public Optimizer {
 public:
  explicit Adafactor(LearningRate learning_rate = 0.001, double beta_2_decay = -0.8, double epsilon_1 = 1e-30,
                     double epsilon_2 = 1e-3, double clip_threshold = 1.0, bool relative_step = true,
                     ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double beta_2_decay_, epsilon_1_, epsilon_2_, clip_threshold_;
  bool relative_step_;
};

// Muon (Jordan et al.): momentum orthogonalized by Newton-Schulz iterations for 2-D weights;
// AdamW for the rest (other ranks, and weights whose name holds "embedding" when
// exclude_embeddings). weight_decay applies to the Muon weights, adam_weight_decay to the others.
struct MuonOptions {
  double adam_beta_1 = 0.9, adam_beta_2 = 0.999, adam_weight_decay = 0.004, epsilon = 1e-7;
  double weight_decay = 0.004;
  bool exclude_embeddings = true;
  double muon_a = 3.4445, muon_b = -4.7750, muon_c = 2.0315;
  double adam_lr_ratio = 1.0, momentum = 0.95;
  std::int64_t ns_steps = 5;
  bool nesterov = true;
  std::optional<double> rms_rate = 0.2;
};

class Muon : public Optimizer {
 public:
  using Options = MuonOptions;
  explicit Muon(LearningRate learning_rate = 0.001, Options options = {}, ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;
  bool uses_adamw(const Variable& var) const;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  Tensor orthogonalize(const Tensor& g) const;
  Options o_;
};

// Schedule-free AdamW (Defazio et al.): Adam steps on an auxiliary sequence, the weights an
// interpolation of it with its running average; no learning-rate schedule needed.
class ScheduleFreeAdamW : public Optimizer {
 public:
  explicit ScheduleFreeAdamW(LearningRate learning_rate = 0.0025, double beta_1 = 0.9, double beta_2 = 0.999,
                             double epsilon = 1e-8, std::int64_t warmup_steps = 0, ClipOptions clip = {});
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  std::int64_t warmup_steps_;
};

// Dynamic loss scaling around another optimizer (Keras 3's): scale_loss multiplies the loss by
// the scale; apply_gradients divides the gradients by it and, when all are finite, runs the
// inner optimizer's step (doubling the scale after dynamic_growth_steps such steps); when any
// is Inf or NaN it skips the step and halves the scale. Iterations, learning rate and slots
// are the inner optimizer's.
class LossScaleOptimizer : public Optimizer {
 public:
  explicit LossScaleOptimizer(std::shared_ptr<Optimizer> inner_optimizer, double initial_scale = 32768.0,
                              std::int64_t dynamic_growth_steps = 2000);
  void apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables) override;
  Tensor scale_loss(const Tensor& loss) const override;
  void build(const std::vector<Variable>& variables) override { inner_->build(variables); }
  const std::shared_ptr<Optimizer>& inner_optimizer() const { return inner_; }
  Variable dynamic_scale() const { return scale_; }
  Variable step_counter() const { return counter_; }
  double initial_scale() const { return initial_scale_; }
  std::int64_t dynamic_growth_steps() const { return growth_steps_; }

  Variable iterations() const override { return inner_->iterations(); }
  double learning_rate() const override { return inner_->learning_rate(); }
  void set_learning_rate(double rate) override { inner_->set_learning_rate(rate); }
  std::vector<Variable> variables() const override;
  std::map<std::string, Variable> slots_of(const Variable& var) const override { return inner_->slots_of(var); }
  Variable get_or_create_slot(const Variable& var, const std::string& name) override {
    return inner_->get_or_create_slot(var, name);
  }
  Variable get_or_create_iterations() override { return inner_->get_or_create_iterations(); }
  Variable learning_rate_variable() const override { return inner_->learning_rate_variable(); }
  const LearningRate& learning_rate_setting() const override { return inner_->learning_rate_setting(); }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override { return inner_->slot_specs(var); }

 protected:
  void update(const Variable&, const Tensor&, const Tensor&, const Tensor&) override {}

 private:
  std::shared_ptr<Optimizer> inner_;
  double initial_scale_;
  std::int64_t growth_steps_;
  Variable scale_, counter_;
};

// Keras' class name of a built-in optimizer ("Adam", "LossScaleOptimizer"); empty for a
// user's subclass, which saving cannot rebuild.
std::string keras_class_name(const Optimizer& optimizer);

}  // namespace ef::optim
