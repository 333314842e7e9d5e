#include "eagerflow/function/control_flow.h"

#include <algorithm>

#include "eagerflow/exec/plan.h"
#include "eagerflow/function/function.h"
#include "eagerflow/passes/passes.h"
#include "autodiff/tape_impl.h"
#include "eagerflow/trace/context.h"
#include "eagerflow/ops/ops.h"
#include "function/call_op.h"
#include "function/control_flow_ops.h"
#include "ops/interpreters.h"
#include "eagerflow/ops/op_rules.h"

namespace ef {
namespace {

// Puts the graph's inputs in `order` (value ids), renumbering their positions.
void reorder_inputs(ir::Graph& g, std::vector<int> order) {
  g.inputs = std::move(order);
  for (std::size_t i = 0; i < g.inputs.size(); ++i) g.values[static_cast<std::size_t>(g.inputs[i])].index = static_cast<int>(i);
}

std::string specs_str(const std::vector<TensorSpec>& specs) {
  std::string s = "(";
  for (std::size_t i = 0; i < specs.size(); ++i) s += (i ? ", " : "") + specs[i].str();
  return s + ")";
}

}  // namespace

namespace detail {
namespace {
thread_local const passes::PassOptions* tracing_options = nullptr;
}  // namespace

const passes::PassOptions& tracing_pass_options() {
  static const passes::PassOptions defaults;
  return tracing_options ? *tracing_options : defaults;
}

TracingPassOptions::TracingPassOptions(const passes::PassOptions& options) : previous_(tracing_options) {
  tracing_options = &options;
}
TracingPassOptions::~TracingPassOptions() { tracing_options = previous_; }

}  // namespace detail

SubGraph::SubGraph(std::shared_ptr<ir::Graph> traced_graph, const passes::PassOptions& pass_options)
    : traced(std::move(traced_graph)),
      graph(passes::optimize(*traced, pass_options)),
      plan(std::make_shared<exec::Plan>(graph)),
      options(pass_options) {}

void SubGraph::add_refs(std::vector<SubGraphRef>& refs, const std::string& role) const {
  refs.push_back({role + " (traced)", traced.get()});
  refs.push_back({role + " (optimized)", graph.get()});
}

std::vector<Tensor> SubGraph::run(std::span<const Tensor> inputs) const {
  std::vector<Tensor> out(plan->num_outputs());
  plan->run(inputs, out);
  return out;
}

bool SubGraph::touches_state() const {
  for (const auto& n : graph->nodes)
    if (n.op->has_effect() || n.op->is_stateful()) return true;
  return false;
}

std::vector<SubGraphRef> CondOp::subgraphs() const {
  std::vector<SubGraphRef> refs;
  then_.add_refs(refs, "then branch");
  else_.add_refs(refs, "else branch");
  return refs;
}

std::vector<SubGraphRef> WhileOp::subgraphs() const {
  std::vector<SubGraphRef> refs;
  cond_.add_refs(refs, "condition");
  body_.add_refs(refs, "body");
  return refs;
}

std::string CondOp::attrs() const {
  return "branches=(\n      " + ir::to_text(*else_.graph) + "\n      " + ir::to_text(*then_.graph) + "\n    )";
}

void CondOp::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  const SubGraph& branch = in[0].data<bool>()[0] ? then_ : else_;
  std::vector<Tensor> r = branch.run(in.subspan(1));
  for (std::size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
}

struct CondOp::Residuals {
  std::shared_ptr<const GraphFunction> then_fn, else_fn;  // the branches as traced, with their splits
  std::size_t outputs = 0, then_count = 0, else_count = 0;
};

namespace {

// The stand-in a branch returns for the other branch's residual: no elements, so it costs
// nothing; the cond's output spec then has dynamic dims there.
Tensor empty_of(const TensorSpec& spec) {
  Shape shape = spec.shape;
  for (int d = 0; d < shape.rank(); ++d) shape[d] = 0;
  return zeros(shape, spec.dtype);
}

TensorSpec merged_with_empty(const TensorSpec& spec) {
  TensorSpec out = spec;
  for (int d = 0; d < out.shape.rank(); ++d)
    if (out.shape[d] != 0) out.shape[d] = kDynamic;
  return out;
}

}  // namespace

std::optional<CondOp> CondOp::with_residuals() const {
  if (residuals_) return *this;
  auto r = std::make_shared<Residuals>();
  r->then_fn = std::make_shared<const GraphFunction>(then_.traced, then_.options);
  r->else_fn = std::make_shared<const GraphFunction>(else_.traced, else_.options);
  if (!r->then_fn->has_gradient() || !r->else_fn->has_gradient()) return std::nullopt;
  const GraphFunction::Gradient& gt = r->then_fn->gradient();
  const GraphFunction::Gradient& ge = r->else_fn->gradient();
  r->outputs = specs_.size();
  r->then_count = gt.num_residuals;
  r->else_count = ge.num_residuals;
  const auto& then_specs = gt.forward->output_specs();
  const auto& else_specs = ge.forward->output_specs();
  // then: (outputs, its residuals, empties); else: (outputs, empties, its residuals).
  auto then_g = std::make_shared<ir::Graph>(*gt.split.forward);
  for (std::size_t k = 0; k < r->else_count; ++k)
    then_g->outputs.push_back(then_g->add_constant(empty_of(else_specs[r->outputs + k])));
  auto else_g = std::make_shared<ir::Graph>(*ge.split.forward);
  std::vector<int> else_outputs(else_g->outputs.begin(), else_g->outputs.begin() + static_cast<std::ptrdiff_t>(r->outputs));
  for (std::size_t k = 0; k < r->then_count; ++k)
    else_outputs.push_back(else_g->add_constant(empty_of(then_specs[r->outputs + k])));
  else_outputs.insert(else_outputs.end(), else_g->outputs.begin() + static_cast<std::ptrdiff_t>(r->outputs), else_g->outputs.end());
  else_g->outputs = std::move(else_outputs);
  std::vector<TensorSpec> specs = specs_;
  for (std::size_t k = 0; k < r->then_count; ++k) specs.push_back(merged_with_empty(then_specs[r->outputs + k]));
  for (std::size_t k = 0; k < r->else_count; ++k) specs.push_back(merged_with_empty(else_specs[r->outputs + k]));
  CondOp variant(SubGraph(then_g, then_.options), SubGraph(else_g, else_.options), std::move(specs));
  variant.residuals_ = std::move(r);
  return variant;
}

std::vector<Tensor> CondOp::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  const Residuals* r = residuals_.get();
  bool residual_cotangents = false;
  if (r)
    for (std::size_t o = r->outputs; o < cot.size(); ++o) residual_cotangents |= cot[o].defined();
  if (!r || residual_cotangents) {
    // No residuals, or a higher-order gradient through them: differentiate the branches
    // (with all their outputs) by running them again.
    std::vector<Tensor> filled(cot.begin(), cot.end());
    for (std::size_t o = 0; o < filled.size(); ++o)
      if (!filled[o].defined()) filled[o] = zeros_like(out[o]);
    return vjp_by_rerun(in, filled, needed);
  }
  const auto& sources = r->then_fn->gradient().split.gradient_inputs;  // the same for both branches
  std::vector<bool> mask(sources.size());
  bool any = false;
  for (std::size_t k = 0; k < mask.size(); ++k) any |= mask[k] = needed[1 + sources[k]];
  std::vector<Tensor> grads(in.size());
  if (!any) return grads;
  auto branch = [&](const std::shared_ptr<const GraphFunction>& fn, std::size_t offset, std::size_t count) {
    return [&, fn, offset, count]() -> std::vector<Tensor> {
      const detail::GradientSplit& split = fn->gradient().split;
      std::vector<Tensor> args;
      for (std::size_t p : split.forward_inputs) args.push_back(in[1 + p]);
      for (std::size_t k = 0; k < count; ++k) args.push_back(out[offset + k]);
      for (std::size_t o : split.cotangent_outputs) args.push_back(cot[o].defined() ? cot[o] : zeros_like(out[o]));
      return detail::call_graph(fn->backward_for(mask), args);
    };
  };
  std::vector<Tensor> g = cond(in[0], branch(r->then_fn, r->outputs, r->then_count),
                               branch(r->else_fn, r->outputs + r->then_count, r->else_count));
  std::size_t j = 0;
  for (std::size_t k = 0; k < mask.size(); ++k)
    if (mask[k]) grads[1 + sources[k]] = g[j++];
  return grads;
}

