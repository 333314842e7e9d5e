#pragma once
// bfloat16 at the dispatch point: ops that compute in float32 for bfloat16 inputs (converted
// at the op's boundary, results rounded back), ops that move bfloat16 elements as they are,
// and an ef::Error naming the op for the rest. See src/ops/bfloat16_dispatch.cpp.
#include <optional>
#include <span>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef::detail {

inline bool any_bfloat16(std::span<const Tensor> inputs) {
  for (const auto& t : inputs)
    if (t.defined() && t.dtype() == DType::bfloat16) return true;
  return false;
}
// For an op with a bfloat16 input: its outputs, computed as cast(op(cast(inputs, float32)),
// bfloat16) through dispatch (so traces and tapes record the casts); nullopt when the op takes
// bfloat16 as it is; an ef::Error when it does not support bfloat16.
std::optional<std::vector<Tensor>> dispatch_bfloat16(const Primitive& op, std::span<const Tensor> inputs);
// An ef::Error when an op that does not support bfloat16 would produce it (random draws or
// one_hot asked for dtype bfloat16).
inline void check_bfloat16_outputs(const Primitive& op, std::span<const TensorSpec> specs);
[[noreturn]] void bfloat16_output_unsupported(const Primitive& op, const TensorSpec& spec);
bool takes_bfloat16_as_is(const Primitive& op);

inline void check_bfloat16_outputs(const Primitive& op, std::span<const TensorSpec> specs) {
  for (const auto& s : specs)
    if (s.dtype == DType::bfloat16 && !takes_bfloat16_as_is(op)) bfloat16_output_unsupported(op, s);
}

}  // namespace ef::detail
