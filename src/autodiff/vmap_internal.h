#pragma once
// The machinery behind ef::vmap (include/eagerflow/autodiff/vmap.h).
//
// vmap is an interpreter stacked on dispatch, as JAX's BatchTrace: while the per-example
// function runs, a trace context of vmap's own is active, and its tensors are placeholders
// (symbolic, per-example shapes). Each op that reaches a placeholder is recorded here, and its
// batching rule runs the op on the real batched tensors (batch axis first) in the enclosing
// context: eagerly, into an enclosing ef::function trace or an enclosing vmap, and on the
// GradientTapes that were active when vmap was called.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/ops/op_rules.h"

namespace ef::detail {

// A real value behind a placeholder (eagerflow/ops/op_rules.h).
using Batched = ef::Batched;

// Applies op to batched inputs. `specs` are the per-example output specs. `batch` is the
// batch size (kDynamic when only known at run time). Returns one Batched per output.
std::vector<Batched> apply_batching_rule(const Primitive& op, std::span<const Batched> in,
                                         std::span<const TensorSpec> specs, std::int64_t batch);

// Names of the ops that ran through the per-example loop on this thread since the last
// call, the last 256 at most (tests and docs check which ops lack a batching rule). Clears it.
std::vector<std::string> take_vmap_fallback_log();

}  // namespace ef::detail
