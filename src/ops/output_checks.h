#pragma once
// What an op's kernel and gradient rule return, checked against what the op declared: a
// user-defined op whose eval makes a [1] where infer declared [64], or whose vjp returns too
// few gradients or one of another shape or dtype than its input, is an ef::Error naming the
// op, never a wrong tensor that flows on.
#include <span>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {
class Primitive;
namespace detail {

// After eval: one defined output per spec, of its dtype and rank, with its dims where known.
void check_kernel_outputs(const Primitive& op, std::span<const TensorSpec> specs, std::span<const Tensor> outputs);

// After vjp: one entry per input (undefined allowed); every gradient asked for (`needed`) and
// given has its input's dtype, rank and (known) dims.
void check_vjp_outputs(const Primitive& op, std::span<const Tensor> inputs, const std::vector<bool>& needed,
                       std::span<const Tensor> gradients);

}  // namespace detail
}  // namespace ef
