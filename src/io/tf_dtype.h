#pragma once
// TensorFlow's DataType numbers (types.proto), shared by the formats that record them
// (TensorProto: src/io/tensor_proto.cpp; tensor bundles: src/io/tensor_bundle.cpp).
#include <cstdint>
#include <optional>

#include "eagerflow/core/dtype.h"

namespace ef::io {

// 0 for a dtype TF has no number for.
inline int tf_dtype_code(DType d) {
  switch (d) {
    case DType::float32: return 1;
    case DType::float64: return 2;
    case DType::int32: return 3;
    case DType::uint8: return 4;
    case DType::int16: return 5;
    case DType::int8: return 6;
    case DType::string: return 7;
    case DType::complex64: return 8;
    case DType::int64: return 9;
    case DType::bool_: return 10;
    case DType::bfloat16: return 14;
    case DType::uint16: return 17;
    case DType::complex128: return 18;
    case DType::float16: return 19;
    case DType::uint32: return 22;
    case DType::uint64: return 23;
  }
  return 0;
}

inline std::optional<DType> dtype_of_tf_code(std::uint64_t code) {
  for (DType d : all_dtypes)
    if (static_cast<std::uint64_t>(tf_dtype_code(d)) == code) return d;
  return std::nullopt;
}

}  // namespace ef::io
