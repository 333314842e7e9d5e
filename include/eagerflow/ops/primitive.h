#pragma once
// A Primitive is one op, defined once: its shape/dtype rule (infer), its kernel (eval), its
// gradient rule (vjp, written with ef ops so that it runs eagerly and traced alike) and its
// traits. Eager calls run eval at once; a trace records the primitive in a graph and the
// executor runs the same eval on replay; a GradientTape records it for the backward pass.
//
// Op identity is typed: passes ask an op what it is with dynamic_cast to its class (declared
// in src/ops/primitives.h) and compare parameters through is_equivalent (its typed
// parameters()), never through the printed attributes.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "eagerflow/core/tensor.h"
#include "eagerflow/ops/op_params.h"

namespace ef {

namespace ir {
class Graph;
}

// A graph an op runs (a cond's branch, a loop's body, a called function), named by its role
// ("then (optimized)"): what the IR verifier checks inside a node (src/trace/verify.h).
struct SubGraphRef {
  std::string role;
  const ir::Graph* graph = nullptr;
};

class Primitive {
 public:
  virtual ~Primitive() = default;
  virtual const char* name() const = 0;
  // Output specs from the inputs' dtypes and shapes (dims may be dynamic while tracing).
  // Throws ef::Error naming the op and the shapes.
  virtual std::vector<TensorSpec> infer(std::span<const Tensor> inputs) const = 0;
  // Fills `outputs` (sized like `specs`, whose shapes are concrete). Most kernels allocate
  // with Tensor::empty; view ops may alias their input instead.
  virtual void eval(std::span<const Tensor> inputs, std::span<const TensorSpec> specs,
                    std::span<Tensor> outputs) const = 0;
  // The op's parameters, typed and in order ("axes", "keepdims"): the printed attributes,
  // equality for common-subexpression elimination and the saved-model format derive from
  // them (include/eagerflow/ops/op_params.h). What the name tells (sum or mean) is not repeated.
  virtual OpParams parameters() const { return {}; }
  // Attributes as printed in graphs ("axes=(1,) keepdims=True"): parameters().str(). Ops that
  // hold sub-graphs (cond, while, call) print those instead.
  virtual std::string attrs() const { return parameters().str(); }
  // True when `other` is the same op with the same parameters, so that common-subexpression
  // elimination may merge two nodes with the same inputs. Opt-in: "different" by default.
  virtual bool is_equivalent(const Primitive& other) const { return false; }
  // Effects (printing, assignment) are never removed, merged or reordered.
  virtual bool has_effect() const { return false; }
  // True for an effect that only shows something (print, a summary write): a sub-graph run
  // again to differentiate it (its forward values were not kept) skips it, so that it is not
  // shown twice. Every other effect runs again: a collective such as barrier, which the other
  // ranks wait for, must run as often on every rank.
  virtual bool skip_on_gradient_rerun() const { return false; }
  // The graphs this op runs (a cond's branches, a loop's condition and body, a scan's body, a
  // called function), for the IR verifier. None by default.
  virtual std::vector<SubGraphRef> subgraphs() const { return {}; }
  // Reads state that is not an input (random draws, variable reads): recorded whenever a trace
  // is active, even without symbolic inputs, and never merged.
  virtual bool is_stateful() const { return false; }
  // Whether gradients flow through this op. Not differentiable: comparisons, argmax, integer
  // and shape queries; the tape stops there.
  virtual bool is_differentiable() const { return true; }
  // Reverse-mode rule: the cotangents of the inputs from those of the outputs, written with ef
  // ops. `cotangents` has one defined tensor per output. Returns one tensor per input;
  // undefined where `needed[i]` is false or the input gets no gradient.
  virtual std::vector<Tensor> vjp(std::span<const Tensor> inputs, std::span<const Tensor> outputs,
                                  std::span<const Tensor> cotangents, const std::vector<bool>& needed) const;
  // True when vjp takes an undefined cotangent for an output nothing differentiates (instead
  // of zeros): an op whose extra outputs rarely get gradients can then skip their work.
  virtual bool accepts_missing_cotangents() const { return false; }
  // bfloat16 is a storage dtype. Neither (default): dispatch runs the op in float32 between casts
  // (src/ops/bfloat16_dispatch.cpp). takes_bfloat16: it moves or converts elements, or runs a graph
  // (reshape, cast, call). computes_bfloat16: all-bfloat16 inputs reach eval, which computes them
  // (float32 a block at a time, or bfloat16 instructions); other storage dtypes still go via float32.
  virtual bool takes_bfloat16() const { return false; }
  virtual bool computes_bfloat16() const { return false; }
  // Whether string tensors may reach this op (ops that move elements, string ops).
  virtual bool takes_strings() const { return false; }
  // Whether complex tensors may reach this op: by default the ops that take strings (they only
  // move elements: reshape, slice, concat, gather, cond, call ...), and the complex ops.
  virtual bool takes_complex() const { return takes_strings(); }
  // The same rule covers TF's narrow and unsigned integers (uint8 .. uint64), computed in
  // int32 or int64 (compute_dtype_of). Which results are the op's data, cast back to the
  // inputs' storage dtype, and which are indices, counts or shapes, kept: output `i` of dtype
  // `dtype`, computed for inputs widened to `computed`. Default: the outputs of the widened
  // dtype (argmax's int64 stays, an add's int32 becomes uint8 again); ops whose index outputs
  // can have that dtype (top_k's indices, argmax with output_type=int32) say so.
  virtual bool output_follows_inputs(std::size_t i, DType dtype, DType computed) const {
    (void)i;
    return dtype == computed;
  }
  // True for an input that is an index or a count whatever the data's dtype (take_along_axis'
  // indices): an int32 there may meet uint8 data. Any other input of the widened dtype next to
  // a storage input is refused, as TF refuses uint8 + int32.
  virtual bool is_index_input(std::size_t i) const {
    (void)i;
    return false;
  }
  virtual std::shared_ptr<Primitive> clone() const = 0;
};

namespace detail {
bool register_primitive_type(const char* mangled_name);
}
// The type of every op class linked into the program (demangled, e.g. "ef::MatMul"): tests
// check that the op table covers each of them.
std::vector<std::string> registered_primitive_types();
// The demangled type of an op ("ef::Unary"), the key of registered_primitive_types().
std::string primitive_type(const Primitive& op);

// CRTP helper that supplies clone() and registers the op class.
template <class Derived>
class PrimitiveBase : public Primitive {
 public:
  std::shared_ptr<Primitive> clone() const override {
    (void)registered_;
    return std::make_shared<Derived>(static_cast<const Derived&>(*this));
  }

