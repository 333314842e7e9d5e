#include "eagerflow/nn/constraints.h"

#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {
namespace {
constexpr double kEpsilon = 1e-7;  // Keras' backend.epsilon()

Tensor norms(const Tensor& w, const std::vector<int>& axes) {
  for (int a : axes)
    if (a < -w.rank() || a >= w.rank())
      fail("constraint", "axis " + std::to_string(a) + " is out of range for a weight " + w.spec().str());
  return sqrt(sum(square(w), axes, /*keepdims=*/true));
}

void expect_finite(double v, const char* what) {
  if (!std::isfinite(v)) fail("constraint", std::string(what) + " must be a finite number");
}
}  // namespace

Constraint::Constraint(const char* name) : Constraint(std::string(name)) {}

Constraint::Constraint(const std::string& name) {
  if (name == "max_norm") *this = max_norm();
  else if (name == "non_neg") *this = non_neg();
  else if (name == "unit_norm") *this = unit_norm();
  else if (name == "min_max_norm") *this = min_max_norm();
  else if (!name.empty())
    fail("constraint", "unknown constraint '" + name + "' (known: max_norm, non_neg, unit_norm, min_max_norm)");
}

Constraint::Constraint(std::function<Tensor(const Tensor&)> fn, std::string name) : fn_(std::move(fn)), name_(std::move(name)) {}

Tensor Constraint::operator()(const Tensor& w) const {
  if (!fn_) fail("constraint", "no constraint is set");
  Tensor out = fn_(w);
  if (!out.defined() || out.shape() != w.shape() || out.dtype() != w.dtype())
    fail("constraint", "'" + name_ + "' must return a tensor like the weight " + w.spec().str() + ", got " +
                           (out.defined() ? out.spec().str() : std::string("an undefined tensor")));
  return out;
}

Constraint max_norm(double max_value, std::vector<int> axes) {
  expect_finite(max_value, "max_norm's max_value");
  if (max_value < 0) fail("constraint", "max_norm's max_value must be >= 0, got " + std::to_string(max_value));
  return Constraint(
      [max_value, axes](const Tensor& w) {
        Tensor n = norms(w, axes);
        Tensor desired = minimum(n, scalar_like(n, max_value));  // norms are >= 0: clip(n, 0, max)
        return w * (desired / (n + kEpsilon));
      },
      "max_norm").set_params({{"max_value", max_value}}, axes);
}

Constraint non_neg() {
  return Constraint([](const Tensor& w) { return maximum(w, scalar_like(w, 0.0)); }, "non_neg");
}

Constraint unit_norm(std::vector<int> axes) {
  return Constraint([axes](const Tensor& w) { return w / (norms(w, axes) + kEpsilon); }, "unit_norm").set_params({}, axes);
}

Constraint min_max_norm(double min_value, double max_value, double rate, std::vector<int> axes) {
  expect_finite(min_value, "min_max_norm's min_value");
  expect_finite(max_value, "min_max_norm's max_value");
  expect_finite(rate, "min_max_norm's rate");
  if (min_value > max_value)
    fail("constraint", "min_max_norm needs min_value <= max_value, got " + std::to_string(min_value) + " > " +
                           std::to_string(max_value));
  return Constraint(
      [=](const Tensor& w) {
        Tensor n = norms(w, axes);
        Tensor clipped = minimum(maximum(n, scalar_like(n, min_value)), scalar_like(n, max_value));
        Tensor desired = rate * clipped + (1.0 - rate) * n;
        return w * (desired / (n + kEpsilon));
      },
      "min_max_norm").set_params({{"min_value", min_value}, {"max_value", max_value}, {"rate", rate}}, axes);
}

}  // namespace ef::nn
