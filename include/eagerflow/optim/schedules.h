#pragma once
// Learning-rate schedules (Keras'), functions of the optimizer's step, computed with ef ops so
// that a traced train step follows them without retracing.
#include <memory>
#include <optional>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::optim {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The rate at `step` (a float32 scalar tensor: completed steps).
  virtual Tensor operator()(const Tensor& step) const = 0;
};

// initial * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  ExponentialDecay(double initial, double decay_steps, double decay_rate, bool staircase = false);
  Tensor operator()(const Tensor& step) const override;
  double initial() const { return initial_; }
  double decay_steps() const { return decay_steps_; }
  double decay_rate() const { return decay_rate_; }
  bool staircase() const { return staircase_; }

 private:
  double initial_, decay_steps_, decay_rate_;
  bool staircase_;
};

// initial * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha).
// With a warmup_target: first a linear warmup from initial to warmup_target over warmup_steps,
// then the decay from warmup_target.
class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial, double decay_steps, double alpha = 0.0, std::optional<double> warmup_target = std::nullopt,
              double warmup_steps = 0.0);
  Tensor operator()(const Tensor& step) const override;
  double initial() const { return initial_; }
  double decay_steps() const { return decay_steps_; }
  double alpha() const { return alpha_; }
  std::optional<double> warmup_target() const { return warmup_target_; }
  double warmup_steps() const { return warmup_steps_; }

 private:
  double initial_, decay_steps_, alpha_;
  std::optional<double> warmup_target_;
  double warmup_steps_;
};

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i],
// values.back() after the last boundary.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values);
  Tensor operator()(const Tensor& step) const override;
  const std::vector<double>& boundaries() const { return boundaries_; }
  const std::vector<double>& values() const { return values_; }

 private:
  std::vector<double> boundaries_, values_;
};

// (initial - end) * (1 - min(step, decay_steps) / decay_steps)^power + end; with cycle, the
// decay restarts over the next multiple of decay_steps past the step.
class PolynomialDecay : public LearningRateSchedule {
 public:
  PolynomialDecay(double initial, double decay_steps, double end_learning_rate = 1e-4, double power = 1.0, bool cycle = false);
  Tensor operator()(const Tensor& step) const override;
  double initial() const { return initial_; }
  double decay_steps() const { return decay_steps_; }
  double end_learning_rate() const { return end_; }
  double power() const { return power_; }
  bool cycle() const { return cycle_; }

 private:
  double initial_, decay_steps_, end_, power_;
  bool cycle_;
};

// initial / (1 + decay_rate * step / decay_steps), the ratio floored when staircase.
class InverseTimeDecay : public LearningRateSchedule {
 public:
  InverseTimeDecay(double initial, double decay_steps, double decay_rate, bool staircase = false);
  Tensor operator()(const Tensor& step) const override;
  double initial() const { return initial_; }
  double decay_steps() const { return decay_steps_; }
  double decay_rate() const { return decay_rate_; }
  bool staircase() const { return staircase_; }

 private:
  double initial_, decay_steps_, decay_rate_;
  bool staircase_;
};

// SGDR: cosine decays restarting after first_decay_steps, each period t_mul times longer and
// its peak m_mul times lower.
class CosineDecayRestarts : public LearningRateSchedule {
 public:
  CosineDecayRestarts(double initial, double first_decay_steps, double t_mul = 2.0, double m_mul = 1.0, double alpha = 0.0);
  Tensor operator()(const Tensor& step) const override;
  double initial() const { return initial_; }
  double first_decay_steps() const { return first_decay_steps_; }
  double t_mul() const { return t_mul_; }
  double m_mul() const { return m_mul_; }
  double alpha() const { return alpha_; }

 private:
  double initial_, first_decay_steps_, t_mul_, m_mul_, alpha_;
};

// A copy of a built-in schedule (one of the classes above, exactly); null for other classes.
std::shared_ptr<LearningRateSchedule> copy_builtin_schedule(const LearningRateSchedule& s);

// A number or a schedule, as Keras' learning_rate argument.
class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}  // NOLINT: Adam(1e-3)
  template <class S>
    requires std::derived_from<S, LearningRateSchedule>
  LearningRate(S schedule) : schedule_(std::make_shared<S>(std::move(schedule))) {}  // NOLINT
  // A schedule shared with its owner (a Python subclass keeps its object alive through it).
  explicit LearningRate(std::shared_ptr<LearningRateSchedule> schedule) : schedule_(std::move(schedule)) {}
  double value() const { return value_; }
  const std::shared_ptr<LearningRateSchedule>& schedule() const { return schedule_; }

 private:
  double value_ = 0.0;
  std::shared_ptr<LearningRateSchedule> schedule_;
};

}  // namespace ef::optim
