#pragma once
// Conv2DTranspose, NHWC as Keras: the gradient of a convolution with respect to its input
// (the same op, conv2d_backprop_input, that differentiates Conv2D).
#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/constraints.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/nn/regularizers.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {

struct Conv2DTransposeOptions {
  Stride2 strides{1, 1};
  std::string padding = "valid";  // or "same"
  ActivationFn activation;
  bool use_bias = true;
  // Keras' fans of the [kh, kw, filters, in_channels] kernel: glorot uniform as Keras draws it.
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();
  Regularizer kernel_regularizer, bias_regularizer, activity_regularizer;
  Constraint kernel_constraint, bias_constraint;
};

// Conv2DTranspose(filters, kernel_size): kernel [kh, kw, filters, in_channels] (Keras' layout,
// glorot uniform), bias [filters]. Output [n, oh, ow, filters] with, per spatial axis, Keras'
// sizes: "valid": in * stride + max(kernel - stride, 0); "same": in * stride. Height and
// width of the input must be known.
class Conv2DTranspose : public Layer {
 public:
  Conv2DTranspose(std::int64_t filters, Stride2 kernel_size, Conv2DTransposeOptions options = {}, std::string name = "");
  Variable kernel() const { return kernel_; }
  Variable bias() const { return bias_; }
  // The output size of one spatial axis for an input of `in` (Keras' deconv_output_length).
  static std::int64_t output_length(std::int64_t in, std::int64_t kernel, std::int64_t stride, bool same);
  std::optional<LayerConfig> get_config() const override;
  bool casts_integer_inputs() const override { return true; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  std::int64_t filters_;
  Stride2 kernel_size_;
  Conv2DTransposeOptions options_;
  Variable kernel_, bias_;
};

}  // namespace ef::nn
