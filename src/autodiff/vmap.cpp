// ef::vmap as an interpreter on dispatch (see autodiff/vmap_internal.h): the per-example
// function runs under a trace context whose tensors are placeholders standing for batched
// values, and each op on a placeholder runs its batching rule in the enclosing context.
#include "eagerflow/autodiff/vmap.h"

#include <string>
#include <unordered_map>

#include "autodiff/vmap_internal.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/trace/context.h"
#include "eagerflow/variable.h"
#include "exec/interpret.h"
#include "function/call_op.h"
#include "ops/interpreters.h"
#include "ops/primitives.h"

namespace ef::detail {
namespace {

// Makes `tapes` this thread's tape list for a scope.
class TapeListScope {
 public:
  explicit TapeListScope(TapeHook* tapes) : saved_(innermost_tape()) { innermost_tape() = tapes; }
  ~TapeListScope() { innermost_tape() = saved_; }
  TapeListScope(const TapeListScope&) = delete;
  TapeListScope& operator=(const TapeListScope&) = delete;

 private:
  TapeHook* saved_;
};

class VmapTrace : public trace::TraceContext {
 public:
  VmapTrace(trace::TraceContext* outer, std::int64_t batch)
      : TraceContext(outer ? outer->function_name() : "vmap", outer ? outer->allow_variable_creation() : true, outer),
        outer_(outer),
        batch_(batch),
        outer_tapes_(innermost_tape()) {}

  // Runs `fn` in the enclosing context (its trace, or eagerly) with `tapes` as the tape list.
  template <class Fn>
  decltype(auto) in_outer(TapeHook* tapes, Fn&& fn) {
    TapeListScope tape_scope(tapes);
    if (outer_) {
      trace::TraceScope scope(*outer_);
      return fn();
    }
    trace::EagerScope scope;
    return fn();
  }

  Tensor placeholder(Batched value, TensorSpec spec) {
    Tensor p = add_input(spec);
    values_[p.impl().value] = std::move(value);
    return p;
  }

  bool owns(const Tensor& t) const { return t.is_symbolic() && t.impl().graph == graph(); }

  // The value behind a tensor of this context.
  Batched resolve(const Tensor& t) {
    int id = t.impl().value;
    auto it = values_.find(id);
    if (it != values_.end()) return it->second;
    // TraceContext::read_variable recorded a read in this context's graph: read the variable in
    // the enclosing context, where tapes watching variables see the read.
    const ir::Value& v = graph()->values.at(static_cast<std::size_t>(id));
    if (v.kind == ir::ValueKind::node_output) {
      const ir::Node& n = graph()->nodes.at(static_cast<std::size_t>(v.index));
      if (auto* read = dynamic_cast<const ReadVariable*>(n.op.get())) {
        Batched value{in_outer(outer_tapes_, [&] { return Variable::from_state(read->variable()).value(); }), false};
        values_[id] = value;
        return value;
      }
    }
    fail(ErrorCode::internal, "vmap", "a tensor " + t.spec().str() + " of vmap's trace has no value (internal error)");
  }

  std::vector<Tensor> record(const Primitive& op, std::span<const Tensor> inputs, std::vector<TensorSpec> specs) override {
    std::vector<Tensor> real(inputs.begin(), inputs.end());
    bool mine = false;
    for (const auto& t : inputs) mine |= owns(t);
    if (!mine) {
      // Not a per-example value (a symbolic tensor of an enclosing trace, a random draw): the
      // enclosing context runs it. Tapes are hidden here: dispatch records the op on them
      // once this returns.
      return in_outer(nullptr, [&] { return dispatch(op, real); });
    }
    if (auto* call = dynamic_cast<const CallOp*>(&op)) {
      // A call (an ef::function called inside f) is batched op by op: its graph replays here,
      // so each of its ops meets its own batching rule. Tapes are hidden: dispatch records the
      // call itself on them once this returns.
      SuspendTapes hide_tapes;
      const GraphFunction& fn = call->with_residuals() ? *call->function()->gradient().forward : *call->function();
      return exec::interpret(fn.traced(), inputs);
    }
    std::vector<Batched> in;
    bool any_batched = false;
    for (const auto& t : inputs) {
      in.push_back(owns(t) ? resolve(t) : Batched{t, false});
      any_batched |= in.back().batched;
    }
    // The batched ops are seen by the tapes outside vmap; tapes made inside the per-example
    // function see the per-example op (dispatch records it on them once this returns).
    std::vector<Batched> out = in_outer(outer_tapes_, [&] {
      if (any_batched) return apply_batching_rule(op, in, specs, batch_);
      std::vector<Tensor> xs;
      for (const auto& b : in) xs.push_back(b.t);
      std::vector<Batched> r;
      for (auto& t : dispatch(op, xs)) r.push_back({std::move(t), false});
      return r;
    });
    if (out.size() != specs.size())
      fail(ErrorCode::internal, "vmap",
           std::string("the batching rule of '") + op.name() + "' returned " + std::to_string(out.size()) +
               " outputs for " + std::to_string(specs.size()) + " (internal error)");
    std::vector<Tensor> result;
    for (std::size_t i = 0; i < out.size(); ++i) {
      check_shape(op, out[i], specs[i]);
      result.push_back(placeholder(std::move(out[i]), specs[i]));
    }
    return result;
  }

