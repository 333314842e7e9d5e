#include <cxxabi.h>

#include <cstdlib>
#include <mutex>
#include <set>

#include "eagerflow/core/tensor.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/trace/recorder.h"
#include "ops/interpreters.h"

namespace ef {

namespace detail {
namespace {
thread_local TapeHook* tapes = nullptr;
thread_local int kernel_depth = 0;
}  // namespace

TapeHook*& innermost_tape() { return tapes; }

bool tapes_recording() {
  for (TapeHook* t = tapes; t; t = t->below)
    if (!t->paused) return true;
  return false;
}

void record_on_tapes(const Primitive& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  for (TapeHook* t = tapes; t; t = t->below)
    if (!t->paused) t->record(op, inputs, outputs);
}

void note_variable_read(const std::shared_ptr<VariableState>& var, const Tensor& value) {
  if (kernel_depth > 0) return;
  for (TapeHook* t = tapes; t; t = t->below)
    if (!t->paused) t->variable_read(var, value);
}

bool in_kernel() { return kernel_depth > 0; }
KernelScope::KernelScope() { ++kernel_depth; }
KernelScope::~KernelScope() { --kernel_depth; }

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
      fail(op.name(), "dtypes differ: " + describe(inputs, " vs ") +
                          " (binary ops need equal dtypes; use ef::cast)");
}

namespace {

bool check_inputs(const Primitive& op, std::span<const Tensor> inputs) {
  bool symbolic = false;
  for (const auto& t : inputs) {
    if (!t.defined()) fail(op.name(), "an input tensor is undefined (default-constructed)");
    symbolic |= t.is_symbolic();
  }
  return symbolic;
}

[[noreturn]] void symbolic_outside_trace(const Primitive& op) {
  fail(op.name(), "got a symbolic tensor outside of its trace; symbolic tensors exist only "
                  "while ef::function traces (do not keep them past the traced call)");
}

}  // namespace

std::vector<Tensor> dispatch(const Primitive& op, std::span<const Tensor> inputs) {
  bool symbolic = check_inputs(op, inputs);
  trace::Recorder* recorder = detail::in_kernel() ? nullptr : trace::active_recorder();
  std::vector<Tensor> outputs;
  if (recorder && (symbolic || op.has_effect() || op.is_stateful())) {
    outputs = recorder->record(op, inputs, op.infer(inputs));
  } else {
    if (symbolic) symbolic_outside_trace(op);
    detail::KernelScope kernel;
    std::vector<TensorSpec> specs = op.infer(inputs);
    outputs.resize(specs.size());
    op.eval(inputs, specs, outputs);
  }
  if (detail::tapes && !detail::in_kernel()) detail::record_on_tapes(op, inputs, outputs);
  return outputs;
}

Tensor dispatch1(const Primitive& op, std::span<const Tensor> inputs) {
  bool symbolic = check_inputs(op, inputs);
  bool kernel = detail::in_kernel();
  if (!kernel && (symbolic || detail::tapes || ((op.has_effect() || op.is_stateful()) && trace::active_recorder())))
    return dispatch(op, inputs).at(0);
  // Eager fast path: one output, no vector of outputs.
  if (symbolic) symbolic_outside_trace(op);
  detail::KernelScope scope;
  std::vector<TensorSpec> specs = op.infer(inputs);
  Tensor out;
  op.eval(inputs, specs, std::span<Tensor>(&out, 1));
  return out;
}

std::vector<Tensor> Primitive::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor>,
                                   const std::vector<bool>&) const {
  fail("gradient", std::string("op '") + name() + "' has no gradient rule" +
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
std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(mangled);
}
}  // namespace

bool detail::register_primitive_type(const char* mangled_name) {
  std::lock_guard lock(registry_mutex());
  registry().insert(demangle(mangled_name));
  return true;
}

std::vector<std::string> registered_primitive_types() {
  std::lock_guard lock(registry_mutex());
  return {registry().begin(), registry().end()};
}

std::string primitive_type(const Primitive& op) { return demangle(typeid(op).name()); }

}  // namespace ef
