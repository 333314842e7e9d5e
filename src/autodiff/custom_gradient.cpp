// ef::custom_gradient and ef::custom_vjp: the forward pass runs as ordinary ops (tapes and the
// trace see them, so the residuals can be differentiated for a second order), then one
// CustomGradientOp node carries the rule. See autodiff/custom_gradient_op.h.
#include "eagerflow/autodiff/custom_gradient.h"

#include "autodiff/custom_gradient_op.h"
#include "eagerflow/function/function.h"
#include "eagerflow/trace/context.h"
#include "exec/interpret.h"
#include "ops/interpreters.h"

namespace ef {

namespace detail {
namespace {
thread_local const std::vector<Variable>* current_variables = nullptr;
}  // namespace

CustomVariablesScope::CustomVariablesScope(const std::vector<Variable>& variables) : previous_(current_variables) {
  current_variables = &variables;
}
CustomVariablesScope::~CustomVariablesScope() { current_variables = previous_; }
}  // namespace detail

const std::vector<Variable>& custom_variables() {
  static const std::vector<Variable> none;
  return detail::current_variables ? *detail::current_variables : none;
}

namespace {

// Sits on top of this thread's tapes while a forward pass runs, to learn which trainable
// variables it reads: their gradients come from the rule too (TF's `variables=`).
class VariableReads : public detail::TapeHook {
 public:
  VariableReads() { detail::link_tape(this); }
  ~VariableReads() override { detail::unlink_tape(this); }
  VariableReads(const VariableReads&) = delete;
  VariableReads& operator=(const VariableReads&) = delete;
  void record(const Primitive&, std::span<const Tensor>, std::span<const Tensor>) override {}
  void variable_read(const std::shared_ptr<VariableState>& var, const Tensor& value) override {
    if (!var->trainable) return;
    for (const auto& [v, t] : reads)
      if (v.state_ptr() == var) return;
    reads.emplace_back(Variable::from_state(var), value);
  }
  std::vector<std::pair<Variable, Tensor>> reads;
};

// A rule is needed when something may differentiate: a tape records, or a trace records a
// graph that may be differentiated later (by a tape inside it, or from its nodes).
bool needs_rule() { return !detail::in_kernel() && (trace::current() || detail::tapes_recording()); }

void check_inputs(const std::string& tag, const std::string& name, const std::vector<Tensor>& inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined()) fail(tag, "'" + name + "': input " + std::to_string(i) + " is undefined");
}

void check_forward(const std::string& tag, const std::string& name, const VjpForward& f) {
  if (f.outputs.empty()) fail(tag, "'" + name + "' returned no outputs");
  for (std::size_t i = 0; i < f.outputs.size(); ++i)
    if (!f.outputs[i].defined()) fail(tag, "'" + name + "': output " + std::to_string(i) + " is undefined");
  for (std::size_t i = 0; i < f.residuals.size(); ++i)
    if (!f.residuals[i].defined()) fail(tag, "'" + name + "': residual " + std::to_string(i) + " is undefined");
}

using MakeBwd = std::function<VjpBwdFn(const std::vector<Variable>& variables, VjpForward& forward)>;

// Runs the forward pass and records the node that holds the rule.
std::vector<Tensor> call_with_rule(const std::string& tag, const std::string& name, const std::vector<Tensor>& args,
                                   const VjpFwdFn& fwd, const MakeBwd& make_bwd) {
  VjpForward f;
  std::vector<std::pair<Variable, Tensor>> reads;
  {
    VariableReads watch;
    f = fwd(args);
    reads = std::move(watch.reads);
  }
  check_forward(tag, name, f);
  auto rule = std::make_shared<CustomRule>();
  rule->function = name;
  rule->num_args = args.size();
  for (const auto& [v, t] : reads) rule->variables.push_back(v);
  rule->bwd = make_bwd(rule->variables, f);
  std::vector<Tensor> inputs = args;
  for (const auto& [v, t] : reads) inputs.push_back(t);
  std::size_t num_inputs = inputs.size();
  inputs.insert(inputs.end(), f.outputs.begin(), f.outputs.end());
  inputs.insert(inputs.end(), f.residuals.begin(), f.residuals.end());
  return dispatch(CustomGradientOp(name, num_inputs, f.outputs.size(), f.residuals.size(), std::move(rule)), inputs);
}

// Inside a trace a TF-style gradient function closes over symbolic values of that trace,
// which mean nothing once the trace is over (a graph differentiated later from its nodes, a
// replay). So it is traced now, into a graph of the cotangents whose captures (the values it
// closes over) become the residuals: closure conversion.
VjpBwdFn trace_gradient(const std::string& name, const GradFn& grad, const std::vector<Variable>& variables,
                        VjpForward& f) {
  // A gradient function that calls its own function again would trace rules forever: the
  // nesting limit turns that into an error naming the chain.
  detail::NestedTrace nested(name + "/grad");
  trace::TraceContext& outer = *trace::current();
  trace::TraceContext ctx(outer.function_name() + "/" + name + "/grad", /*allow_variable_creation=*/false, &outer);
  ctx.set_lift_variable_reads(true);
  std::vector<Tensor> grads;
  {
    detail::SuspendTapes hide_tapes;  // the node's rule is what a tape records
    trace::TraceScope scope(ctx);
    std::vector<Tensor> cots;
    for (const auto& o : f.outputs) cots.push_back(ctx.add_input(o.spec()));
    detail::CustomVariablesScope in_grad(variables);
    grads = grad(cots);
  }
  std::vector<bool> defined;
  std::vector<Tensor> outs;
  for (const auto& g : grads) {
    defined.push_back(g.defined());
    if (g.defined()) outs.push_back(g);
  }
  ctx.set_outputs(outs);
  for (const auto& [var, t] : ctx.outer_variable_reads()) detail::note_variable_read(var, t);
  f.residuals = ctx.lifted();
  return [graph = ctx.graph(), defined](const std::vector<Tensor>& residuals, const std::vector<Tensor>& cots) {
    std::vector<Tensor> in = cots;
    in.insert(in.end(), residuals.begin(), residuals.end());
    std::vector<Tensor> outs = exec::interpret(*graph, in);
    std::vector<Tensor> result;
    std::size_t k = 0;
    for (bool d : defined) result.push_back(d ? outs[k++] : Tensor());
    return result;
  };
}

}  // namespace

