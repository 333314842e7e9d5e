#pragma once
// An activation function by Keras name ("relu", "sigmoid", "tanh", "gelu", "softmax",
// "linear") or as a callable: the `activation` argument of Dense, Conv2D and Activation.
#include <functional>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::nn {

class ActivationFn {
 public:
  ActivationFn() = default;
  ActivationFn(const char* name);  // NOLINT: Dense(32, "relu") reads like Keras
  ActivationFn(std::string name);  // NOLINT
  ActivationFn(Tensor (*fn)(const Tensor&)) : fn_(fn), name_("custom") {}  // NOLINT
  ActivationFn(std::function<Tensor(const Tensor&)> fn) : fn_(std::move(fn)), name_("custom") {}  // NOLINT
  Tensor operator()(const Tensor& x) const { return fn_ ? fn_(x) : x; }
  const std::string& name() const { return name_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string name_ = "linear";
};

}  // namespace ef::nn
