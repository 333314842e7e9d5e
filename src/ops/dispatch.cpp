#include <cxxabi.h>

#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <set>

#include "eagerflow/trace/keras_tensor.h"
#include "eagerflow/core/tensor.h"
#include "eagerflow/ops/device_kernels.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/trace/recorder.h"
#include "eagerflow/core/string_tensor.h"
#include "ops/op_observer.h"
#include "ops/bfloat16_dispatch.h"
#include "ops/interpreters.h"
#include "ops/output_checks.h"

namespace ef {

namespace detail {
namespace {
thread_local TapeHook* tapes = nullptr;
thread_local int kernel_depth = 0;

// Unlinks and deletes the tapes of this thread's list whose owners were destroyed where they
// could not unlink them (another thread; a list hidden by SuspendTapes).
void prune_abandoned() {
  for (TapeHook** p = &tapes; *p;) {
    TapeHook* t = *p;
    if (t->state.load(std::memory_order_acquire) == TapeHook::abandoned) {
      *p = t->below;
      delete t;
    } else {
      p = &t->below;
    }
  }
}

// When a thread that made tapes ends: tapes still owned elsewhere learn that their thread is
// gone (their owner deletes them directly); abandoned ones are deleted here.
struct ThreadTapesExit {
  ~ThreadTapesExit() {
    TapeHook* t = tapes;
    tapes = nullptr;
    while (t) {
      TapeHook* next = t->below;
      int expected = TapeHook::linked;
      if (!t->state.compare_exchange_strong(expected, TapeHook::thread_ended, std::memory_order_acq_rel))
        delete t;  // abandoned: nobody else refers to it
      t = next;
    }
  }
};
}  // namespace

TapeHook*& innermost_tape() { return tapes; }

void link_tape(TapeHook* tape) {
  thread_local ThreadTapesExit on_exit;  // registered with the thread's first tape
  (void)on_exit;
  tape->owner = std::this_thread::get_id();
  tape->below = tapes;
  tapes = tape;
}

bool unlink_tape(TapeHook* tape) {
  for (TapeHook** p = &tapes; *p; p = &(*p)->below)
    if (*p == tape) {
      *p = tape->below;
      return true;
    }
  return false;
}

bool retire_tape(TapeHook* tape) {
  if (tape->state.load(std::memory_order_acquire) == TapeHook::thread_ended) return true;
  if (tape->owner == std::this_thread::get_id() && unlink_tape(tape)) return true;
  int expected = TapeHook::linked;
  // Still in its thread's list (that thread runs on, or hides it): that thread deletes it.
  if (tape->state.compare_exchange_strong(expected, TapeHook::abandoned, std::memory_order_acq_rel)) return false;
  return true;  // its thread ended meanwhile
}

bool tapes_recording() {
  prune_abandoned();
  for (TapeHook* t = tapes; t; t = t->below)
    if (!t->paused) return true;
  return false;
}

void record_on_tapes(const Primitive& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  prune_abandoned();
  for (TapeHook* t = tapes; t; t = t->below)
    if (!t->paused) t->record(op, inputs, outputs);
}

void note_variable_read(const std::shared_ptr<VariableState>& var, const Tensor& value) {
  if (kernel_depth > 0) return;
  prune_abandoned();
  for (TapeHook* t = tapes; t; t = t->below)
    if (!t->paused) t->variable_read(var, value);
}

bool in_kernel() { return kernel_depth > 0; }
KernelScope::KernelScope() { ++kernel_depth; }
KernelScope::~KernelScope() { --kernel_depth; }
OutsideKernel::OutsideKernel() : saved_(kernel_depth) { kernel_depth = 0; }
OutsideKernel::~OutsideKernel() { kernel_depth = saved_; }

namespace {
// Dims agree where both are known (symbolic tensors have kDynamic dims while tracing).
bool dims_agree(const Shape& want, const Shape& got) {
  if (want.rank() != got.rank()) return false;
  for (int a = 0; a < want.rank(); ++a)
    if (want[a] != kDynamic && got[a] != kDynamic && want[a] != got[a]) return false;
  return true;
}
}  // namespace

void check_kernel_outputs(const Primitive& op, std::span<const TensorSpec> specs, std::span<const Tensor> outputs) {
  if (outputs.size() != specs.size())
    fail(ErrorCode::internal, op.name(),
         "the kernel made " + std::to_string(outputs.size()) + " outputs where the shape rule (infer) declared " +
             std::to_string(specs.size()));
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const Tensor& t = outputs[i];
    const TensorSpec& s = specs[i];
    if (t.defined() && t.dtype() == s.dtype && dims_agree(s.shape, t.shape())) continue;
    fail(ErrorCode::internal, op.name(),
         "the kernel (eval) returned " + (t.defined() ? t.spec().str() : std::string("an undefined tensor")) +
             " as output " + std::to_string(i) + " where the shape rule (infer) declared " + s.str());
  }
}

void check_vjp_outputs(const Primitive& op, std::span<const Tensor> inputs, const std::vector<bool>& needed,
                       std::span<const Tensor> gradients) {
  if (gradients.size() != inputs.size())
    fail(ErrorCode::internal, "gradient",
         std::string("the gradient rule (vjp) of '") + op.name() + "' returned " + std::to_string(gradients.size()) +
             " gradients for its " + std::to_string(inputs.size()) + " inputs (" + describe(inputs) +
             "); it must return one per input (an undefined tensor for none)");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& g = gradients[i];
    if (i >= needed.size() || !needed[i] || !g.defined()) continue;
    if (g.dtype() == inputs[i].dtype() && dims_agree(inputs[i].shape(), g.shape())) continue;
    fail(ErrorCode::internal, "gradient",
         std::string("the gradient rule (vjp) of '") + op.name() + "' returned " + g.spec().str() +
             " as the gradient of input " + std::to_string(i) + ", which is " + inputs[i].spec().str() +
             " (a gradient has its input's shape and dtype)");
  }
}

}  // namespace detail