 private:
  void check_shape(const Primitive& op, const Batched& b, const TensorSpec& spec) const {
    const Shape& s = b.t.shape();
    bool ok = b.t.dtype() == spec.dtype && b.rank() == spec.shape.rank();
    for (int i = 0; ok && i < spec.shape.rank(); ++i) {
      std::int64_t got = s[b.batched ? i + 1 : i], want = spec.shape[i];
      ok = got == want || got == kDynamic || want == kDynamic;
    }
    if (b.batched && batch_ != kDynamic && s[0] != kDynamic) ok = ok && s[0] == batch_;
    if (!ok)
      fail(ErrorCode::internal, "vmap",
           std::string("the batching rule of '") + op.name() + "' made " + b.t.spec().str() +
               (b.batched ? " (batched)" : " (unbatched)") + " for an example of " + spec.str() + " (internal error)");
  }

  trace::TraceContext* outer_;
  std::int64_t batch_;
  TapeHook* outer_tapes_;  // the tapes active when vmap was called
  std::unordered_map<int, Batched> values_;
};

Tensor move_axis(const Tensor& t, int from, int to) {
  if (from == to) return t;
  std::vector<int> perm;
  for (int i = 0; i < t.rank(); ++i)
    if (i != from) perm.push_back(i);
  perm.insert(perm.begin() + to, from);
  return transpose(t, perm);
}

std::string axes_str(const InAxes& a) {
  std::string s = a.for_all ? "" : "(";
  for (std::size_t i = 0; i < a.axes.size(); ++i)
    s += (i ? ", " : "") + (a.axes[i] ? std::to_string(*a.axes[i]) : std::string("not_batched"));
  return a.for_all ? s : s + ")";
}

}  // namespace

std::vector<Tensor> vmap_call(const VmapBody& body, const std::vector<Tensor>& args, const InAxes& in_axes,
                              const OutAxes& out_axes) {
  std::size_t n = args.size();
  std::vector<std::optional<int>> axes = in_axes.axes;
  if (in_axes.for_all) axes.assign(n, in_axes.axes.at(0));
  if (axes.size() != n)
    fail("vmap", "in_axes " + axes_str(in_axes) + " has " + std::to_string(axes.size()) + " entries for " +
                     std::to_string(n) + " arguments");
  std::int64_t batch = kDynamic;
  int first = -1, first_axis = 0;
  std::vector<Batched> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::string which = "argument " + std::to_string(i);
    if (!args[i].defined()) fail("vmap", which + " is undefined (default-constructed)");
    if (!axes[i]) {
      values[i] = {args[i], false};
      continue;
    }
    int rank = args[i].rank(), a = *axes[i];
    if (a < -rank || a >= rank)
      fail("vmap", "in_axes " + std::to_string(a) + " is out of range for " + which + " " + args[i].spec().str() +
                       (rank == 0 ? " (a scalar has no axis to batch; use ef::not_batched)" : ""));
    if (a < 0) a += rank;
    std::int64_t size = args[i].shape()[a];
    if (first < 0) {
      first = static_cast<int>(i);
      first_axis = a;
      batch = size;
    } else if (size != batch) {
      if (size != kDynamic && batch != kDynamic)
        fail("vmap", "batch sizes differ: argument " + std::to_string(first) + " " + args[first].spec().str() +
                         " has " + std::to_string(batch) + " on axis " + std::to_string(first_axis) + ", " + which +
                         " " + args[i].spec().str() + " has " + std::to_string(size) + " on axis " + std::to_string(a));
      if (batch == kDynamic) batch = size;
    }
    values[i] = {move_axis(args[i], a, 0), true};
  }
  if (first < 0)
    fail("vmap", "no argument is batched (in_axes " + axes_str(in_axes) + " over " + std::to_string(n) +
                     " arguments); give at least one argument a batch axis");

  VmapTrace ctx(trace::current(), batch);
  std::vector<Tensor> outs;
  {
    trace::TraceScope scope(ctx);
    std::vector<Tensor> xs;
    for (auto& v : values) {
      TensorSpec spec = v.t.spec();
      if (v.batched) {
        std::vector<std::int64_t> dims(v.t.shape().begin() + 1, v.t.shape().end());
        spec.shape = Shape(dims);
      }
      xs.push_back(ctx.placeholder(v, spec));
    }
    outs = body(xs);
  }

  std::vector<int> out_axis = out_axes.axes;
  if (out_axes.for_all) out_axis.assign(outs.size(), out_axes.axes.at(0));
  if (out_axis.size() != outs.size())
    fail("vmap", "out_axes has " + std::to_string(out_axis.size()) + " entries for " + std::to_string(outs.size()) +
                     " outputs");
  std::vector<Tensor> result;
  for (std::size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined()) fail("vmap", "output " + std::to_string(k) + " of the function is undefined");
    Batched b = ctx.owns(outs[k]) ? ctx.resolve(outs[k]) : Batched{outs[k], false};
    Tensor t = b.t;
    if (!b.batched) {
      // The same for every example (JAX broadcasts it too).
      if (batch == kDynamic)
        fail("vmap", "output " + std::to_string(k) + " " + t.spec().str() +
                         " does not depend on the batched arguments, and the batch size is known only at run time");
      std::vector<std::int64_t> dims{batch};
      dims.insert(dims.end(), t.shape().begin(), t.shape().end());
      t = broadcast_to(expand_dims(t, 0), Shape(dims));
    }
    int rank = t.rank(), a = out_axis[k];
    if (a < -rank || a >= rank)
      fail("vmap", "out_axes " + std::to_string(a) + " is out of range for output " + std::to_string(k) + " " +
                       t.spec().str() + " (batched)");
    result.push_back(move_axis(t, 0, a < 0 ? a + rank : a));
  }
  return result;
}

}  // namespace ef::detail