std::vector<Tensor> CondOp::vjp_by_rerun(std::span<const Tensor> in, std::span<const Tensor> cot,
                                         const std::vector<bool>& needed) const {
  std::vector<Tensor> captures(in.begin() + 1, in.end());
  std::vector<Tensor> cots(cot.begin(), cot.end());
  std::vector<bool> want(needed.begin() + 1, needed.end());
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (want[i]) which.push_back(i);
  std::vector<Tensor> grads(in.size());
  if (which.empty()) return grads;
  // Both branches return a gradient for every wanted capture (zeros where unconnected), so
  // their outputs agree; only the taken branch runs.
  auto branch = [&](const SubGraph& g) {
    return [&]() -> std::vector<Tensor> {
      std::vector<Tensor> all = detail::graph_vjp(*g.traced, captures, cots, want);
      std::vector<Tensor> out;
      for (std::size_t i : which) out.push_back(all[i]);
      return out;
    };
  };
  std::vector<Tensor> r = cond(in[0], branch(then_), branch(else_));
  for (std::size_t k = 0; k < which.size(); ++k) grads[which[k] + 1] = r[k];
  return grads;
}

std::string WhileOp::attrs() const {
  return (max_iterations_ >= 0 ? "maximum_iterations=" + std::to_string(max_iterations_) + " " : std::string()) +
         "cond=" + ir::to_text(*cond_.graph) + "\n      body=" + ir::to_text(*body_.graph);
}

