#pragma once
#include <functional>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/constraints.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/nn/regularizers.h"

namespace ef::nn {

// Dense(units): y = activation(x @ kernel + bias) on the last axis of a rank >= 2 input.
class Dense : public Layer {
 public:
  explicit Dense(std::int64_t units, ActivationFn activation = {}, bool use_bias = true, std::string name = "");
  Variable kernel() const { return kernel_; }
  Variable bias() const { return bias_; }
  std::int64_t units() const { return units_; }
  std::optional<LayerConfig> get_config() const override;
  bool supports_masking() const override { return true; }

  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();
  // Keras' kernel_regularizer / bias_regularizer (in losses()) and kernel_constraint /
  // bias_constraint (apply_constraints()); set before the first call. activity_regularizer:
  // Layer::set_activity_regularizer.
  Regularizer kernel_regularizer, bias_regularizer;
  Constraint kernel_constraint, bias_constraint;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  std::int64_t units_;
  ActivationFn activation_;
  bool use_bias_;
  Variable kernel_, bias_;
};

}  // namespace ef::nn
