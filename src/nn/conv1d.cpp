// Conv1D and the 1-D / global pooling layers (include/eagerflow/nn/conv1d.h), on the 2-D ops.
#include "eagerflow/nn/conv1d.h"

#include <limits>
#include <map>

#include "eagerflow/core/error.h"
#include "eagerflow/nn/recurrent.h"  // mask_of
#include "eagerflow/ops/ops.h"
#include "nn/layer_args.h"  // set_initializer, read_initializer

namespace ef::nn {
namespace {

constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();

void expect_sequence(const Layer& layer, const Tensor& x) {
  if (x.rank() != 3) fail(layer.name(), "expects inputs [batch, steps, channels], got " + x.spec().str());
}

void check_padding(const char* who, const std::string& p, bool causal_ok) {
  if (p != "valid" && p != "same" && !(causal_ok && p == "causal"))
    fail(who, std::string("padding must be \"valid\", \"same\"") + (causal_ok ? " or \"causal\"" : "") + ", got \"" + p + "\"");
}

}  // namespace

Conv1D::Conv1D(std::int64_t filters, std::int64_t kernel_size, Conv1DOptions options, std::string name)
    : Layer(std::move(name)), filters_(filters), kernel_size_(kernel_size), options_(std::move(options)) {
  if (filters <= 0) fail("conv1d", "filters must be positive, got " + std::to_string(filters));
  if (kernel_size <= 0) fail("conv1d", "kernel_size must be positive, got " + std::to_string(kernel_size));
  if (options_.strides <= 0 || options_.dilation_rate <= 0) fail("conv1d", "strides and dilation_rate must be positive");
  if (options_.strides != 1 && options_.dilation_rate != 1)
    fail("conv1d", "strides > 1 and dilation_rate > 1 cannot be combined (as Keras)");
  check_padding("conv1d", options_.padding, true);
}

void Conv1D::build(const Shape& s) {
  if (s.rank() != 3) fail(name(), "expects inputs [batch, steps, channels], got shape " + s.str());
  if (s[2] == kDynamic) fail(name(), "the channel dim of the input must be known to build, got " + s.str());
  kernel_ = add_weight("kernel", Shape{kernel_size_, s[2], filters_}, options_.kernel_initializer);
  if (options_.use_bias) bias_ = add_weight("bias", Shape{filters_}, options_.bias_initializer);
}

Tensor Conv1D::call(const Tensor& inputs) {
  expect_sequence(*this, inputs);
  std::int64_t channels = kernel_.shape()[1];
  if (inputs.shape()[2] != channels)
    fail(name(), "input " + inputs.spec().str() + " has " + std::to_string(inputs.shape()[2]) +
                     " channels; the layer was built for " + std::to_string(channels) + " (kernel " + kernel_.shape().str() + ")");
  Tensor x = inputs;
  std::string padding = options_.padding;
  if (padding == "causal") {
    std::int64_t left = options_.dilation_rate * (kernel_size_ - 1);
    if (left > 0) {
      // zeros [batch, left, channels], also for a dynamic batch
      Tensor z = zeros_like(slice(x, {0, 0, 0}, {kEnd, 1, kEnd}));
      x = concat({broadcast_to(z, Shape{kDynamic, left, kDynamic}), x}, 1);
    }
    padding = "valid";
  }
  Tensor y = conv2d(expand_dims(x, 1), expand_dims(kernel_, 0), Stride2{1, options_.strides}, padding,
                    Stride2{1, options_.dilation_rate});
  y = squeeze(y, {1});
  if (options_.use_bias) y = y + Tensor(bias_);
  return options_.activation(y);
}

Pooling1D::Pooling1D(bool max, std::int64_t pool_size, std::optional<std::int64_t> strides, std::string padding, std::string name)
    : Layer(std::move(name)), max_(max), pool_(pool_size), strides_(strides), padding_(std::move(padding)) {
  const char* who = max ? "max_pooling1d" : "average_pooling1d";
  if (pool_size <= 0 || (strides && *strides <= 0)) fail(who, "pool_size and strides must be positive");
  check_padding(who, padding_, false);
}

Tensor Pooling1D::call(const Tensor& inputs) {
  expect_sequence(*this, inputs);
  Stride2 pool{1, pool_}, strides{1, strides_.value_or(pool_)};
  Tensor x = expand_dims(inputs, 1);
  Tensor y = max_ ? max_pool2d(x, pool, strides, padding_) : avg_pool2d(x, pool, strides, padding_);
  return squeeze(y, {1});
}

Tensor GlobalPooling1D::call(const Tensor& inputs) {
  expect_sequence(*this, inputs);
  if (max_) return max(inputs, {1}, keepdims_);
  Tensor mask = mask_of(inputs);
  if (!mask.defined()) return mean(inputs, {1}, keepdims_);
  // Keras: the mean over the steps the mask keeps.
  Tensor m = expand_dims(cast(mask, inputs.dtype()), -1);
  return sum(inputs * m, {1}, keepdims_) / sum(m, {1}, keepdims_);
}

Tensor GlobalMaxPooling2D::call(const Tensor& inputs) {
  if (inputs.rank() != 4) fail(name(), "expects inputs [batch, height, width, channels], got " + inputs.spec().str());
  return max(inputs, {1, 2}, keepdims_);
}

std::optional<LayerConfig> Conv1D::get_config() const {
  auto c = base_config(*this, "Conv1D");
  c.config.set("filters", filters_);
  c.config.set("kernel_size", kernel_size_);
  c.config.set("strides", options_.strides);
  c.config.set("padding", options_.padding);
  c.config.set("dilation_rate", options_.dilation_rate);
  c.config.set("activation", activation_config(options_.activation, "layer '" + name() + "' (Conv1D)"));
  c.config.set("use_bias", options_.use_bias);
  set_initializer(c.config, "kernel_initializer", options_.kernel_initializer);
  set_initializer(c.config, "bias_initializer", options_.bias_initializer);
  return c;
}

std::optional<LayerConfig> Pooling1D::get_config() const {
  auto c = base_config(*this, max_ ? "MaxPooling1D" : "AveragePooling1D");
  c.config.set("pool_size", pool_);
  c.config.set("strides", strides_ ? ConfigValue(*strides_) : ConfigValue());
  c.config.set("padding", padding_);
  return c;
}

std::optional<LayerConfig> GlobalPooling1D::get_config() const {
  auto c = base_config(*this, max_ ? "GlobalMaxPooling1D" : "GlobalAveragePooling1D");
  c.config.set("keepdims", keepdims_);
  return c;
}

std::optional<LayerConfig> GlobalMaxPooling2D::get_config() const {
  auto c = base_config(*this, "GlobalMaxPooling2D");
  c.config.set("keepdims", keepdims_);
  return c;
}

}  // namespace ef::nn