std::vector<TensorSpec> WhileOp::infer(std::span<const Tensor> in) const {
  std::vector<TensorSpec> specs;
  for (std::size_t i = 0; i < n_vars_; ++i) {
    specs.push_back(in[i].spec());
    if (!invariants_.empty() && invariants_[i]) specs.back().shape = *invariants_[i];  // may change in the loop
  }
  if (residuals_) append_residual_specs(specs);
  return specs;
}

void WhileOp::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  run_loop(in, out, residuals_.get());
}

namespace {

void check_predicate(const Tensor& pred, const char* op) {
  if (!pred.defined()) fail(op, "the predicate is undefined");
  if (pred.dtype() != DType::bool_ || !(pred.shape().is_static() && pred.num_elements() == 1))
    fail(kWrongType, op, "the predicate must be a bool scalar, got " + pred.spec().str());
}

std::vector<Tensor> trace_branch(trace::TraceContext& ctx, const detail::Branch& fn) {
  detail::SuspendTapes hide_tapes;  // the cond node is what a tape records
  ctx.set_lift_variable_reads(true);
  trace::TraceScope scope(ctx);
  std::vector<Tensor> out = fn();
  ctx.set_outputs(out);
  return out;
}

}  // namespace

namespace detail {

std::vector<Tensor> cond_impl(const Tensor& pred, const Branch& then_fn, const Branch& else_fn) {
  check_predicate(pred, "cond");
  trace::TraceContext* outer = trace::current();
  if (!pred.is_symbolic()) return pred.data<bool>()[0] ? then_fn() : else_fn();
  if (!outer) fail("cond", "got a symbolic predicate outside of its trace");

  detail::NestedTrace nested("cond");
  trace::TraceContext then_ctx(outer->function_name(), outer->allow_variable_creation(), outer);
  trace::TraceContext else_ctx(outer->function_name(), outer->allow_variable_creation(), outer);
  std::vector<Tensor> then_out = trace_branch(then_ctx, then_fn);
  std::vector<Tensor> else_out = trace_branch(else_ctx, else_fn);
  // Variables the branches read became captures: tapes outside watch them as reads.
  for (trace::TraceContext* ctx : {&then_ctx, &else_ctx})
    for (const auto& [var, t] : ctx->outer_variable_reads()) detail::note_variable_read(var, t);

  auto specs_of = [](const std::vector<Tensor>& v) {
    std::vector<TensorSpec> s;
    for (const auto& t : v) s.push_back(t.spec());
    return s;
  };
  std::vector<TensorSpec> ts = specs_of(then_out), es = specs_of(else_out);
  bool agree = ts.size() == es.size();
  std::vector<TensorSpec> merged = ts;
  for (std::size_t i = 0; agree && i < ts.size(); ++i) {
    agree = ts[i].dtype == es[i].dtype && ts[i].shape.rank() == es[i].shape.rank();
    for (int d = 0; agree && d < ts[i].shape.rank(); ++d) {
      std::int64_t a = ts[i].shape[d], b = es[i].shape[d];
      if (a != b && a != kDynamic && b != kDynamic) agree = false;
      else if (a != b) merged[i].shape[d] = kDynamic;
    }
  }
  if (!agree)
    fail("cond", "the branches' outputs disagree: then_fn returns " + specs_str(ts) + ", else_fn returns " + specs_str(es));

  // Both branch graphs take the union of what either lifted from the enclosing trace.
  std::vector<Tensor> captures = then_ctx.lifted();
  for (const auto& t : else_ctx.lifted())
    if (std::none_of(captures.begin(), captures.end(), [&](const Tensor& c) { return c.same_as(t); })) captures.push_back(t);
  for (trace::TraceContext* ctx : {&then_ctx, &else_ctx}) {
    ir::Graph& g = *ctx->graph();
    std::vector<int> order;
    for (const auto& c : captures) {
      const auto& lifted = ctx->lifted();
      auto it = std::find_if(lifted.begin(), lifted.end(), [&](const Tensor& l) { return l.same_as(c); });
      order.push_back(it != lifted.end() ? g.inputs[static_cast<std::size_t>(it - lifted.begin())] : g.add_input(c.spec()));
    }
    reorder_inputs(g, std::move(order));
  }
  std::vector<Tensor> inputs{pred};
  inputs.insert(inputs.end(), captures.begin(), captures.end());
  const passes::PassOptions& pass_options = detail::tracing_pass_options();
  CondOp op(SubGraph(then_ctx.graph(), pass_options), SubGraph(else_ctx.graph(), pass_options), merged);
  // Under a tape, the variant that keeps the forward values the gradient needs.
  std::optional<CondOp> variant = detail::tapes_recording() ? op.with_residuals() : std::nullopt;
  std::vector<Tensor> out = dispatch(variant ? *variant : op, inputs);
  out.resize(merged.size());
  return out;
}

}  // namespace detail

