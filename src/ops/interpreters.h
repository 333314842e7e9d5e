#pragma once
// The interpreters behind dispatch, which stack (like JAX's trace stack behind bind):
//  - eager: run the kernel now;
//  - trace: record a node in the active trace::Recorder (innermost ef::function trace);
//  - tape:  every GradientTape active on this thread records what touches its watched values.
// A trace and tapes can be active together (a tape inside a traced function, nested tapes).
// Inside a kernel (KernelScope) only the eager interpreter runs: ops that a kernel calls are
// its implementation, not part of the user's program.
#include <atomic>
#include <memory>
#include <span>
#include <thread>

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
  // A tape records on the thread that made it and sits in that thread's list. Its owner may
  // be destroyed elsewhere (another thread, or while SuspendTapes hides the list): then the
  // tape is marked abandoned and the list's thread unlinks and deletes it the next time it
  // walks its tapes, or when it exits. A tape whose thread has ended is deleted at once.
  enum State : int { linked, abandoned, thread_ended };
  std::atomic<int> state{linked};
  std::thread::id owner = std::this_thread::get_id();
};

// Innermost tape on this thread (tapes link to the ones below), or nullptr.
TapeHook*& innermost_tape();
// Pushes a new tape on this thread's list; unlinks a tape from it (false when not found).
void link_tape(TapeHook* tape);
bool unlink_tape(TapeHook* tape);
// The owner of a heap tape is going away: true when the caller deletes it now, false when
// its thread will (the tape was abandoned in a list the caller cannot touch).
bool retire_tape(TapeHook* tape);
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

// Leaves any kernel scope for its lifetime: a call op traces its gradient graphs the first
// time a shape rule asks for them, which may be from inside a kernel.
class OutsideKernel {
 public:
  OutsideKernel();
  ~OutsideKernel();
  OutsideKernel(const OutsideKernel&) = delete;
  OutsideKernel& operator=(const OutsideKernel&) = delete;

 private:
  int saved_;
};

}  // namespace ef::detail
