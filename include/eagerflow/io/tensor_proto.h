#pragma once
// TF's TensorProto bytes (tf.io.serialize_tensor / parse_tensor): numbers in tensor_content,
// strings in string_val, as TF writes them; parse also reads the typed *_val fields.
#include <string>
#include <string_view>

#include "eagerflow/core/tensor.h"

namespace ef::io {

std::string serialize_tensor(const Tensor& t);
// An INVALID_ARGUMENT ef::Error for bytes that are not a TensorProto or hold another dtype than `dtype`.
Tensor parse_tensor(std::string_view serialized, DType dtype);

}  // namespace ef::io
