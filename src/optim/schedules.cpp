#include "eagerflow/optim/schedules.h"

#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"

namespace ef::optim {
namespace {
// Parameters that would turn every rate into NaN or Inf fail here, naming the parameter.
void expect_finite(const char* schedule, const char* what, double v) {
  if (!std::isfinite(v)) fail(schedule, std::string(what) + " must be a finite number, got " + std::to_string(v));
}
}  // namespace

ExponentialDecay::ExponentialDecay(double initial, double decay_steps, double decay_rate, bool staircase)
    : initial_(initial), decay_steps_(decay_steps), decay_rate_(decay_rate), staircase_(staircase) {
  expect_finite("ExponentialDecay", "initial_learning_rate", initial);
  expect_finite("ExponentialDecay", "decay_steps", decay_steps);
  expect_finite("ExponentialDecay", "decay_rate", decay_rate);
  if (!(decay_steps > 0)) fail("ExponentialDecay", "decay_steps must be positive, got " + std::to_string(decay_steps));
  if (!(decay_rate > 0)) fail("ExponentialDecay", "decay_rate must be positive, got " + std::to_string(decay_rate));
}

Tensor ExponentialDecay::operator()(const Tensor& step) const {
  Tensor p = step / decay_steps_;
  if (staircase_) p = cast(cast(p, DType::int64), DType::float32);  // floor for steps >= 0
  return pow(full_like(p, decay_rate_), p) * initial_;
}

CosineDecay::CosineDecay(double initial, double decay_steps, double alpha)
    : initial_(initial), decay_steps_(decay_steps), alpha_(alpha) {
  expect_finite("CosineDecay", "initial_learning_rate", initial);
  expect_finite("CosineDecay", "decay_steps", decay_steps);
  expect_finite("CosineDecay", "alpha", alpha);
  if (!(decay_steps > 0)) fail("CosineDecay", "decay_steps must be positive, got " + std::to_string(decay_steps));
}

Tensor CosineDecay::operator()(const Tensor& step) const {
  Tensor s = minimum(step, scalar_like(step, decay_steps_));
  Tensor cosine = (cos(s * (M_PI / decay_steps_)) + 1.0) * 0.5;
  return (cosine * (1.0 - alpha_) + alpha_) * initial_;
}

}  // namespace ef::optim
