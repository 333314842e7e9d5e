#pragma once
// Learning-rate schedules (Keras'), functions of the optimizer's step, computed with ef ops so
// that a traced train step follows them without retracing.
#include <memory>

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
class CosineDecay : public LearningRateSchedule {
 public:
  CosineDecay(double initial, double decay_steps, double alpha = 0.0);
  Tensor operator()(const Tensor& step) const override;
  double initial() const { return initial_; }
  double decay_steps() const { return decay_steps_; }
  double alpha() const { return alpha_; }

 private:
  double initial_, decay_steps_, alpha_;
};

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
