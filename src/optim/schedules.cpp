#include "eagerflow/optim/schedules.h"

#include <algorithm>
#include <cmath>
#include <typeinfo>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/math.h"
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

CosineDecay::CosineDecay(double initial, double decay_steps, double alpha, std::optional<double> warmup_target,
                         double warmup_steps)
    : initial_(initial), decay_steps_(decay_steps), alpha_(alpha), warmup_target_(warmup_target), warmup_steps_(warmup_steps) {
  expect_finite("CosineDecay", "initial_learning_rate", initial);
  expect_finite("CosineDecay", "decay_steps", decay_steps);
  expect_finite("CosineDecay", "alpha", alpha);
  expect_finite("CosineDecay", "warmup_steps", warmup_steps);
  if (warmup_target) expect_finite("CosineDecay", "warmup_target", *warmup_target);
  if (!(decay_steps > 0)) fail("CosineDecay", "decay_steps must be positive, got " + std::to_string(decay_steps));
  if (warmup_steps < 0) fail("CosineDecay", "warmup_steps must be >= 0, got " + std::to_string(warmup_steps));
}

Tensor CosineDecay::operator()(const Tensor& step) const {
  if (!warmup_target_) {
    Tensor s = minimum(step, scalar_like(step, decay_steps_));
    Tensor cosine = (cos(s * (M_PI / decay_steps_)) + 1.0) * 0.5;
    return (cosine * (1.0 - alpha_) + alpha_) * initial_;
  }
  // Keras: the warmup climbs linearly to warmup_target; the decay then starts from it.
  Tensor s = minimum(step, scalar_like(step, decay_steps_ + warmup_steps_));
  Tensor warm = s * ((*warmup_target_ - initial_) / std::max(warmup_steps_, 1e-30)) + initial_;
  Tensor cosine = (cos((s - warmup_steps_) * (M_PI / decay_steps_)) + 1.0) * 0.5;
  Tensor decayed = (cosine * (1.0 - alpha_) + alpha_) * *warmup_target_;
  return where(less(s, scalar_like(s, warmup_steps_)), warm, decayed);
}

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<double> boundaries, std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  if (boundaries_.size() + 1 != values_.size())
    fail("PiecewiseConstantDecay", "the length of boundaries should be 1 less than the length of values (got " +
                                       std::to_string(boundaries_.size()) + " boundaries and " +
                                       std::to_string(values_.size()) + " values)");
  for (double b : boundaries_) expect_finite("PiecewiseConstantDecay", "a boundary", b);
  for (double v : values_) expect_finite("PiecewiseConstantDecay", "a value", v);
}

Tensor PiecewiseConstantDecay::operator()(const Tensor& step) const {
  Tensor out = scalar_like(step, values_.back());
  for (std::size_t i = boundaries_.size(); i-- > 0;)
    out = where(less_equal(step, scalar_like(step, boundaries_[i])), scalar_like(step, values_[i]), out);
  return out;
}

PolynomialDecay::PolynomialDecay(double initial, double decay_steps, double end_learning_rate, double power, bool cycle)
    : initial_(initial), decay_steps_(decay_steps), end_(end_learning_rate), power_(power), cycle_(cycle) {
  expect_finite("PolynomialDecay", "initial_learning_rate", initial);
  expect_finite("PolynomialDecay", "decay_steps", decay_steps);
  expect_finite("PolynomialDecay", "end_learning_rate", end_learning_rate);
  expect_finite("PolynomialDecay", "power", power);
  if (!(decay_steps > 0)) fail("PolynomialDecay", "decay_steps must be positive, got " + std::to_string(decay_steps));
}

Tensor PolynomialDecay::operator()(const Tensor& step) const {
  Tensor steps = scalar_like(step, decay_steps_);
  Tensor s = step;
  if (cycle_) steps = steps * where(equal(step, scalar_like(step, 0.0)), scalar_like(step, 1.0), ceil(step / decay_steps_));
  else s = minimum(step, steps);
  Tensor p = s / steps;
  return pow(1.0 - p, scalar_like(p, power_)) * (initial_ - end_) + end_;
}

