#pragma once
// The hook eager dispatch and the graph executor call after each op when a program-wide check
// is on (include/eagerflow/ops/op_observer.h).
#include <atomic>
#include <span>

#include "eagerflow/ops/primitive.h"

namespace ef::detail {

extern std::atomic<bool> observing_ops;  // any check is on
void observe_op(const Primitive& op, std::span<const Tensor> outputs);

inline void after_op(const Primitive& op, std::span<const Tensor> outputs) {
  if (observing_ops.load(std::memory_order_relaxed)) [[unlikely]]
    observe_op(op, outputs);
}

}  // namespace ef::detail
