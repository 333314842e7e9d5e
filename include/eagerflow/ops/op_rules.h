#pragma once
// What an op brings besides its class (shape rule, CPU kernel, gradient: eagerflow/ops/primitive.h):
// how it runs under ef::vmap and how it exports to ONNX. Built-in ops and users' ops register
// these the same way, next to the class:
//
//   static const bool rules = ef::register_op_rules<ClipByNorm>({
//       .batching = [](const ClipByNorm& op, ef::BatchingCall call) -> ef::BatchingResult {
//         return ef::batched_results(ef::dispatch(op, call.batched_inputs()));  // rows stay apart
//       },
//       .onnx = [](const ClipByNorm& op, ef::onnx::Lowering& to) { ... to.node("Mul", ...); },
//   });
//
// Either rule may instead be declared absent on purpose: `.runs_per_example = true` (vmap
// slices the batch and calls the op once per example: correct, slower) and
// `.onnx_unsupported = "why"` (exporting a graph with the op is an error that says why). An op
// with no record at all behaves the same way; the op table test asks every built-in op for one.
// Kernels for devices other than the CPU: eagerflow/ops/device_kernels.h. Neither header is in
// eagerflow/eagerflow.h (most programs never name them): include them where you register.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <typeindex>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef {

namespace onnx {
class Lowering;  // eagerflow/ops/onnx_lowering.h
}

// A real value under ef::vmap: batched (axis 0 is the batch axis) or the same for every example.
struct Batched {
  Tensor t;
  bool batched = false;
  // The rank one example sees.
  int rank() const { return batched ? t.rank() - 1 : t.rank(); }
};

// What a batching rule is given: the op's inputs, the per-example specs of its outputs, and the
// batch size (kDynamic when it is known only at run time).
struct BatchingCall {
  std::span<const Batched> inputs;
  std::span<const TensorSpec> specs;
  std::int64_t batch = 0;
  // The input tensors as they are (batched ones with their batch axis first).
  std::vector<Tensor> batched_inputs() const {
    std::vector<Tensor> out;
    for (const Batched& b : inputs) out.push_back(b.t);
    return out;
  }
};
// One Batched per output, or nullopt: "not this case", and the op runs once per example.
using BatchingResult = std::optional<std::vector<Batched>>;
// Every tensor batched.
inline std::vector<Batched> batched_results(std::vector<Tensor> ts) {
  std::vector<Batched> out;
  for (Tensor& t : ts) out.push_back({std::move(t), true});
  return out;
}

using BatchingRule = std::function<BatchingResult(const Primitive& op, BatchingCall call)>;
using OnnxLowering = std::function<void(const Primitive& op, onnx::Lowering& to)>;

// The record of one op class.
struct OpRules {
  BatchingRule batching;
  bool runs_per_example = false;  // no batching rule, on purpose
  OnnxLowering onnx;
  std::string onnx_unsupported;   // no ONNX form, on purpose: the reason users are shown
};

// The same with rules that take the op as its own class.
template <class Op>
struct OpRulesOf {
  std::function<BatchingResult(const Op& op, BatchingCall call)> batching;
  bool runs_per_example = false;
  std::function<void(const Op& op, onnx::Lowering& to)> onnx;
  std::string onnx_unsupported;
};

namespace detail {
std::string demangle(const char* mangled);  // "ef::MatMul" from typeid(...).name()
}

// Registers the record of op class `op_class` (its demangled name, `type_name`, is what errors
// and the op table test show). An ef::Error when the class has one already, when a rule and
// its "absent on purpose" are both given, or when nothing is given. Returns true, for
// `static const bool registered = ...`.
bool register_op_rules(std::type_index op_class, const std::string& type_name, OpRules rules);

template <class Op>
bool register_op_rules(OpRulesOf<Op> rules) {
  static_assert(std::is_base_of_v<Primitive, Op>, "ef::register_op_rules<Op>: Op must derive from ef::Primitive");
  OpRules r;
  r.runs_per_example = rules.runs_per_example;
  r.onnx_unsupported = std::move(rules.onnx_unsupported);
  // The table is keyed by the exact class, so the casts below cannot fail.
  if (rules.batching)
    r.batching = [f = std::move(rules.batching)](const Primitive& op, BatchingCall call) {
      return f(static_cast<const Op&>(op), call);
    };
  if (rules.onnx)
    r.onnx = [f = std::move(rules.onnx)](const Primitive& op, onnx::Lowering& to) { f(static_cast<const Op&>(op), to); };
  return register_op_rules(std::type_index(typeid(Op)), detail::demangle(typeid(Op).name()), std::move(r));
}

// The record of `op`'s class, or nullptr when it has none.
const OpRules* op_rules(const Primitive& op);
// Every record, by demangled class name ("ef::MatMul"): the op table test reads it.
std::vector<std::pair<std::string, const OpRules*>> registered_op_rules();

}  // namespace ef
