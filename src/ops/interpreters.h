#pragma once
// The interpreters behind dispatch, which stack (like JAX's trace stack behind bind):
//  - eager: run the kernel now;
//  - trace: record a node in the active trace::Recorder (innermost ef::function trace);
//  - tape:  every GradientTape active on this thread records what touches its watched values.
// A trace and tapes can be active together (a tape inside a traced function, nested tapes).
// Inside a kernel (KernelScope) only the eager interpreter runs: ops that a kernel calls are
// its implementation, not part of the user's program.
#include <memory>
#include <span>

#include "eagerflow/ops/primitive.h"

namespace ef {
struct VariableState;
}

namespace ef::detail {

class TapeHook {
 public:
  virtual ~TapeHook() = default;
  virtual void record(const Primitive& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs) = 0;
  virtual void variable_read(const std::shared_ptr<VariableState>& var, const Tensor& value) = 0;
  TapeHook* below = nullptr;  // the next outer tape on this thread
  bool paused = false;
};

// Innermost tape on this thread (tapes link to the ones below), or nullptr.
TapeHook*& innermost_tape();
// True when some tape on this thread would record.
bool tapes_recording();
void record_on_tapes(const Primitive& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs);
void note_variable_read(const std::shared_ptr<VariableState>& var, const Tensor& value);

// Hides this thread's tapes for a scope: while a function body traces, its symbolic ops
// belong to the graph, not to a tape outside it.
class SuspendTapes {
 public:
  SuspendTapes() : saved_(innermost_tape()) { innermost_tape() = nullptr; }
  ~SuspendTapes() { innermost_tape() = saved_; }
  SuspendTapes(const SuspendTapes&) = delete;
  SuspendTapes& operator=(const SuspendTapes&) = delete;

 private:
  TapeHook* saved_;
};

bool in_kernel();
class KernelScope {
 public:
  KernelScope();
  ~KernelScope();
  KernelScope(const KernelScope&) = delete;
  KernelScope& operator=(const KernelScope&) = delete;
};

}  // namespace ef::detail
