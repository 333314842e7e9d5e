#include "eagerflow/nn/conv_layers.h"

#include <cmath>
#include <map>

#include "eagerflow/ops/random.h"
#include "nn/layer_args.h"

namespace ef::nn {
namespace {

void expect_images(const Layer& layer, const Shape& s) {
  if (s.rank() != 4)
    fail(layer.name(), "expects inputs of rank 4 [batch, height, width, channels], got shape " + s.str());
}

}  // namespace

std::span<const LayerArg<Conv2DOptions>> Conv2D::args() {
  // Keras' signature order: Conv2D(filters, kernel_size, strides, padding, data_format,
  // dilation_rate, ...) (Keras 3's groups=, which eagerflow does not have, is not taken).
  static const std::vector<LayerArg<Conv2DOptions>> list = [] {
    using O = Conv2DOptions;
    std::vector<LayerArg<O>> a{
        {"filters", &O::filters, ArgUse::config, /*required=*/true, false, ArgCheck::positive},
        {"kernel_size", &O::kernel_size, ArgUse::config, /*required=*/true, false, ArgCheck::positive},
        {"strides", &O::strides},
        {"padding", &O::padding, ArgUse::config, false, false, ArgCheck::padding},
        {"data_format", &O::data_format, ArgUse::construct_only, false, false, ArgCheck::channels_last},
        {"dilation_rate", &O::dilation_rate},
        {"activation", &O::activation},
        {"use_bias", &O::use_bias},
        {"kernel_initializer", &O::kernel_initializer},
        {"bias_initializer", &O::bias_initializer},
        {"kernel_regularizer", &O::kernel_regularizer},
        {"bias_regularizer", &O::bias_regularizer},
        {"activity_regularizer", &O::activity_regularizer, ArgUse::base_config},
        {"kernel_constraint", &O::kernel_constraint},
        {"bias_constraint", &O::bias_constraint},
    };
    append_base_args(a);
    return a;
  }();
  return list;
}

Conv2D::Conv2D(Conv2DOptions options) : Layer(options.name), options_(std::move(options)) {
  check_options(options_, args(), "conv2d");
  apply_layer_options(*this, options_);
}

namespace {
Conv2DOptions positional(std::int64_t filters, Stride2 kernel_size, Conv2DOptions o, std::string name) {
  o.filters = filters;
  o.kernel_size = kernel_size;
  o.name = std::move(name);
  return o;
}
}  // namespace

Conv2D::Conv2D(std::int64_t filters, Stride2 kernel_size, Conv2DOptions options, std::string name)
    : Conv2D(positional(filters, kernel_size, std::move(options), std::move(name))) {}

std::optional<LayerConfig> Conv2D::get_config() const {
  auto c = base_config(*this, "Conv2D");
  write_config(options_, args(), c.config, "layer '" + name() + "' (Conv2D)");
  return c;
}

void Conv2D::build(const Shape& s) {
  expect_images(*this, s);
  std::int64_t channels = s[3];
  if (channels == kDynamic) fail(name(), "the channel dim of the input must be known to build, got " + s.str());
  // Glorot uniform over the receptive field by default, as Keras.
  kernel_ = add_weight("kernel", Shape{options_.kernel_size.h, options_.kernel_size.w, channels, options_.filters},
                       options_.kernel_initializer ? options_.kernel_initializer : glorot_uniform_initializer());
  if (options_.use_bias)
    bias_ = add_weight("bias", Shape{options_.filters}, options_.bias_initializer ? options_.bias_initializer : zeros_initializer());
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

namespace ef::detail {
// The built-in factory list (src/nn/layer_config.cpp) takes Conv2D's from here.
void add_conv2d_layer_factories(std::map<std::string, nn::LayerFactory>& factories) {
  factories["Conv2D"] = nn::factory_from_args<nn::Conv2D, nn::Conv2DOptions>();
}
}  // namespace ef::detail
