#include "eagerflow/nn/initializers.h"

#include <cmath>

#include "eagerflow/ops/random.h"

namespace ef::nn {

Initializer zeros_initializer() {
  return [](const Shape& s, DType t) { return zeros(s, t); };
}
Initializer ones_initializer() {
  return [](const Shape& s, DType t) { return ones(s, t); };
}
Initializer constant_initializer(double value) {
  return [value](const Shape& s, DType t) { return full(s, value, t); };
}
Initializer random_uniform_initializer(double minval, double maxval) {
  return [=](const Shape& s, DType t) { return random::uniform(s, minval, maxval, t); };
}
Initializer random_normal_initializer(double mean, double stddev) {
  return [=](const Shape& s, DType t) { return random::normal(s, mean, stddev, t); };
}
Initializer glorot_uniform_initializer() {
  return [](const Shape& s, DType t) {
    // Keras' fans: for rank >= 2, the receptive field times the last two dims.
    double fan_in = 1, fan_out = 1;
    if (s.rank() == 1) fan_in = fan_out = static_cast<double>(s[0]);
    else if (s.rank() >= 2) {
      double receptive = 1;
      for (int i = 0; i + 2 < s.rank(); ++i) receptive *= static_cast<double>(s[i]);
      fan_in = static_cast<double>(s[s.rank() - 2]) * receptive;
      fan_out = static_cast<double>(s[s.rank() - 1]) * receptive;
    }
    double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
    return random::uniform(s, -limit, limit, t);
  };
}

}  // namespace ef::nn
