#pragma once
// Convolution and pooling layers, NHWC as Keras: inputs [batch, height, width, channels].
#include <optional>
#include <span>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/constraints.h"
#include "eagerflow/nn/initializers.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/nn/layer_args.h"
#include "eagerflow/nn/regularizers.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {

// Keras' Conv2D arguments; Conv2D::args() declares each one once.
struct Conv2DOptions : LayerOptions {
  std::int64_t filters = 0;  // required, positive
  Stride2 kernel_size{0, 0};  // required, positive; Python takes an int for both
  Stride2 strides{1, 1};
  std::string padding = "valid";  // or "same"
  std::string data_format = "channels_last";  // the only layout: NHWC
  Stride2 dilation_rate{1, 1};
  ActivationFn activation;
  bool use_bias = true;
  // Empty: Keras' defaults, glorot uniform over the receptive field and zeros.
  Initializer kernel_initializer = glorot_uniform_initializer(), bias_initializer = zeros_initializer();
  // Keras' regularizers (Layer::losses) and constraints (Layer::apply_constraints).
  Regularizer kernel_regularizer, bias_regularizer;
  Constraint kernel_constraint, bias_constraint;
};

// Conv2D(filters, kernel_size): kernel [kh, kw, in_channels, filters] (glorot uniform), bias.
class Conv2D : public Layer {
 public:
  explicit Conv2D(Conv2DOptions options);
  Conv2D(std::int64_t filters, Stride2 kernel_size, Conv2DOptions options = {}, std::string name = "");
  static std::span<const LayerArg<Conv2DOptions>> args();  // src/nn/conv_layers.cpp
  Variable kernel() const { return kernel_; }
  Variable bias() const { return bias_; }
  // The options; regularizers and constraints changed here take effect when the layer builds
  // (its first call), the activity regularizer through Layer::set_activity_regularizer.
  Conv2DOptions& options() { return options_; }
  std::optional<LayerConfig> get_config() const override;
  bool casts_integer_inputs() const override { return true; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  Conv2DOptions options_;
  Variable kernel_, bias_;
};

// What MaxPool2D and AveragePooling2D share: a window, strides (the window by default), padding.
class Pooling2D : public Layer {
 public:
  std::optional<LayerConfig> get_config() const override;

 protected:
  Pooling2D(bool max, Stride2 pool_size, std::optional<Stride2> strides, std::string padding, std::string name)
      : Layer(std::move(name)), max_(max), pool_(pool_size), strides_(strides), padding_(std::move(padding)) {}
  Tensor call(const Tensor& inputs) override;

 private:
  bool max_;
  Stride2 pool_;
  std::optional<Stride2> strides_;
  std::string padding_;
};

class MaxPool2D : public Pooling2D {
 public:
  explicit MaxPool2D(Stride2 pool_size = {2, 2}, std::optional<Stride2> strides = std::nullopt,
                     std::string padding = "valid", std::string name = "")
      : Pooling2D(true, pool_size, strides, std::move(padding), std::move(name)) {}
};

class AveragePooling2D : public Pooling2D {
 public:
  explicit AveragePooling2D(Stride2 pool_size = {2, 2}, std::optional<Stride2> strides = std::nullopt,
                            std::string padding = "valid", std::string name = "")
      : Pooling2D(false, pool_size, strides, std::move(padding), std::move(name)) {}
};

// The mean over height and width: [batch, h, w, c] -> [batch, c].
class GlobalAveragePooling2D : public Layer {
 public:
  explicit GlobalAveragePooling2D(std::string name = "") : Layer(std::move(name)) {}
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;
};

}  // namespace ef::nn
