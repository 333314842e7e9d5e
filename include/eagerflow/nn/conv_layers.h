#pragma once
// Convolution and pooling layers, NHWC as Keras: inputs [batch, height, width, channels].
#include <optional>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {

struct Conv2DOptions {
  Stride2 strides{1, 1};
  std::string padding = "valid";  // or "same"
  Stride2 dilation_rate{1, 1};
  ActivationFn activation;
  bool use_bias = true;
};

// Conv2D(filters, kernel_size): kernel [kh, kw, in_channels, filters] (glorot uniform), bias.
class Conv2D : public Layer {
 public:
  Conv2D(std::int64_t filters, Stride2 kernel_size, Conv2DOptions options = {}, std::string name = "");
  Variable kernel() const { return kernel_; }
  Variable bias() const { return bias_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  std::int64_t filters_;
  Stride2 kernel_size_;
  Conv2DOptions options_;
  Variable kernel_, bias_;
};

// MaxPool2D(pool_size, strides = pool_size, padding).
class MaxPool2D : public Layer {
 public:
  explicit MaxPool2D(Stride2 pool_size = {2, 2}, std::optional<Stride2> strides = std::nullopt,
                     std::string padding = "valid", std::string name = "");

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  Stride2 pool_;
  std::optional<Stride2> strides_;
  std::string padding_;
};

class AveragePooling2D : public Layer {
 public:
  explicit AveragePooling2D(Stride2 pool_size = {2, 2}, std::optional<Stride2> strides = std::nullopt,
                            std::string padding = "valid", std::string name = "");

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  Stride2 pool_;
  std::optional<Stride2> strides_;
  std::string padding_;
};

// The mean over height and width: [batch, h, w, c] -> [batch, c].
class GlobalAveragePooling2D : public Layer {
 public:
  explicit GlobalAveragePooling2D(std::string name = "") : Layer(std::move(name)) {}

 protected:
  Tensor call(const Tensor& inputs) override;
};

}  // namespace ef::nn
