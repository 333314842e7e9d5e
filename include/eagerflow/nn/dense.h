#pragma once
#include <span>

#include "eagerflow/nn/layer_args.h"  // Layer, and the activation, initializer, regularizer and constraint types

namespace ef::nn {

// Keras' Dense arguments, with Keras' defaults; Dense::args() declares each one once.
struct DenseOptions : LayerOptions {
  std::int64_t units = 0;  // required, positive
  ActivationFn activation;  // none: linear
  bool use_bias = true;
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();
  Regularizer kernel_regularizer, bias_regularizer;
  Constraint kernel_constraint, bias_constraint;
};

// Dense(units): y = activation(x @ kernel + bias) on the last axis of a rank >= 2 input.
class Dense : public Layer {
 public:
  explicit Dense(DenseOptions options);
  explicit Dense(std::int64_t units, ActivationFn activation = {}, bool use_bias = true, std::string name = "");
  // The declared arguments (src/nn/dense.cpp): the constructor's checks, get_config, the factory
  // and the Python keywords (python/src/layers.cpp) all come from this list.
  static std::span<const LayerArg<DenseOptions>> args();
  // The layer's own arguments; the base ones (name, trainable, dtype, activity_regularizer) as
  // the layer has them now are Layer's.
  const DenseOptions& options() const { return options_; }
  Variable kernel() const { return kernel_; }
  Variable bias() const { return bias_; }
  std::int64_t units() const { return options_.units; }
  std::optional<LayerConfig> get_config() const override;
  bool casts_integer_inputs() const override { return true; }
  bool supports_masking() const override { return true; }

 private:
  DenseOptions options_;  // before the references below, which name its members

 public:
  // Set before the first call: Keras' kernel_regularizer / bias_regularizer (in losses()) and
  // kernel_constraint / bias_constraint (apply_constraints()).
  Initializer& kernel_initializer = options_.kernel_initializer;
  Initializer& bias_initializer = options_.bias_initializer;
  Regularizer& kernel_regularizer = options_.kernel_regularizer;
  Regularizer& bias_regularizer = options_.bias_regularizer;
  Constraint& kernel_constraint = options_.kernel_constraint;
  Constraint& bias_constraint = options_.bias_constraint;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  Variable kernel_, bias_;
};

}  // namespace ef::nn
