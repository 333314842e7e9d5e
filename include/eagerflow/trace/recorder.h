#pragma once
// The hook through which dispatch records ops while a trace is active on this thread.
// Implemented by trace::TraceContext; declared here so ops need not know about functions.
#include <span>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef::trace {

class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual std::vector<Tensor> record(const Primitive& op, std::span<const Tensor> inputs,
                                     std::vector<TensorSpec> specs) = 0;
};

// The recorder active on this thread, or nullptr when running eagerly.
Recorder* active_recorder();

}  // namespace ef::trace