namespace {
// Dims agree where both are known (kDynamic in either is a wildcard).
bool shapes_agree(const Shape& a, const Shape& b) {
  if (a.rank() != b.rank()) return false;
  for (int d = 0; d < a.rank(); ++d)
    if (a[d] != kDynamic && b[d] != kDynamic && a[d] != b[d]) return false;
  return true;
}
}  // namespace

std::vector<Tensor> while_loop(const LoopCond& cond_fn, const LoopBody& body_fn, std::vector<Tensor> vars,
                               std::optional<std::int64_t> maximum_iterations,
                               const std::vector<std::optional<Shape>>& shape_invariants) {
  for (const auto& v : vars)
    if (!v.defined()) fail("while_loop", "a loop variable is undefined");
  if (maximum_iterations && *maximum_iterations < 0)
    fail("while_loop", "maximum_iterations must be >= 0, got " + std::to_string(*maximum_iterations));
  if (!cond_fn || !body_fn) fail("while_loop", std::string("the ") + (cond_fn ? "body" : "condition") + " is empty (a default std::function)");
  if (!shape_invariants.empty() && shape_invariants.size() != vars.size())
    fail("while_loop", "shape_invariants has " + std::to_string(shape_invariants.size()) + " entries for " +
                           std::to_string(vars.size()) + " loop variables");
  auto invariant = [&](std::size_t i) -> const std::optional<Shape>& {
    static const std::optional<Shape> none;
    return shape_invariants.empty() ? none : shape_invariants[i];
  };
  for (std::size_t i = 0; i < vars.size(); ++i)
    if (invariant(i) && !shapes_agree(*invariant(i), vars[i].shape()))
      fail("while_loop", "the shape invariant " + invariant(i)->str() + " of loop variable " + std::to_string(i) +
                             " does not fit its initial value " + vars[i].spec().str());
  auto check_body = [&](const std::vector<Tensor>& before, const std::vector<Tensor>& after) {
    bool ok = before.size() == after.size();
    for (std::size_t i = 0; ok && i < before.size(); ++i)
      ok = after[i].defined() && after[i].dtype() == before[i].dtype() &&
           (invariant(i) ? shapes_agree(*invariant(i), after[i].shape()) : after[i].shape() == before[i].shape());
    if (!ok) {
      std::vector<TensorSpec> b, a;
      for (const auto& t : before) b.push_back(t.spec());
      for (const auto& t : after) a.push_back(t.defined() ? t.spec() : TensorSpec{});
      fail("while_loop", "the body must keep the loop variables' dtypes and shapes: got " + specs_str(a) +
                             " for loop variables " + specs_str(b));
    }
  };
  trace::TraceContext* outer = trace::current();
  if (!outer) {
    for (std::int64_t i = 0; !maximum_iterations || i < *maximum_iterations; ++i) {
      Tensor c = cond_fn(vars);
      check_predicate(c, "while_loop");
      if (!c.data<bool>()[0]) return vars;
      std::vector<Tensor> next = body_fn(vars);
      check_body(vars, next);
      vars = std::move(next);
    }
    return vars;  // maximum_iterations reached
  }
  // Inside a trace the loop becomes one node with a cond and a body sub-graph.
  detail::NestedTrace nested("while_loop");
  trace::TraceContext cond_ctx(outer->function_name(), outer->allow_variable_creation(), outer);
  trace::TraceContext body_ctx(outer->function_name(), outer->allow_variable_creation(), outer);
  auto placeholders = [&](trace::TraceContext& ctx) {
    std::vector<Tensor> p;
    for (std::size_t i = 0; i < vars.size(); ++i) {
      TensorSpec spec = vars[i].spec();
      if (invariant(i)) spec.shape = *invariant(i);
      p.push_back(ctx.add_input(spec));
    }
    return p;
  };
  {
    detail::SuspendTapes hide_tapes;  // the while node is what a tape records
    trace::TraceScope scope(cond_ctx);
    Tensor c = cond_fn(placeholders(cond_ctx));
    check_predicate(c, "while_loop");
    cond_ctx.set_outputs({c});
  }
  {
    detail::SuspendTapes hide_tapes;
    trace::TraceScope scope(body_ctx);
    std::vector<Tensor> in = placeholders(body_ctx);
    std::vector<Tensor> out = body_fn(in);
    check_body(in, out);
    body_ctx.set_outputs(out);
  }
  std::vector<Tensor> inputs = vars;
  inputs.insert(inputs.end(), cond_ctx.lifted().begin(), cond_ctx.lifted().end());
  inputs.insert(inputs.end(), body_ctx.lifted().begin(), body_ctx.lifted().end());
  const passes::PassOptions& pass_options = detail::tracing_pass_options();
  bool any_invariant = false;
  for (const auto& s : shape_invariants) any_invariant |= s.has_value();
  WhileOp op(SubGraph(cond_ctx.graph(), pass_options), SubGraph(body_ctx.graph(), pass_options), vars.size(),
             cond_ctx.lifted().size(), maximum_iterations.value_or(-1),
             any_invariant ? shape_invariants : std::vector<std::optional<Shape>>{});
  // Under a tape, the variant that keeps what each iteration's gradient needs (none when a
  // loop variable changes shape: its iterations' values cannot be stacked).
  std::optional<WhileOp> variant =
      detail::tapes_recording() && !any_invariant ? op.with_residuals() : std::nullopt;
  std::vector<Tensor> out = dispatch(variant ? *variant : op, inputs);
  out.resize(vars.size());
  return out;
}

namespace {
// vmap runs a cond or a loop once per example: each example may take its own branch or its own
// number of steps.
const bool control_flow_rules_registered =
    register_op_rules<CondOp>({.runs_per_example = true, .onnx_unsupported = "ONNX export of ef::cond is not implemented"}) &&
    register_op_rules<WhileOp>({.runs_per_example = true, .onnx_unsupported = "ONNX export of ef::while_loop is not implemented"});
}  // namespace

}  // namespace ef
