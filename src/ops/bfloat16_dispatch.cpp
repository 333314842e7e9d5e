// bfloat16 is a storage dtype: kernels are not instantiated for it (that would double the
// float kernels' templates). The ops mixed precision needs accept it here, at the one dispatch
// point, by converting bfloat16 inputs to float32 (a vectorized cast), running the float32
// op (oneDNN GEMM and convolution, the vector kernels, reductions that accumulate in float32)
// and rounding its float32 outputs to bfloat16. The conversions are ordinary cast ops, so a
// trace records them (replay equals eager bit for bit), tapes differentiate through them (the
// gradient of a cast is the cast back) and every interpreter sees only float32 kernels.
// Ops that only move elements (reshape, transpose, slice, concat, gather...) take bfloat16 as
// it is. Every other op rejects bfloat16 with an ef::Error naming the op.
#include "ops/bfloat16_dispatch.h"

#include <string>
#include <string_view>
#include <unordered_set>

#include "eagerflow/ops/ops.h"
#include "ops/elementwise_math.h"

namespace ef::detail {
namespace {

using NameSet = std::unordered_set<std::string_view>;

// Ops whose kernels move or reinterpret elements without arithmetic: bfloat16 passes as is.
const NameSet& as_is() {
  static const NameSet s{"cast",    "identity",  "stop_gradient", "reshape",       "reshape_like", "expand_dims",
                         "squeeze", "transpose", "slice",         "concat",        "gather",       "shape",
                         "size",    "print",     "read_variable", "assign",        "assign_add",   "assign_sub",
                         "zeros_like", "ones_like", "full_like", "broadcast_to", "broadcast_like",
                         "random_uniform", "random_normal"};
  return s;
}

// Ops computed in float32 for bfloat16 inputs, their float32 outputs rounded to bfloat16.
const NameSet& via_float32() {
  static const NameSet s = [] {
    NameSet n{"where", "sum", "mean", "max", "min", "argmax", "softmax", "log_softmax", "matmul", "fused_dense",
              "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter", "max_pool2d", "avg_pool2d",
              "max_pool2d_grad", "avg_pool2d_grad", "layer_norm", "layer_norm_grad", "clip", "floor", "ceil",
              "round", "sum_to", "slice_grad", "gather_grad", "pad", "tile",
              "repeat", "cumsum", "take_along_axis", "sparse_softmax_cross_entropy",
              "sparse_softmax_cross_entropy_grad", "scaled_dot_product_attention",
              "scaled_dot_product_attention_grad", "tril", "triu", "check_numerics"};
    for (int k = 0; k <= static_cast<int>(UnaryKind::logical_not); ++k) n.insert(unary_name(static_cast<UnaryKind>(k)));
    for (int k = 0; k <= static_cast<int>(BinaryKind::logical_or); ++k) n.insert(binary_name(static_cast<BinaryKind>(k)));
    return n;
  }();
  return s;
}

[[noreturn]] void unsupported(const Primitive& op, const std::string& what) {
  fail(op.name(), "does not support dtype bfloat16: " + what +
                      ". bfloat16 is a storage dtype here: the ops that compute in it convert to float32 "
                      "(docs/mixed_precision.md lists them); cast to float32 with ef::cast first");
}

}  // namespace

bool takes_bfloat16_as_is(const Primitive& op) { return as_is().count(op.name()) > 0; }

void bfloat16_output_unsupported(const Primitive& op, const TensorSpec& spec) {
  unsupported(op, "it would produce " + spec.str());
}

std::optional<std::vector<Tensor>> dispatch_bfloat16(const Primitive& op, std::span<const Tensor> inputs) {
  std::string_view name = op.name();
  if (as_is().count(name)) return std::nullopt;
  if (!via_float32().count(name)) unsupported(op, "inputs " + describe(inputs));
  bool other_float = false;
  for (const auto& t : inputs) other_float |= t.defined() && t.dtype() == DType::float32;
  if (other_float)
    fail(op.name(), "dtypes differ: " + describe(inputs, " vs ") +
                        " (bfloat16 and float32 do not mix; use ef::cast, or a mixed precision policy that casts "
                        "a layer's inputs and variables)");
  std::vector<Tensor> wide(inputs.begin(), inputs.end());
  for (auto& t : wide)
    if (t.defined() && t.dtype() == DType::bfloat16) t = cast(t, DType::float32);
  std::vector<Tensor> outputs = dispatch(op, wide);
  for (auto& t : outputs)
    if (t.defined() && t.dtype() == DType::float32) t = cast(t, DType::bfloat16);
  return outputs;
}

}  // namespace ef::detail
