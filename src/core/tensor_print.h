#pragma once
// Tensor values as tf.print writes them (src/core/tensor_print.cpp): as format_values, except
// strings, which tf.print writes bare (a scalar) or "quoted" (in arrays), not as b'...'.
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::detail {
std::string format_for_print(const Tensor& t, int indent);
}
