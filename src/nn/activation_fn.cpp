#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/ops/math.h"

#include "eagerflow/ops/ops.h"

namespace ef::nn {
namespace {

std::function<Tensor(const Tensor&)> activation_by_name(const std::string& name) {
  if (name == "linear" || name.empty()) return nullptr;
  if (name == "relu") return [](const Tensor& x) { return relu(x); };
  if (name == "sigmoid") return [](const Tensor& x) { return sigmoid(x); };
  if (name == "tanh") return [](const Tensor& x) { return ef::tanh(x); };
  if (name == "gelu") return [](const Tensor& x) { return gelu(x); };
  if (name == "softmax") return [](const Tensor& x) { return softmax(x, -1); };
  if (name == "leaky_relu") return [](const Tensor& x) { return leaky_relu(x); };
  if (name == "elu") return [](const Tensor& x) { return elu(x); };
  if (name == "selu") return [](const Tensor& x) { return selu(x); };
  if (name == "softplus") return [](const Tensor& x) { return softplus(x); };
  if (name == "softsign") return [](const Tensor& x) { return softsign(x); };
  if (name == "swish" || name == "silu") return [](const Tensor& x) { return swish(x); };
  if (name == "mish") return [](const Tensor& x) { return mish(x); };
  if (name == "relu6") return [](const Tensor& x) { return relu6(x); };
  if (name == "hard_sigmoid") return [](const Tensor& x) { return hard_sigmoid(x); };
  if (name == "exponential") return [](const Tensor& x) { return ef::exp(x); };
  fail("activation", "unknown activation '" + name +
                         "' (known: linear, relu, sigmoid, tanh, gelu, softmax, leaky_relu, elu, selu, softplus, "
                         "softsign, swish, silu, mish, relu6, hard_sigmoid, exponential)");
}

}  // namespace

ActivationFn::ActivationFn(const char* name) : ActivationFn(std::string(name)) {}
ActivationFn::ActivationFn(std::string name) : fn_(activation_by_name(name)), name_(std::move(name)) {}

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return where(greater_equal(x, scalar_like(x, 0.0)), x, x * negative_slope);
}

Tensor elu(const Tensor& x, double alpha) {
  // exp of min(x, 0): the branch not taken must stay finite, or its zero gradient becomes NaN.
  Tensor negative = alpha * (ef::exp(minimum(x, scalar_like(x, 0.0))) - 1.0);
  return where(greater(x, scalar_like(x, 0.0)), x, negative);
}

Tensor selu(const Tensor& x) {
  constexpr double alpha = 1.6732632423543772848170429916717;
  constexpr double scale = 1.0507009873554804934193349852946;
  return scale * elu(x, alpha);
}

Tensor softplus(const Tensor& x) { return math::softplus(x); }  // tf.nn.softplus is tf.math.softplus

Tensor softsign(const Tensor& x) { return x / (1.0 + abs(x)); }
Tensor swish(const Tensor& x) { return x * sigmoid(x); }
Tensor mish(const Tensor& x) { return x * ef::tanh(softplus(x)); }
Tensor relu6(const Tensor& x) { return minimum(relu(x), scalar_like(x, 6.0)); }
Tensor hard_sigmoid(const Tensor& x) { return relu6(x + 3.0) / 6.0; }

}  // namespace ef::nn
