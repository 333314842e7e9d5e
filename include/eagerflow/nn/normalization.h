#pragma once
// BatchNormalization and LayerNormalization over the last axis, as Keras' defaults.
#include "eagerflow/nn/layer.h"

namespace ef::nn {

// Layer normalization over the last axis as one fused op (forward and gradient each one pass):
// (x - mean) / sqrt(var + epsilon) * gamma + beta with the biased variance; gamma and beta are
// [C] of x's dtype (float32 or float64). LayerNormalization runs on it.
Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon = 1e-3);

// Training: normalizes with the batch's mean and variance (over every axis but the last) and
// moves the moving statistics toward them (momentum); not training, or frozen (set_trainable(false)
// on it or on a layer it runs inside): uses the moving ones and leaves them unchanged, as Keras.
struct BatchNormalizationOptions {
  int axis = -1;  // the features axis (1 for channels_first)
  double momentum = 0.99, epsilon = 1e-3;
  bool center = true;  // learn beta (else no shift)
  bool scale = true;   // learn gamma (else no scaling)
  Initializer beta_initializer = zeros_initializer(), gamma_initializer = ones_initializer();
  Initializer moving_mean_initializer = zeros_initializer(), moving_variance_initializer = ones_initializer();
};

class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(double momentum = 0.99, double epsilon = 1e-3, std::string name = "");
  explicit BatchNormalization(const BatchNormalizationOptions& options, std::string name = "");
  // Undefined when center / scale is off.
  Variable gamma() const { return gamma_; }
  Variable beta() const { return beta_; }
  Variable moving_mean() const { return moving_mean_; }
  Variable moving_variance() const { return moving_variance_; }
  std::optional<LayerConfig> get_config() const override;
  bool casts_integer_inputs() const override { return true; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  int axis_at(int rank) const;
  BatchNormalizationOptions o_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

// Normalizes each example over its last axis, then scales (gamma) and shifts (beta).
class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(double epsilon = 1e-3, std::string name = "");
  std::optional<LayerConfig> get_config() const override;
  bool supports_masking() const override { return true; }
  bool casts_integer_inputs() const override { return true; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  double epsilon_;
  Variable gamma_, beta_;
};

}  // namespace ef::nn
