// bfloat16 is a storage dtype: kernels are not instantiated for it (that would double the
// float kernels' templates). Every op accepts it here, at the one dispatch point, by one rule
// defined with the op (Primitive::takes_bfloat16):
// - ops that only move or convert elements (reshape, transpose, slice, concat, gather, cast,
//   variable reads and writes, random draws) and ops that run a graph (call, cond, while,
//   scan) take bfloat16 as it is;
// - every other op computes in float32: each bfloat16 input is cast to float32 (a vectorized
//   cast), the float32 op runs (oneDNN GEMM and convolution, the vector kernels, reductions
//   that accumulate in float32) and its float32 outputs are rounded to bfloat16; integer and
//   bool outputs (argmax, comparisons) keep their dtype.
// The conversions are ordinary cast ops, so a trace records them (replay equals eager bit for
// bit), tapes differentiate through them (the gradient of a cast is the cast back) and every
// interpreter sees only float32 kernels.
#include "ops/bfloat16_dispatch.h"

#include <exception>
#include <string>

#include "eagerflow/ops/ops.h"

namespace ef::detail {

void bfloat16_output_unsupported(const Primitive& op, const TensorSpec& spec) {
  fail(kWrongType, op.name(),
       "does not support dtype " + std::string(name_of(spec.dtype)) + ": it would produce " + spec.str() +
           " (a storage dtype here; ask for float32 and ef::cast the result)");
}

std::vector<Tensor> dispatch_via_float32(const Primitive& op, std::span<const Tensor> inputs) {
  // As in TensorFlow, a 16-bit float does not mix silently with float32 or with the other 16-bit
  // float (a layer's dtype policy casts its inputs and variables; users cast explicitly). A
  // float64 input (attention's dropout seed) meets float32 inputs, which the op's own dtype rule
  // accepts or rejects.
  DType storage = DType::bfloat16;
  bool seen = false;
  for (const auto& t : inputs) {
    if (!t.defined() || !is_storage_float(t.dtype())) continue;
    if (seen && t.dtype() != storage)
      fail(kWrongType, op.name(), "dtypes differ: " + describe(inputs, " vs ") + " (bfloat16 and float16 do not mix; use ef::cast)");
    storage = t.dtype();
    seen = true;
  }
  for (const auto& t : inputs)
    if (t.defined() && t.dtype() == DType::float32)
      fail(kWrongType, op.name(),
           "dtypes differ: " + describe(inputs, " vs ") + " (" + std::string(name_of(storage)) +
               " and float32 do not mix; use ef::cast, or a mixed precision policy that casts a layer's inputs and variables)");
  std::vector<Tensor> wide(inputs.begin(), inputs.end());
  for (auto& t : wide)
    if (t.defined() && is_storage_float(t.dtype())) t = cast(t, DType::float32);
  std::vector<Tensor> outputs;
  try {
    outputs = dispatch(op, wide);
  } catch (const Error& e) {
    if (dynamic_cast<const std::nested_exception*>(&e)) throw;  // a kernel's own failure, already described
    // The op's own rule saw float32: say what it was given.
    throw Error(e.kind(), std::string(e.what()) + " (computed in float32 for the " + std::string(name_of(storage)) +
                              " inputs " + describe(inputs) + ")");
  }
  for (auto& t : outputs)
    if (t.defined() && t.dtype() == DType::float32) t = cast(t, storage);
  return outputs;
}

}  // namespace ef::detail
