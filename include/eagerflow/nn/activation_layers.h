#pragma once
// Keras' activation layers with a parameter: LeakyReLU and ELU (the activations by name are in
// eagerflow/nn/activation_fn.h).
#include "eagerflow/nn/layer.h"

namespace ef::nn {

// x >= 0 ? x : negative_slope * x. Keras' layer default is 0.3 (its function's, 0.2).
class LeakyReLU : public Layer {
 public:
  explicit LeakyReLU(double negative_slope = 0.3, std::string name = "");
  double negative_slope() const { return slope_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  double slope_;
};

// x > 0 ? x : alpha * (exp(x) - 1)
class ELU : public Layer {
 public:
  explicit ELU(double alpha = 1.0, std::string name = "");
  double alpha() const { return alpha_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  double alpha_;
};

}  // namespace ef::nn
