#pragma once
// Optimizers, Keras-style: apply_gradients(grads, vars) updates the variables with ef ops, so
// it runs eagerly and inside a traced train step alike. Slot variables (momentum, moments)
// and the step counter are created on the first call, which inside ef::function is the
// first trace: the step still traces once.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/optim/schedules.h"
#include "eagerflow/variable.h"

namespace ef::optim {

struct ClipOptions {
  std::optional<double> clipnorm;         // each gradient rescaled to at most this L2 norm
  std::optional<double> global_clipnorm;  // all gradients rescaled together
  std::optional<double> clipvalue;        // each gradient element clipped to [-clipvalue, clipvalue]
  // Keras' decoupled weight decay of every optimizer: var -= var * weight_decay * lr before
  // the step (AdamW has its own, fused into its update).
  std::optional<double> weight_decay;
  // Keras' use_ema: after each step, the slot "average" of every variable becomes
  // m * average + (1 - m) * var (the variable itself at the first step), m = ema_momentum; with
  // ema_overwrite_frequency = k, every k-th step also copies the averages into the variables.
  bool use_ema = false;
  double ema_momentum = 0.99;
  std::optional<std::int64_t> ema_overwrite_frequency;
};

// A slot an optimizer keeps per variable: its name, first value, and shape when it is not the
// variable's (Adafactor's factored second moments).
struct SlotSpec {
  std::string name;
  double initial_value = 0.0;
  std::optional<Shape> shape;
  bool copy_of_variable = false;  // starts as the variable's value (ScheduleFreeAdamW)
};

class Optimizer {
 public:
  Optimizer(std::string name, LearningRate learning_rate, ClipOptions clip);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One step over matching lists; an undefined gradient skips its variable (TF's None).
  virtual void apply_gradients(const std::vector<Tensor>& gradients, const std::vector<Variable>& variables);
  // Makes the step counter and every slot of `variables` now, eagerly (Keras' build): a step
  // traced later, also inside a branch of ef::cond, then only reads and writes them.
  virtual void build(const std::vector<Variable>& variables);
  // The loss whose gradients apply_gradients expects: the loss itself, or scaled by a loss
  // scale (LossScaleOptimizer). Model::train_step differentiates this.
  virtual Tensor scale_loss(const Tensor& loss) const { return loss; }
  // Completed steps (an int64 scalar variable, made with the optimizer).
  virtual Variable iterations() const { return iterations_; }
  // The current rate as a number (at the current step for a schedule).
  virtual double learning_rate() const;
  // Replaces a constant rate; a traced step reads it from a variable, so no retrace.
  virtual void set_learning_rate(double rate);
  const std::string& name() const { return name_; }
  // Every optimizer variable (the step counter first, then the slots), for checkpoints.
  virtual std::vector<Variable> variables() const;
  // For checkpoints: the slots made so far for `var` (by slot name), the slot `name` of `var`
  // made now if missing (restoring into a fresh optimizer), the step counter made if
  // missing, and the variable that holds a constant learning rate.
  virtual std::map<std::string, Variable> slots_of(const Variable& var) const;
  virtual Variable get_or_create_slot(const Variable& var, const std::string& name);
  virtual Variable get_or_create_iterations();
  virtual Variable learning_rate_variable() const { return lr_; }
  // The constructor's arguments, for saving models (eagerflow/saving/model.h).
  virtual const LearningRate& learning_rate_setting() const { return schedule_; }
  const ClipOptions& clip_options() const { return clip_; }
  // The class-specific arguments by Keras' names (beta_1, epsilon, ...), for get_config and
  // saving; flags are 0 or 1. make_optimizer (below) takes them back.
  virtual std::vector<std::pair<std::string, double>> hyperparameters() const { return {}; }
  // The slots this optimizer keeps for `var` (none by default).
  virtual std::vector<SlotSpec> slot_specs(const Variable& var) const;

 protected:
  // Updates one variable; `lr` and `step` (scalars in the variable's dtype; step counts from
  // 1) are tensors.
  virtual void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) = 0;
  // Runs once per step before the per-variable updates (Nadam's momentum-cache product).
  // `step` is a float32 scalar counting from 1.
  virtual void before_updates(const Tensor& step) { (void)step; }
  // The slot `slot` of `var`, made on first use from slot_specs (zeros when unlisted).
  Variable slot(const Variable& var, const std::string& slot);

 private:
  void update_moving_averages(const std::vector<Variable>& variables);

