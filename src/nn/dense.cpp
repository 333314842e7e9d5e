#include "eagerflow/nn/dense.h"

#include "eagerflow/ops/ops.h"
#include "ops/fused.h"

namespace ef::nn {
Dense::Dense(std::int64_t units, ActivationFn activation, bool use_bias, std::string name)
    : Layer(std::move(name)), units_(units), activation_(std::move(activation)), use_bias_(use_bias) {
  if (units <= 0) fail("dense", "units must be positive, got " + std::to_string(units));
}

void Dense::build(const Shape& input_shape) {
  if (input_shape.rank() < 2)
    fail(name(), "expects inputs of rank >= 2 (batch, ..., features), got shape " + input_shape.str());
  std::int64_t features = input_shape[input_shape.rank() - 1];
  if (features == kDynamic) fail(name(), "the last dim of the input must be known to build, got " + input_shape.str());
  kernel_ = add_weight("kernel", Shape{features, units_}, kernel_initializer);
  if (use_bias_) bias_ = add_weight("bias", Shape{units_}, bias_initializer);
  if (kernel_regularizer) set_weight_regularizer(kernel_, kernel_regularizer);
  if (kernel_constraint) set_weight_constraint(kernel_, kernel_constraint);
  if (use_bias_ && bias_regularizer) set_weight_regularizer(bias_, bias_regularizer);
  if (use_bias_ && bias_constraint) set_weight_constraint(bias_, bias_constraint);
}

Tensor Dense::call(const Tensor& inputs) {
  std::int64_t features = kernel_.shape()[0];
  if (inputs.rank() < 2 || inputs.shape()[inputs.rank() - 1] != features)
    fail(name(), "input " + inputs.spec().str() + " is incompatible: expected the last axis to be " +
                     std::to_string(features) + " (the layer was built for " + kernel_.shape().str() + " kernel)");
  const std::string& a = activation_.name();
  std::optional<UnaryKind> act = fusible_activation_named(a);
  if ((act || a == "linear") && eager_fusion_allowed()) {
    Tensor b = use_bias_ ? Tensor(bias_) : Tensor();
    Tensor fused = eager_dense(inputs, kernel_, use_bias_ ? &b : nullptr, act);
    if (fused.defined()) return fused;
  }
  Tensor y = matmul(inputs, kernel_);
  if (use_bias_) y = add(y, bias_);
  return activation_(y);
}

}  // namespace ef::nn