std::vector<Tensor> call_with_custom_gradient(const std::string& name, const CustomGradientBody& body,
                                              const std::vector<Tensor>& inputs) {
  const std::string tag = "custom_gradient";
  if (!body) fail(tag, "'" + name + "': the function is empty (a default std::function)");
  check_inputs(tag, name, inputs);
  if (!needs_rule()) {
    OutputsAndGrad r = body(inputs);
    check_forward(tag, name, VjpForward{r.outputs, {}});
    return r.outputs;
  }
  GradFn grad;
  VjpFwdFn fwd = [&](const std::vector<Tensor>& xs) {
    OutputsAndGrad r = body(xs);
    grad = std::move(r.grad);
    return VjpForward{std::move(r.outputs), {}};
  };
  MakeBwd make_bwd = [&](const std::vector<Variable>& variables, VjpForward& f) -> VjpBwdFn {
    if (!grad) fail(tag, "'" + name + "' returned no gradient function (an empty std::function)");
    if (trace::current()) return trace_gradient(name, grad, variables, f);
    return [grad](const std::vector<Tensor>&, const std::vector<Tensor>& cots) { return grad(cots); };
  };
  return call_with_rule(tag, name, inputs, fwd, make_bwd);
}

CustomVjp::CustomVjp(std::string name, VjpPrimalFn primal) : name_(std::move(name)), primal_(std::move(primal)) {
  if (!primal_) fail("custom_vjp", "'" + name_ + "': the primal function is empty (a default std::function)");
}

CustomVjp& CustomVjp::defvjp(VjpFwdFn fwd, VjpBwdFn bwd) {
  if (!fwd || !bwd) fail("custom_vjp", "'" + name_ + "': defvjp got an empty " + (fwd ? "bwd" : "fwd") + " function");
  fwd_ = std::move(fwd);
  bwd_ = std::make_shared<const VjpBwdFn>(std::move(bwd));
  return *this;
}

std::vector<Tensor> CustomVjp::operator()(const std::vector<Tensor>& inputs) const {
  const std::string tag = "custom_vjp";
  if (!fwd_) fail(ErrorCode::failed_precondition, tag, "'" + name_ + "': call defvjp(fwd, bwd) before calling it");
  check_inputs(tag, name_, inputs);
  if (!needs_rule()) {
    std::vector<Tensor> out = primal_(inputs);
    check_forward(tag, name_, VjpForward{out, {}});
    return out;
  }
  MakeBwd make_bwd = [bwd = bwd_](const std::vector<Variable>&, VjpForward&) -> VjpBwdFn {
    return [bwd](const std::vector<Tensor>& res, const std::vector<Tensor>& cots) { return (*bwd)(res, cots); };
  };
  return call_with_rule(tag, name_, inputs, fwd_, make_bwd);
}

Tensor CustomVjp::operator()(const Tensor& x) const {
  std::vector<Tensor> out = (*this)(std::vector<Tensor>{x});
  if (out.size() != 1)
    fail("custom_vjp", "'" + name_ + "' returns " + std::to_string(out.size()) + " outputs; call it with a vector of inputs");
  return out[0];
}

}  // namespace ef