 private:
  static inline const bool registered_ = detail::register_primitive_type(typeid(Derived).name());
};

// For ops that common-subexpression elimination may merge: is_equivalent holds for the same
// class, name and parameters().
template <class Derived>
class MergeablePrimitive : public PrimitiveBase<Derived> {
 public:
  bool is_equivalent(const Primitive& other) const override {
    auto* o = dynamic_cast<const Derived*>(&other);
    return o && std::string_view(this->name()) == o->name() && this->parameters() == o->parameters();
  }
};

// The one dispatch point: runs `op` now (eager), or records it when a trace is active on
// this thread and an input is symbolic (or the op has an effect or reads state); then every
// active GradientTape that tracks an input records it too. Inside a kernel (eval) nothing is
// recorded: ops a kernel calls are implementation details.
std::vector<Tensor> dispatch(const Primitive& op, std::span<const Tensor> inputs);
Tensor dispatch1(const Primitive& op, std::span<const Tensor> inputs);
inline Tensor dispatch1(const Primitive& op, std::initializer_list<Tensor> inputs) {
  return dispatch1(op, std::span<const Tensor>(inputs.begin(), inputs.size()));
}

// Helpers for shape rules.
std::string describe(std::span<const Tensor> inputs, const char* separator = ", ");  // "float32[2,3], float32[3]"
void expect_inputs(const Primitive& op, std::span<const Tensor> inputs, std::size_t n);
void expect_same_dtype(const Primitive& op, std::span<const Tensor> inputs);

}  // namespace ef
