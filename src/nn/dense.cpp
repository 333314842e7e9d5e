#include "eagerflow/nn/dense.h"

#include <map>

#include "eagerflow/ops/ops.h"
#include "nn/layer_args.h"
#include "ops/fused.h"

namespace ef::nn {

std::span<const LayerArg<DenseOptions>> Dense::args() {
  // Keras' signature order: the positional arguments of Dense(units, activation, use_bias, ...).
  static const std::vector<LayerArg<DenseOptions>> list = [] {
    using O = DenseOptions;
    std::vector<LayerArg<O>> a{
        {"units", &O::units, ArgUse::config, /*required=*/true, false, ArgCheck::positive},
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

Dense::Dense(DenseOptions options) : Layer(options.name), options_(std::move(options)) {
  check_options(options_, args(), "dense");
  apply_layer_options(*this, options_);
}

namespace {
DenseOptions positional(std::int64_t units, ActivationFn activation, bool use_bias, std::string name) {
  DenseOptions o;
  o.units = units;
  o.activation = std::move(activation);
  o.use_bias = use_bias;
  o.name = std::move(name);
  return o;
}
}  // namespace

Dense::Dense(std::int64_t units, ActivationFn activation, bool use_bias, std::string name)
    : Dense(positional(units, std::move(activation), use_bias, std::move(name))) {}

std::optional<LayerConfig> Dense::get_config() const {
  auto c = base_config(*this, "Dense");
  write_config(options_, args(), c.config, "layer '" + name() + "' (Dense)");
  return c;
}

void Dense::build(const Shape& input_shape) {
  if (input_shape.rank() < 2)
    fail(name(), "expects inputs of rank >= 2 (batch, ..., features), got shape " + input_shape.str());
  std::int64_t features = input_shape[input_shape.rank() - 1];
  if (features == kDynamic) fail(name(), "the last dim of the input must be known to build, got " + input_shape.str());
  kernel_ = add_weight("kernel", Shape{features, options_.units}, kernel_initializer);
  if (options_.use_bias) bias_ = add_weight("bias", Shape{options_.units}, bias_initializer);
  if (kernel_regularizer) set_weight_regularizer(kernel_, kernel_regularizer);
  if (kernel_constraint) set_weight_constraint(kernel_, kernel_constraint);
  if (options_.use_bias && bias_regularizer) set_weight_regularizer(bias_, bias_regularizer);
  if (options_.use_bias && bias_constraint) set_weight_constraint(bias_, bias_constraint);
}

Tensor Dense::call(const Tensor& inputs) {
  std::int64_t features = kernel_.shape()[0];
  if (inputs.rank() < 2 || inputs.shape()[inputs.rank() - 1] != features)
    fail(name(), "input " + inputs.spec().str() + " is incompatible: expected the last axis to be " +
                     std::to_string(features) + " (the layer was built for " + kernel_.shape().str() + " kernel)");
  const std::string& a = options_.activation.name();
  std::optional<UnaryKind> act = fusible_activation_named(a);
  if ((act || a == "linear") && eager_fusion_allowed()) {
    Tensor b = options_.use_bias ? Tensor(bias_) : Tensor();
    Tensor fused = eager_dense(inputs, kernel_, options_.use_bias ? &b : nullptr, act);
    if (fused.defined()) return fused;
  }
  Tensor y = matmul(inputs, kernel_);
  if (options_.use_bias) y = add(y, bias_);
  return options_.activation(y);
}

}  // namespace ef::nn

namespace ef::detail {
// The built-in factory list (src/nn/layer_config.cpp) takes Dense's from here.
void add_dense_layer_factories(std::map<std::string, nn::LayerFactory>& factories) {
  factories["Dense"] = nn::factory_from_args<nn::Dense, nn::DenseOptions>();
}
}  // namespace ef::detail
