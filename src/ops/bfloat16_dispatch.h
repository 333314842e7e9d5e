#pragma once
// bfloat16 at the dispatch point: an op that does not take bfloat16 as it is
// (Primitive::takes_bfloat16) computes in float32 for bfloat16 inputs, converted at the op's
// boundary and its float32 results rounded back. See src/ops/bfloat16_dispatch.cpp.
#include <span>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef::detail {

// For an op with a bfloat16 input that does not take bfloat16 (checked by the caller): its
// outputs, computed as cast(op(cast(inputs, float32)), bfloat16) through dispatch (so traces
// and tapes record the casts); an ef::Error when bfloat16 meets float32. The same for the
// storage integers (uint8 .. uint64) through int32 or int64.
std::vector<Tensor> dispatch_via_float32(const Primitive& op, std::span<const Tensor> inputs);
// An ef::Error for an op that would produce bfloat16 from no bfloat16 input without taking
// bfloat16 (one_hot asked for dtype bfloat16): its kernel cannot write it.
[[noreturn]] void bfloat16_output_unsupported(const Primitive& op, const TensorSpec& spec);

inline void check_bfloat16_outputs(const Primitive& op, std::span<const TensorSpec> specs) {
  for (const auto& s : specs)
    if (is_storage_dtype(s.dtype) && !op.takes_bfloat16()) bfloat16_output_unsupported(op, s);
}

}  // namespace ef::detail
