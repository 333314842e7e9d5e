#include "eagerflow/nn/conv_layers.h"

#include <cmath>

#include "eagerflow/ops/random.h"

namespace ef::nn {
namespace {

void expect_images(const Layer& layer, const Shape& s) {
  if (s.rank() != 4)
    fail(layer.name(), "expects inputs of rank 4 [batch, height, width, channels], got shape " + s.str());
}

}  // namespace

Conv2D::Conv2D(std::int64_t filters, Stride2 kernel_size, Conv2DOptions options, std::string name)
    : Layer(std::move(name)), filters_(filters), kernel_size_(kernel_size), options_(std::move(options)) {
  if (filters <= 0) fail("conv2d", "filters must be positive, got " + std::to_string(filters));
  if (kernel_size.h <= 0 || kernel_size.w <= 0) fail("conv2d", "kernel_size must be positive");
  if (options_.padding != "valid" && options_.padding != "same")
    fail("conv2d", "padding must be \"valid\" or \"same\", got \"" + options_.padding + "\"");
  if (options_.activity_regularizer) set_activity_regularizer(options_.activity_regularizer);
}

void Conv2D::build(const Shape& s) {
  expect_images(*this, s);
  std::int64_t channels = s[3];
  if (channels == kDynamic) fail(name(), "the channel dim of the input must be known to build, got " + s.str());
  // Glorot uniform over the receptive field by default, as Keras.
  kernel_ = add_weight("kernel", Shape{kernel_size_.h, kernel_size_.w, channels, filters_},
                       options_.kernel_initializer ? options_.kernel_initializer : glorot_uniform_initializer());
  if (options_.use_bias)
    bias_ = add_weight("bias", Shape{filters_}, options_.bias_initializer ? options_.bias_initializer : zeros_initializer());
  if (options_.kernel_regularizer) set_weight_regularizer(kernel_, options_.kernel_regularizer);
  if (options_.kernel_constraint) set_weight_constraint(kernel_, options_.kernel_constraint);
  if (options_.use_bias && options_.bias_regularizer) set_weight_regularizer(bias_, options_.bias_regularizer);
  if (options_.use_bias && options_.bias_constraint) set_weight_constraint(bias_, options_.bias_constraint);
}

Tensor Conv2D::call(const Tensor& inputs) {
  expect_images(*this, inputs.shape());
  std::int64_t channels = kernel_.shape()[2];
  if (inputs.shape()[3] != channels)
    fail(name(), "input " + inputs.spec().str() + " has " + std::to_string(inputs.shape()[3]) +
                     " channels; the layer was built for " + std::to_string(channels) + " (kernel " + kernel_.shape().str() + ")");
  Tensor y = conv2d(inputs, kernel_, options_.strides, options_.padding, options_.dilation_rate);
  if (options_.use_bias) y = y + Tensor(bias_);
  return options_.activation(y);
}

Tensor Pooling2D::call(const Tensor& inputs) {
  expect_images(*this, inputs.shape());
  return max_ ? max_pool2d(inputs, pool_, strides_, padding_) : avg_pool2d(inputs, pool_, strides_, padding_);
}

Tensor GlobalAveragePooling2D::call(const Tensor& inputs) {
  expect_images(*this, inputs.shape());
  return mean(inputs, {1, 2});
}

}  // namespace ef::nn