std::string describe(std::span<const Tensor> inputs, const char* separator) {
  std::string s;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += separator;
    s += inputs[i].spec().str();
  }
  return s;
}

void expect_inputs(const Primitive& op, std::span<const Tensor> inputs, std::size_t n) {
  if (inputs.size() != n)
    fail(op.name(), "expects " + std::to_string(n) + " inputs, got " + std::to_string(inputs.size()));
  for (const auto& t : inputs)
    if (!t.defined()) fail(op.name(), "an input tensor is undefined (default-constructed)");
}

void expect_same_dtype(const Primitive& op, std::span<const Tensor> inputs) {
  for (const auto& t : inputs)
    if (t.dtype() != inputs[0].dtype())
      fail(kWrongType, op.name(),
           "dtypes differ: " + describe(inputs, " vs ") + " (binary ops need equal dtypes; use ef::cast)");
}

namespace {

struct InputKinds {
  bool symbolic = false;  // an input is symbolic (a trace records the op)
  bool keras = false;     // an input is a Keras tensor (functional API)
  bool bfloat16 = false;  // an input has a storage dtype: bfloat16, float16, uint8 .. (src/ops/bfloat16_dispatch.h)
  bool strings = false;   // an input is a string tensor (eagerflow/core/string_tensor.h)
  bool complex = false;   // an input is complex64 or complex128
};

// One pass over the inputs: every one defined, and what kinds of tensor they are.
InputKinds check_inputs(const Primitive& op, std::span<const Tensor> inputs) {
  InputKinds k;
  for (const auto& t : inputs) {
    if (!t.defined()) fail(op.name(), "an input tensor is undefined (default-constructed)");
    const TensorImpl& impl = t.impl();
    k.symbolic |= impl.graph != nullptr;
    k.keras |= impl.keras_node != nullptr;
    k.bfloat16 |= is_storage_dtype(impl.dtype);
    k.strings |= impl.dtype == DType::string;
    k.complex |= is_complex(impl.dtype);
  }
  if (k.strings && !op.takes_strings()) detail::strings_not_taken(op.name(), describe(inputs));
  if (k.complex && !op.takes_complex())
    fail(kWrongType, op.name(),
         "does not take complex tensors; inputs " + describe(inputs) +
             " (the complex ops do: ef::real, ef::imag, ef::abs, ef::conj and the arithmetic of eagerflow/ops/complex.h)");
  return k;
}

// Every exception leaving an op is an ef::Error naming the op and its input shapes: a kernel
// library's own exception (oneDNN's dnnl::error, a std::length_error from a container) is
// wrapped, with the original nested (std::rethrow_if_nested recovers it). std::bad_alloc
// becomes an ef::Error too, as an allocation of a tensor that does not fit already is: the
// op and the shapes tell which request was too large.
struct NestedError : Error, std::nested_exception {
  using Error::Error;
};

[[noreturn]] void rethrow_as_error(const Primitive& op, std::span<const Tensor> inputs) {
  std::string what;
  ErrorKind kind;
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc& e) {
    what = std::string("out of memory (") + e.what() + ")";
    kind = kind_of(e);
  } catch (const std::exception& e) {
    what = std::string("the kernel failed: ") + e.what();
    kind = kind_of(e);
  }
  std::string text = "[" + std::string(op.name()) + "] " + what + "; inputs " + describe(inputs);
  std::string path = NameScope::current_path();
  if (!path.empty()) text += " (in layer " + path + ")";
  throw NestedError(kind, text);  // still inside the handler of the original: it is the nested one
}