 private:
  std::string name_;
  LearningRate schedule_;
  ClipOptions clip_;
  Variable lr_;          // the constant rate, as a variable
  Variable iterations_;  // made on the first step
  std::map<const VariableState*, std::map<std::string, Variable>> slots_;
  std::vector<Variable> slot_order_;
};

// Plain, momentum and Nesterov SGD (Keras' update rule).
class SGD : public Optimizer {
 public:
  explicit SGD(LearningRate learning_rate = 0.01, double momentum = 0.0, bool nesterov = false, ClipOptions clip = {});
  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double momentum_;
  bool nesterov_;
};

class Adam : public Optimizer {
 public:
  explicit Adam(LearningRate learning_rate = 0.001, double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7,
                ClipOptions clip = {});
  double beta_1() const { return beta_1_; }
  double beta_2() const { return beta_2_; }
  double epsilon() const { return epsilon_; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;
  double beta_1_, beta_2_, epsilon_;
};

// Adam with decoupled weight decay: var -= lr * weight_decay * var before each Adam step.
class AdamW : public Adam {
 public:
  explicit AdamW(LearningRate learning_rate = 0.001, double weight_decay = 0.004, double beta_1 = 0.9,
                 double beta_2 = 0.999, double epsilon = 1e-7, ClipOptions clip = {});
  double weight_decay() const { return weight_decay_; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double weight_decay_;
};

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(LearningRate learning_rate = 0.001, double rho = 0.9, double momentum = 0.0, double epsilon = 1e-7,
                   ClipOptions clip = {});
  double rho() const { return rho_; }
  double momentum() const { return momentum_; }
  double epsilon() const { return epsilon_; }
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  std::vector<SlotSpec> slot_specs(const Variable& var) const override;

 protected:
  void update(const Variable& var, const Tensor& grad, const Tensor& lr, const Tensor& step) override;

 private:
  double rho_, momentum_, epsilon_;
};

// ---------------------------------------------------------------- fused update ops
// The update ops the optimizers above run, one per variable and step (TF's raw
// ResourceApplyGradientDescent / ...Momentum / ...Adam / ...RMSProp): one pass that reads the
// variable, its slots and the gradient and writes the variable and the slots, in place when no
// one else holds their values; eagerly, or as one ordered effect of a traced step. Not
// differentiable. `lr` is a float scalar; `step` (Adam's bias correction) a scalar counting from
// 1. The variable, the slots and the gradient share one dtype (float32 or float64) and shape.
void apply_sgd(const Variable& var, const Tensor& grad, const Tensor& lr);
// m = m * momentum - grad * lr; var += m (nesterov: var += m * momentum - grad * lr).
void apply_momentum(const Variable& var, const Variable& m, const Tensor& grad, const Tensor& lr, double momentum,
                    bool nesterov = false);
// Keras' Adam; weight_decay > 0 first decays var by var * lr * weight_decay (AdamW), in the same pass.
void apply_adam(const Variable& var, const Variable& m, const Variable& v, const Tensor& grad, const Tensor& lr,
                const Tensor& step, double beta_1 = 0.9, double beta_2 = 0.999, double epsilon = 1e-7,
                double weight_decay = 0.0);
// Keras' RMSprop: velocity = rho * velocity + (1 - rho) * grad^2; with momentum > 0 the step
// lr * grad / sqrt(velocity + epsilon) goes through the slot `m` (which must then be given).
void apply_rmsprop(const Variable& var, const Variable& velocity, const Tensor& grad, const Tensor& lr, double rho = 0.9,
                   double epsilon = 1e-7, const Variable& m = {}, double momentum = 0.0);

// A new optimizer by Keras name with Keras' defaults: "sgd", "adam", "adamw", "rmsprop",
// "adagrad", "adadelta", "adamax", "nadam", "ftrl", "lion", "lamb", "adafactor"
// (case-insensitive); any other name is an ef::Error listing these (src/optim/by_name.cpp).
std::shared_ptr<Optimizer> optimizer_by_name(const std::string& name);
// An optimizer of Keras class `class_name` from hyperparameters() as saved: missing ones take
// Keras' defaults, unknown ones are an ef::Error naming them.
std::shared_ptr<Optimizer> make_optimizer(const std::string& class_name, LearningRate learning_rate,
                                          const std::map<std::string, double>& hyperparameters, ClipOptions clip = {});

}  // namespace ef::optim
