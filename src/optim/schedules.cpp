#include "eagerflow/optim/schedules.h"

#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"

namespace ef::optim {

ExponentialDecay::ExponentialDecay(double initial, double decay_steps, double decay_rate, bool staircase)
    : initial_(initial), decay_steps_(decay_steps), decay_rate_(decay_rate), staircase_(staircase) {
  if (!(decay_steps > 0)) fail("ExponentialDecay", "decay_steps must be positive, got " + std::to_string(decay_steps));
}

Tensor ExponentialDecay::operator()(const Tensor& step) const {
  Tensor p = step / decay_steps_;
  if (staircase_) p = cast(cast(p, DType::int64), DType::float32);  // floor for steps >= 0
  return pow(full_like(p, decay_rate_), p) * initial_;
}

CosineDecay::CosineDecay(double initial, double decay_steps, double alpha)
    : initial_(initial), decay_steps_(decay_steps), alpha_(alpha) {
  if (!(decay_steps > 0)) fail("CosineDecay", "decay_steps must be positive, got " + std::to_string(decay_steps));
}

Tensor CosineDecay::operator()(const Tensor& step) const {
  Tensor s = minimum(step, scalar_like(step, decay_steps_));
  Tensor cosine = (cos(s * (M_PI / decay_steps_)) + 1.0) * 0.5;
  return (cosine * (1.0 - alpha_) + alpha_) * initial_;
}

}  // namespace ef::optim