InverseTimeDecay::InverseTimeDecay(double initial, double decay_steps, double decay_rate, bool staircase)
    : initial_(initial), decay_steps_(decay_steps), decay_rate_(decay_rate), staircase_(staircase) {
  expect_finite("InverseTimeDecay", "initial_learning_rate", initial);
  expect_finite("InverseTimeDecay", "decay_steps", decay_steps);
  expect_finite("InverseTimeDecay", "decay_rate", decay_rate);
  if (!(decay_steps > 0)) fail("InverseTimeDecay", "decay_steps must be positive, got " + std::to_string(decay_steps));
}

Tensor InverseTimeDecay::operator()(const Tensor& step) const {
  Tensor p = step / decay_steps_;
  if (staircase_) p = floor(p);
  return math::reciprocal(p * decay_rate_ + 1.0) * initial_;
}

CosineDecayRestarts::CosineDecayRestarts(double initial, double first_decay_steps, double t_mul, double m_mul, double alpha)
    : initial_(initial), first_decay_steps_(first_decay_steps), t_mul_(t_mul), m_mul_(m_mul), alpha_(alpha) {
  expect_finite("CosineDecayRestarts", "initial_learning_rate", initial);
  expect_finite("CosineDecayRestarts", "first_decay_steps", first_decay_steps);
  expect_finite("CosineDecayRestarts", "t_mul", t_mul);
  expect_finite("CosineDecayRestarts", "m_mul", m_mul);
  expect_finite("CosineDecayRestarts", "alpha", alpha);
  if (!(first_decay_steps > 0))
    fail("CosineDecayRestarts", "first_decay_steps must be positive, got " + std::to_string(first_decay_steps));
  if (!(t_mul > 0)) fail("CosineDecayRestarts", "t_mul must be positive, got " + std::to_string(t_mul));
}

Tensor CosineDecayRestarts::operator()(const Tensor& step) const {
  Tensor fraction = step / first_decay_steps_;
  Tensor restart;
  if (t_mul_ == 1.0) {
    restart = floor(fraction);
    fraction = fraction - restart;
  } else {
    restart = floor(log(1.0 - fraction * (1.0 - t_mul_)) / std::log(t_mul_));
    Tensor t_pow = pow(scalar_like(restart, t_mul_), restart);
    Tensor done = (1.0 - t_pow) / (1.0 - t_mul_);
    fraction = (fraction - done) / t_pow;
  }
  Tensor m_fac = pow(scalar_like(restart, m_mul_), restart);
  Tensor cosine = (cos(fraction * M_PI) + 1.0) * 0.5 * m_fac;
  return (cosine * (1.0 - alpha_) + alpha_) * initial_;
}

std::shared_ptr<LearningRateSchedule> copy_builtin_schedule(const LearningRateSchedule& s) {
  const std::type_info& t = typeid(s);
  if (t == typeid(ExponentialDecay)) return std::make_shared<ExponentialDecay>(static_cast<const ExponentialDecay&>(s));
  if (t == typeid(CosineDecay)) return std::make_shared<CosineDecay>(static_cast<const CosineDecay&>(s));
  if (t == typeid(PiecewiseConstantDecay)) return std::make_shared<PiecewiseConstantDecay>(static_cast<const PiecewiseConstantDecay&>(s));
  if (t == typeid(PolynomialDecay)) return std::make_shared<PolynomialDecay>(static_cast<const PolynomialDecay&>(s));
  if (t == typeid(InverseTimeDecay)) return std::make_shared<InverseTimeDecay>(static_cast<const InverseTimeDecay&>(s));
  if (t == typeid(CosineDecayRestarts)) return std::make_shared<CosineDecayRestarts>(static_cast<const CosineDecayRestarts&>(s));
  return nullptr;
}

}  // namespace ef::optim
