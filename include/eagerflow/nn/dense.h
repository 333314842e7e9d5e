#pragma once
#include <functional>

#include "eagerflow/nn/layer.h"

namespace ef::nn {

// An activation by Keras name ("relu", "sigmoid", "tanh", "gelu", "softmax", "linear") or
// as a function.
class Activation {
 public:
  Activation() = default;
  Activation(const char* name);  // NOLINT: Dense(32, "relu") reads like Keras
  Activation(std::string name);  // NOLINT
  Activation(Tensor (*fn)(const Tensor&)) : fn_(fn), name_("custom") {}  // NOLINT
  Activation(std::function<Tensor(const Tensor&)> fn) : fn_(std::move(fn)), name_("custom") {}  // NOLINT
  Tensor operator()(const Tensor& x) const { return fn_ ? fn_(x) : x; }
  const std::string& name() const { return name_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string name_ = "linear";
};

// Dense(units): y = activation(x @ kernel + bias) on the last axis of a rank >= 2 input.
class Dense : public Layer {
 public:
  explicit Dense(std::int64_t units, Activation activation = {}, bool use_bias = true, std::string name = "");
  Variable kernel() const { return kernel_; }
  Variable bias() const { return bias_; }
  std::int64_t units() const { return units_; }

  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  std::int64_t units_;
  Activation activation_;
  bool use_bias_;
  Variable kernel_, bias_;
};

}  // namespace ef::nn
