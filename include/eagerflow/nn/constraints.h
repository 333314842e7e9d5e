#pragma once
// Weight constraints, as Keras': a projection applied to a weight after each optimizer update
// (Layer::apply_constraints, called by the train step). Given to layers as kernel_constraint
// and bias_constraint.
#include <functional>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::nn {

class Constraint {
 public:
  Constraint() = default;  // none
  // By Keras name with Keras' defaults: "max_norm", "non_neg", "unit_norm", "min_max_norm".
  Constraint(const char* name);  // NOLINT: kernel_constraint = "non_neg" reads like Keras
  Constraint(const std::string& name);  // NOLINT
  // Any function from the weight to its projected value (same shape and dtype).
  Constraint(std::function<Tensor(const Tensor&)> fn, std::string name = "custom");  // NOLINT

  explicit operator bool() const { return static_cast<bool>(fn_); }
  // The projected value; an error when no constraint is set.
  Tensor operator()(const Tensor& w) const;
  const std::string& name() const { return name_; }
  // The arguments of a named constraint (max_norm's max_value, ...) and its axes, as made by
  // the functions below: what a saved model's config records (eagerflow/nn/layer_config.h).
  const std::vector<std::pair<std::string, double>>& params() const { return params_; }
  const std::vector<int>& axes() const { return axes_; }
  Constraint& set_params(std::vector<std::pair<std::string, double>> params, std::vector<int> axes) {
    params_ = std::move(params);
    axes_ = std::move(axes);
    return *this;
  }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string name_;
  std::vector<std::pair<std::string, double>> params_;
  std::vector<int> axes_;
};

// The norms along `axes` (Keras' axis: 0 for a Dense kernel [in, out] constrains each unit's
// incoming weights; {0, 1, 2} for a Conv2D kernel [h, w, in, out]) are clipped to max_value:
// w * clip(norm, 0, max_value) / (1e-7 + norm).
Constraint max_norm(double max_value = 2.0, std::vector<int> axes = {0});
// max(w, 0)
Constraint non_neg();
// w / (1e-7 + norm along axes)
Constraint unit_norm(std::vector<int> axes = {0});
// w * (rate * clip(norm, min_value, max_value) + (1 - rate) * norm) / (1e-7 + norm)
Constraint min_max_norm(double min_value = 0.0, double max_value = 1.0, double rate = 1.0, std::vector<int> axes = {0});

}  // namespace ef::nn
