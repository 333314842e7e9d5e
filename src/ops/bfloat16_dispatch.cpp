// bfloat16 is a storage dtype: kernels are not instantiated for it (that would double the
// float kernels' templates). Every op accepts it here, at the one dispatch point, by one rule
// defined with the op (Primitive::takes_bfloat16):
// - ops that only move or convert elements (reshape, transpose, slice, concat, gather, cast,
//   variable reads and writes, random draws) and ops that run a graph (call, cond, while,
//   scan) take bfloat16 as it is;
// - ops that compute bfloat16 themselves (Primitive::computes_bfloat16: elementwise math,
//   activation gradients, sum_to, pooling where the CPU has native bfloat16) take inputs that are
//   all bfloat16 as they are, and run their float32 kernels a block at a time (the same bits);
// - every other op computes in float32: each bfloat16 input is cast to float32 (a vectorized
//   cast), the float32 op runs (oneDNN GEMM and convolution, the vector kernels, reductions
//   that accumulate in float32) and its float32 outputs are rounded to bfloat16; integer and
//   bool outputs (argmax, comparisons) keep their dtype.
// TF's narrow and unsigned integers (uint8, int8, int16, uint16, uint32, uint64) follow the same
// rule with int32 or int64 for float32 (compute_dtype_of): the results that are the op's data
// (Primitive::output_follows_inputs) are cast back, which wraps as TF's own integer kernels do
// (uint8 200 + 100 is 44 in both, and a uint8 sum wraps the same way once cast back), while
// indices, counts and shapes keep their dtype.
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
  // As in TensorFlow, a storage dtype does not mix silently with another dtype: a 16-bit float
  // neither with float32 nor with the other 16-bit float (a layer's dtype policy casts its
  // inputs and variables; users cast explicitly), an integer neither with another integer nor
  // with the one it computes in (uint8 + int32 is an error in TF), except in an input the op
  // declares an index (Primitive::is_index_input). A float64 input (attention's dropout seed)
  // meets float32 inputs, which the op's own dtype rule accepts or rejects.
  DType storage_float = DType::bfloat16, storage_int = DType::uint8;
  bool has_float = false, has_int = false;
  auto mixed = [&](const std::string& why) {
    fail(kWrongType, op.name(), "dtypes differ: " + describe(inputs, " vs ") + " (" + why + "; use ef::cast)");
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) continue;
    if (is_storage_float(t.dtype())) {
      if (has_float && t.dtype() != storage_float) mixed("bfloat16 and float16 do not mix");
      storage_float = t.dtype();
      has_float = true;
    } else if (is_storage_int(t.dtype()) && !op.is_index_input(i)) {
      if (has_int && t.dtype() != storage_int)
        mixed(std::string(name_of(storage_int)) + " and " + std::string(name_of(t.dtype())) + " do not mix");
      storage_int = t.dtype();
      has_int = true;
    }
  }
  const DType computed_int = compute_dtype_of(storage_int);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) continue;
    if (has_float && t.dtype() == DType::float32)
      fail(kWrongType, op.name(),
           "dtypes differ: " + describe(inputs, " vs ") + " (" + std::string(name_of(storage_float)) +
               " and float32 do not mix; use ef::cast, or a mixed precision policy that casts a layer's inputs and variables)");
    if (has_int && !op.is_index_input(i) && (t.dtype() == DType::int32 || t.dtype() == DType::int64))
      mixed(std::string(name_of(storage_int)) + " and " + std::string(name_of(t.dtype())) + " do not mix");
  }
  std::vector<Tensor> wide(inputs.begin(), inputs.end());
  for (auto& t : wide)
    if (t.defined() && is_storage_dtype(t.dtype())) t = cast(t, compute_dtype_of(t.dtype()));
  std::vector<Tensor> outputs;
  try {
    outputs = dispatch(op, wide);
  } catch (const Error& e) {
    if (dynamic_cast<const std::nested_exception*>(&e)) throw;  // a kernel's own failure, already described
    // The op's own rule saw the wider dtype: say what it was given.
    std::string storage = has_float ? std::string(name_of(storage_float)) : std::string(name_of(storage_int));
    std::string computed = has_float ? "float32" : std::string(name_of(computed_int));
    throw Error(e.kind(), std::string(e.what()) + " (computed in " + computed + " for the " + storage + " inputs " +
                              describe(inputs) + ")");
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    Tensor& t = outputs[i];
    if (!t.defined()) continue;
    if (has_float && op.output_follows_inputs(i, t.dtype(), DType::float32)) t = cast(t, storage_float);
    else if (has_int && op.output_follows_inputs(i, t.dtype(), computed_int)) t = cast(t, storage_int);
  }
  return outputs;
}

}  // namespace ef::detail
