#pragma once
// Weight initializers, as in Keras: a function from (shape, dtype) to an eager tensor.
#include <functional>

#include "eagerflow/core/tensor.h"

namespace ef::nn {

using Initializer = std::function<Tensor(const Shape&, DType)>;

Initializer zeros_initializer();
Initializer ones_initializer();
Initializer constant_initializer(double value);
Initializer random_uniform_initializer(double minval = -0.05, double maxval = 0.05);
Initializer random_normal_initializer(double mean = 0.0, double stddev = 0.05);
// Keras' default for Dense kernels: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
Initializer glorot_uniform_initializer();

}  // namespace ef::nn
