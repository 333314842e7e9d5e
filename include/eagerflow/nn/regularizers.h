#pragma once
// Weight regularizers, as Keras': a function from a weight (or a layer's output) to a scalar
// penalty that Layer::losses() adds to the training loss. Given to layers as kernel_regularizer,
// bias_regularizer (a penalty on the current weight) or activity_regularizer (a penalty on each
// output, divided by the batch size, as Keras 3 does).
#include <functional>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::nn {

class Regularizer {
 public:
  Regularizer() = default;  // none
  // By Keras name with Keras' defaults: "l1" (0.01), "l2" (0.01), "l1_l2" / "l1l2" (0.01 each).
  Regularizer(const char* name);  // NOLINT: kernel_regularizer = "l2" reads like Keras
  Regularizer(const std::string& name);  // NOLINT
  // Any function of the weight that returns a scalar (written with ef ops, so it differentiates).
  Regularizer(std::function<Tensor(const Tensor&)> fn, std::string name = "custom");  // NOLINT
  // l1 * sum(|x|) + l2 * sum(x^2), skipping a zero term (Keras' L1L2); named "l1", "l2" or "l1_l2".
  Regularizer(double l1, double l2);

  explicit operator bool() const { return static_cast<bool>(fn_); }
  // The penalty (a scalar of x's dtype); an error when no regularizer is set.
  Tensor operator()(const Tensor& x) const;
  // "l1", "l2", "l1_l2", "custom" (or the name given).
  const std::string& name() const { return name_; }
  // The factors of l1 / l2 / l1_l2 (0 for a term it does not have; both 0 for custom ones).
  double l1() const { return l1_; }
  double l2() const { return l2_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string name_;
  double l1_ = 0, l2_ = 0;
};

// l1 * sum(|x|)
Regularizer l1(double l1 = 0.01);
// l2 * sum(x^2)
Regularizer l2(double l2 = 0.01);
// l1 * sum(|x|) + l2 * sum(x^2). Keras 3's L1L2 class defaults to 0 for both; its "l1_l2" name
// (and Keras 2's l1_l2 function) to 0.01: this is the latter.
Regularizer l1_l2(double l1 = 0.01, double l2 = 0.01);

}  // namespace ef::nn
