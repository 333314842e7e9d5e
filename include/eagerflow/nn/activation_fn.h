#pragma once
// An activation function by Keras name ("relu", "sigmoid", "tanh", "gelu", "softmax",
// "linear", "leaky_relu", "elu", "selu", "softplus", "softsign", "swish" / "silu", "mish",
// "relu6", "hard_sigmoid", "exponential") or as a callable: the `activation` argument of
// Dense, Conv2D, Conv2DTranspose and Activation. By name they take Keras' defaults
// (keras.activations.leaky_relu: negative_slope 0.2; elu: alpha 1).
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
  // A function under a name (a Keras activation the front end computes, saved by that name).
  ActivationFn(std::function<Tensor(const Tensor&)> fn, std::string name) : fn_(std::move(fn)), name_(std::move(name)) {}
  Tensor operator()(const Tensor& x) const { return fn_ ? fn_(x) : x; }
  const std::string& name() const { return name_; }

 private:
  std::function<Tensor(const Tensor&)> fn_;
  std::string name_ = "linear";
};

// Keras' activations (keras.activations.*), built on ef ops so they trace and differentiate.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.2);  // x >= 0 ? x : slope * x
Tensor elu(const Tensor& x, double alpha = 1.0);                 // x > 0 ? x : alpha * (exp(x) - 1)
Tensor selu(const Tensor& x);      // 1.05070098 * elu(x, 1.67326324)
Tensor softplus(const Tensor& x);  // log(1 + exp(x)), computed without overflow
Tensor softsign(const Tensor& x);  // x / (1 + |x|)
Tensor swish(const Tensor& x);     // x * sigmoid(x), Keras' silu
inline Tensor silu(const Tensor& x) { return swish(x); }
Tensor mish(const Tensor& x);          // x * tanh(softplus(x))
Tensor relu6(const Tensor& x);         // min(max(x, 0), 6)
Tensor hard_sigmoid(const Tensor& x);  // relu6(x + 3) / 6, as Keras 3

}  // namespace ef::nn
