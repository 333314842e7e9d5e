#pragma once
// bfloat16 at the dispatch point: an op that does not take bfloat16 as it is
// (Primitive::takes_bfloat16) computes in float32 for bfloat16 inputs, converted at the op's
// boundary and its float32 results rounded back. See src/ops/bfloat16_dispatch.cpp.
#include <span>
#include <vector>

#include "eagerflow/ops/ops.h"
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

// Whether inputs with a storage dtype reach the op as they are: it takes every storage dtype
// (Primitive::takes_bfloat16), or computes bfloat16 itself and every input is bfloat16
// (Primitive::computes_bfloat16).
inline bool takes_storage_inputs(const Primitive& op, std::span<const Tensor> inputs) {
  if (op.takes_bfloat16()) return true;
  if (!op.computes_bfloat16()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.dtype() != DType::bfloat16) return false;
  return true;
}

inline void check_bfloat16_outputs(const Primitive& op, std::span<const TensorSpec> specs) {
  for (const auto& s : specs)
    if (is_storage_dtype(s.dtype) && !op.takes_bfloat16() && !(s.dtype == DType::bfloat16 && op.computes_bfloat16()))
      bfloat16_output_unsupported(op, s);
}

// The gradient formula of an op that computes bfloat16 itself, evaluated in float32: its
// inputs, outputs and cotangents widened, `rule` (the op's own vjp) run on them, and the
// gradients of bfloat16 inputs rounded back once, as when the op ran in float32 between casts.
template <class Rule>
std::vector<Tensor> vjp_in_float32(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                   Rule&& rule) {
  auto widen = [](std::span<const Tensor> ts) {
    std::vector<Tensor> w(ts.begin(), ts.end());
    for (Tensor& t : w)
      if (t.defined() && t.dtype() == DType::bfloat16) t = cast(t, DType::float32);
    return w;
  };
  std::vector<Tensor> wi = widen(in), wo = widen(out), wc = widen(cot);
  std::vector<Tensor> grads =
      rule(std::span<const Tensor>(wi), std::span<const Tensor>(wo), std::span<const Tensor>(wc));
  for (std::size_t i = 0; i < grads.size() && i < in.size(); ++i)
    if (grads[i].defined() && in[i].defined() && in[i].dtype() == DType::bfloat16 && grads[i].dtype() == DType::float32)
      grads[i] = cast(grads[i], DType::bfloat16);
  return grads;
}

}  // namespace ef::detail
