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
    : BatchNormalization(BatchNormalizationOptions{-1, momentum, epsilon, true, true}, std::move(name)) {}

BatchNormalization::BatchNormalization(const BatchNormalizationOptions& o, std::string name) : Layer(std::move(name)), o_(o) {
  if (!(o.momentum >= 0 && o.momentum <= 1)) fail("batch_normalization", "momentum must be in [0, 1]");
  if (!(o.epsilon > 0)) fail("batch_normalization", "epsilon must be positive");
  if (o.axis < -64 || o.axis > 64) fail("batch_normalization", "axis " + std::to_string(o.axis) + " is out of range");
}

int BatchNormalization::axis_at(int rank) const {
  int a = o_.axis < 0 ? o_.axis + rank : o_.axis;
  if (a < 0 || a >= rank)
    fail(name(), "axis " + std::to_string(o_.axis) + " is out of range for inputs of rank " + std::to_string(rank));
  return a;
}

void BatchNormalization::build(const Shape& s) {
  if (s.rank() < 1) fail(name(), "needs inputs with a features axis, got shape " + s.str());
  int a = axis_at(s.rank());
  if (s[a] == kDynamic) fail(name(), "needs inputs with a known axis " + std::to_string(o_.axis) + ", got shape " + s.str());
  std::int64_t c = s[a];
  if (o_.scale) gamma_ = add_weight("gamma", Shape{c}, o_.gamma_initializer);
  if (o_.center) beta_ = add_weight("beta", Shape{c}, o_.beta_initializer);
  moving_mean_ = add_weight("moving_mean", Shape{c}, o_.moving_mean_initializer, /*trainable=*/false);
  moving_variance_ = add_weight("moving_variance", Shape{c}, o_.moving_variance_initializer, /*trainable=*/false);
}

Tensor BatchNormalization::call(const Tensor& x, bool training) {
  std::int64_t c = moving_mean_.shape()[0];
  if (!is_floating(x.dtype())) fail(kWrongType, name(), "needs floating inputs, got " + x.spec().str());
  int a = x.rank() >= 1 ? axis_at(x.rank()) : 0;
  if (x.rank() < 1 || x.shape()[a] != c)
    fail(name(), "input " + x.spec().str() + " does not match the " + std::to_string(c) + " features the layer was built for");
  // Statistics per feature, shaped to broadcast against x (trailing axes after the features).
  std::vector<std::int64_t> stat_dims(static_cast<std::size_t>(x.rank() - a), 1);
  stat_dims[0] = c;
  auto shaped = [&](const Tensor& t) { return a == x.rank() - 1 ? t : reshape(t, Shape(stat_dims)); };
  Tensor mean_, var_;
  // A frozen layer normalizes with its moving statistics and leaves them alone, as Keras does:
  // fine-tuning a model with a frozen backbone must not drift its statistics.
  if (training && trainable_in_call()) {
    std::vector<int> axes;
    for (int i = 0; i < x.rank(); ++i)
      if (i != a) axes.push_back(i);
    Tensor batch_mean = mean(x, axes);
    Tensor batch_var = mean(square(x - shaped(batch_mean)), axes);
    // The moving statistics follow the batch's (Keras: moving = moving * m + batch * (1 - m)).
    moving_mean_.assign(Tensor(moving_mean_) * o_.momentum + stop_gradient(batch_mean) * (1.0 - o_.momentum));
    moving_variance_.assign(Tensor(moving_variance_) * o_.momentum + stop_gradient(batch_var) * (1.0 - o_.momentum));
    mean_ = shaped(batch_mean);
    var_ = shaped(batch_var);
  } else {
    mean_ = shaped(Tensor(moving_mean_));
    var_ = shaped(Tensor(moving_variance_));
  }
  Tensor y = (x - mean_) * rsqrt(var_ + o_.epsilon);
  if (o_.scale) y = y * shaped(Tensor(gamma_));
  if (o_.center) y = y + shaped(Tensor(beta_));
  return y;
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