namespace ef::detail {
using namespace ef::nn;

void add_conv1d_layer_factories(std::map<std::string, LayerFactory>& f) {
  auto positive = [](const ConfigMap& c, const char* key) {
    std::int64_t v = c.integer(key);
    if (v <= 0 || v > (std::int64_t{1} << 30)) throw Error(c.where + ": " + key + " must be in [1, 2^30]");
    return v;
  };
  f["Conv1D"] = [=](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    const ConfigMap& c = lc.config;
    Conv1DOptions o;
    o.strides = positive(c, "strides");
    o.padding = c.text("padding");
    o.dilation_rate = positive(c, "dilation_rate");
    o.activation = activation_from_config(c.at("activation"), c.where);
    o.use_bias = c.flag("use_bias");
    read_initializer(c, "kernel_initializer", o.kernel_initializer);
    read_initializer(c, "bias_initializer", o.bias_initializer);
    return std::make_shared<Conv1D>(positive(c, "filters"), positive(c, "kernel_size"), o, c.text("name"));
  };
  auto pooling = [=](bool max) {
    return [=](const LayerConfig& lc) -> std::shared_ptr<Layer> {
      const ConfigMap& c = lc.config;
      std::optional<std::int64_t> strides;
      if (c.has_value("strides")) strides = positive(c, "strides");
      if (max) return std::make_shared<MaxPooling1D>(positive(c, "pool_size"), strides, c.text("padding"), c.text("name"));
      return std::make_shared<AveragePooling1D>(positive(c, "pool_size"), strides, c.text("padding"), c.text("name"));
    };
  };
  f["MaxPooling1D"] = pooling(true);
  f["AveragePooling1D"] = pooling(false);
  f["GlobalAveragePooling1D"] = [](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    return std::make_shared<GlobalAveragePooling1D>(lc.config.has("keepdims") && lc.config.flag("keepdims"), lc.config.text("name"));
  };
  f["GlobalMaxPooling1D"] = [](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    return std::make_shared<GlobalMaxPooling1D>(lc.config.has("keepdims") && lc.config.flag("keepdims"), lc.config.text("name"));
  };
  f["GlobalMaxPooling2D"] = [](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    return std::make_shared<GlobalMaxPooling2D>(lc.config.has("keepdims") && lc.config.flag("keepdims"), lc.config.text("name"));
  };
}

}  // namespace ef::detail