[[noreturn]] void symbolic_outside_trace(const Primitive& op) {
  fail(ErrorCode::failed_precondition, op.name(),
       "got a symbolic tensor outside of its trace; symbolic tensors exist only "
       "while ef::function traces (do not keep them past the traced call)");
}

}  // namespace

std::vector<Tensor> dispatch(const Primitive& op, std::span<const Tensor> inputs) {
  auto [symbolic, keras, bfloat16, strings, complex] = check_inputs(op, inputs);
  (void)complex;
  if (bfloat16 && !detail::takes_storage_inputs(op, inputs)) return detail::dispatch_via_float32(op, inputs);
  if (keras) {
    try {
      return detail::record_keras_op(op, inputs);
    } catch (...) {
      rethrow_as_error(op, inputs);
    }
  }
  trace::Recorder* recorder = detail::in_kernel() ? nullptr : trace::active_recorder();
  std::vector<Tensor> outputs;
  if (recorder && (symbolic || op.has_effect() || op.is_stateful())) {
    std::vector<TensorSpec> specs;
    try {
      specs = op.infer(inputs);
      detail::check_bfloat16_outputs(op, specs);
    } catch (...) {
      rethrow_as_error(op, inputs);
    }
    outputs = recorder->record(op, inputs, std::move(specs));
  } else {
    if (symbolic) symbolic_outside_trace(op);
    detail::KernelScope kernel;
    try {
      std::vector<TensorSpec> specs = op.infer(inputs);
      detail::check_bfloat16_outputs(op, specs);
      outputs.resize(specs.size());
      if (detail::devices_in_use()) [[unlikely]]
        detail::run_kernel(op, detail::device_of_inputs(op, inputs), inputs, specs, outputs);
      else
        op.eval(inputs, specs, outputs);
      detail::check_kernel_outputs(op, specs, outputs);
      if (strings) detail::keep_string_bytes(inputs, outputs);
      detail::after_op(op, outputs);
    } catch (...) {
      rethrow_as_error(op, inputs);
    }
  }
  if (detail::tapes && !detail::in_kernel()) detail::record_on_tapes(op, inputs, outputs);
  return outputs;
}

Tensor dispatch1(const Primitive& op, std::span<const Tensor> inputs) {
  auto [symbolic, keras, bfloat16, strings, complex] = check_inputs(op, inputs);
  (void)complex;
  bool kernel = detail::in_kernel();
  if (bfloat16 && !detail::takes_storage_inputs(op, inputs)) return detail::dispatch_via_float32(op, inputs).at(0);
  if (!kernel && (symbolic || keras || detail::tapes || ((op.has_effect() || op.is_stateful()) && trace::active_recorder())))
    return dispatch(op, inputs).at(0);
  // Eager fast path: one output, no vector of outputs.
  if (symbolic) symbolic_outside_trace(op);
  detail::KernelScope scope;
  Tensor out;
  try {
    std::vector<TensorSpec> specs = op.infer(inputs);
    detail::check_bfloat16_outputs(op, specs);
    if (detail::devices_in_use()) [[unlikely]]
      detail::run_kernel(op, detail::device_of_inputs(op, inputs), inputs, specs, std::span<Tensor>(&out, 1));
    else
      op.eval(inputs, specs, std::span<Tensor>(&out, 1));
    detail::check_kernel_outputs(op, specs, std::span<const Tensor>(&out, 1));
    if (strings) detail::keep_string_bytes(inputs, std::span<const Tensor>(&out, 1));
    detail::after_op(op, std::span<const Tensor>(&out, 1));
  } catch (...) {
    rethrow_as_error(op, inputs);
  }
  return out;
}

std::vector<Tensor> Primitive::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor>,
                                   const std::vector<bool>&) const {
  fail(ErrorCode::unimplemented, "gradient",
       std::string("op '") + name() + "' has no gradient rule" +
           (is_differentiable() ? "" : " (it is not differentiable)"));
}

namespace {
std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::set<std::string>& registry() {
  static std::set<std::string> r;
  return r;
}
}  // namespace

std::string detail::demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(mangled);
}

bool detail::register_primitive_type(const char* mangled_name) {
  std::lock_guard lock(registry_mutex());
  registry().insert(detail::demangle(mangled_name));
  return true;
}

std::vector<std::string> registered_primitive_types() {
  std::lock_guard lock(registry_mutex());
  return {registry().begin(), registry().end()};
}

std::string primitive_type(const Primitive& op) { return detail::demangle(typeid(op).name()); }

}  // namespace ef
