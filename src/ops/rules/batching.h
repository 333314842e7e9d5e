#pragma once
// Helpers of the ops' batching rules (eagerflow/ops/op_rules.h). Every rule calls public ops (or
// the op itself on wider tensors), so the batched program runs eagerly, records into an
// enclosing trace and is seen by tapes like any other code.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"

namespace ef::batching {

constexpr std::int64_t kToEnd = std::numeric_limits<std::int64_t>::max();  // a slice bound: "to the end"

inline BatchingResult one(Tensor t, bool batched = true) { return std::vector<Batched>{{std::move(t), batched}}; }

// Inserts size-1 axes after the batch axis until one example has rank `target`, so that
// NumPy broadcasting lines up per-example axes and never an example axis with the batch axis.
inline Tensor align(const Batched& b, int target) {
  Tensor t = b.t;
  for (int r = b.rank(); r < target; ++r) t = expand_dims(t, 1);
  return t;
}

inline int max_rank(std::span<const Batched> in) {
  int r = 0;
  for (const auto& b : in) r = std::max(r, b.rank());
  return r;
}

// Shape of a batched result: the batch size first (-1 when known only at run time).
inline Shape batch_shape(std::int64_t batch, const Shape& example) {
  std::vector<std::int64_t> dims{batch == kDynamic ? -1 : batch};
  dims.insert(dims.end(), example.begin(), example.end());
  return Shape(dims);
}

[[noreturn]] inline void need_static_batch(const Primitive& op, const std::string& why) {
  fail("vmap", std::string("the batch size is known only at run time here, and batching '") + op.name() +
                   "' needs it (" + why + "); give the batched arguments a static batch dim");
}

// An unbatched operand repeated for every example.
inline Tensor materialize(const Primitive& op, const Batched& b, std::int64_t batch) {
  if (b.batched) return b.t;
  if (batch == kDynamic) need_static_batch(op, "to repeat an unbatched operand");
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), b.t.shape().begin(), b.t.shape().end());
  return broadcast_to(expand_dims(b.t, 0), Shape(dims));
}

// Example i of a batched tensor.
inline Tensor example(const Tensor& batched, std::int64_t i) { return squeeze(slice(batched, {i}, {i + 1}), {0}); }

// The axis of one example's `axis` in the batched tensor.
inline int shifted_axis(int axis, int example_rank, const char* op) { return normalize_axis(axis, example_rank, op) + 1; }

// Elementwise and broadcasting ops (matmul's batch dims broadcast too): the same op on the
// aligned operands; unbatched operands broadcast over the batch.
inline BatchingResult broadcasting(const Primitive& op, BatchingCall call) {
  int r = max_rank(call.inputs);
  std::vector<Tensor> xs;
  for (const auto& b : call.inputs) xs.push_back(b.batched ? align(b, r) : b.t);
  return batched_results(dispatch(op, xs));
}

// Ops whose leading axes are a batch already (the linalg decompositions): the op on the batched
// tensors, unbatched operands repeated for every example; nullopt when the batch is dynamic
// and an operand would need repeating.
inline BatchingResult leading_batch(const Primitive& op, BatchingCall call) {
  std::vector<Tensor> xs;
  for (const Batched& b : call.inputs) {
    if (!b.batched && call.batch == kDynamic) return std::nullopt;
    xs.push_back(materialize(op, b, call.batch));
  }
  return batched_results(dispatch(op, xs));
}

// Ops that already take a batch of images (conv, pool): the vmap batch merged into theirs,
// [B, N, ...] -> [B*N, ...]. `merged[i]`: input i is an image batch (and must be batched);
// the others must not be. nullopt when the example's dims are not static.
BatchingResult image_batch(const Primitive& op, BatchingCall call, std::vector<bool> merged);

}  // namespace ef::batching
