#include "eagerflow/nn/normalization.h"

#include "eagerflow/ops/ops.h"

namespace ef::nn {
namespace {

std::int64_t features_of(const Layer& layer, const Shape& s) {
  if (s.rank() < 1 || s[s.rank() - 1] == kDynamic)
    fail(layer.name(), "needs inputs with a known last axis, got shape " + s.str());
  return s[s.rank() - 1];
}

void expect_features(const Layer& layer, const Tensor& x, std::int64_t features) {
  if (x.rank() < 1 || x.shape()[x.rank() - 1] != features)
    fail(layer.name(), "input " + x.spec().str() + " does not match the " + std::to_string(features) +
                           " features the layer was built for");
  if (!is_floating(x.dtype())) fail(kWrongType, layer.name(), "needs floating inputs, got " + x.spec().str());
}

}  // namespace

BatchNormalization::BatchNormalization(double momentum, double epsilon, std::string name)
    : Layer(std::move(name)), momentum_(momentum), epsilon_(epsilon) {
  if (!(momentum >= 0 && momentum <= 1)) fail("batch_normalization", "momentum must be in [0, 1]");
  if (!(epsilon > 0)) fail("batch_normalization", "epsilon must be positive");
}

void BatchNormalization::build(const Shape& s) {
  std::int64_t c = features_of(*this, s);
  gamma_ = add_weight("gamma", Shape{c}, ones_initializer());
  beta_ = add_weight("beta", Shape{c}, zeros_initializer());
  moving_mean_ = add_weight("moving_mean", Shape{c}, zeros_initializer(), /*trainable=*/false);
  moving_variance_ = add_weight("moving_variance", Shape{c}, ones_initializer(), /*trainable=*/false);
}

Tensor BatchNormalization::call(const Tensor& x, bool training) {
  expect_features(*this, x, gamma_.shape()[0]);
  Tensor mean_, var_;
  // A frozen layer normalizes with its moving statistics and leaves them alone, as Keras does:
  // fine-tuning a model with a frozen backbone must not drift its statistics.
  if (training && trainable_in_call()) {
    std::vector<int> axes;
    for (int a = 0; a + 1 < x.rank(); ++a) axes.push_back(a);
    mean_ = mean(x, axes);
    var_ = mean(square(x - mean_), axes);
    // The moving statistics follow the batch's (Keras: moving = moving * m + batch * (1 - m)).
    moving_mean_.assign(Tensor(moving_mean_) * momentum_ + stop_gradient(mean_) * (1.0 - momentum_));
    moving_variance_.assign(Tensor(moving_variance_) * momentum_ + stop_gradient(var_) * (1.0 - momentum_));
  } else {
    mean_ = Tensor(moving_mean_);
    var_ = Tensor(moving_variance_);
  }
  return (x - mean_) * rsqrt(var_ + epsilon_) * Tensor(gamma_) + Tensor(beta_);
}

LayerNormalization::LayerNormalization(double epsilon, std::string name) : Layer(std::move(name)), epsilon_(epsilon) {
  if (!(epsilon > 0)) fail("layer_normalization", "epsilon must be positive");
}

void LayerNormalization::build(const Shape& s) {
  std::int64_t c = features_of(*this, s);
  gamma_ = add_weight("gamma", Shape{c}, ones_initializer());
  beta_ = add_weight("beta", Shape{c}, zeros_initializer());
}

Tensor LayerNormalization::call(const Tensor& x) {
  expect_features(*this, x, gamma_.shape()[0]);
  // One fused op (forward and gradient one pass each) when x has the weights' dtype.
  if (x.dtype() == gamma_.dtype()) return layer_norm(x, Tensor(gamma_), Tensor(beta_), epsilon_);
  Tensor m = mean(x, {-1}, true);
  Tensor v = mean(square(x - m), {-1}, true);
  return (x - m) * rsqrt(v + epsilon_) * Tensor(gamma_) + Tensor(beta_);
}

}  // namespace ef::nn
