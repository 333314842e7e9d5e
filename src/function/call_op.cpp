#include "function/call_op.h"

#include "eagerflow/ops/ops.h"
#include "eagerflow/passes/passes.h"
#include "function/control_flow_ops.h"
#include "ops/interpreters.h"
#include "eagerflow/ops/op_rules.h"

namespace ef {
namespace {

std::string specs_str(const std::vector<TensorSpec>& specs) {
  std::string s;
  for (const auto& spec : specs) s += (s.empty() ? "" : ", ") + spec.str();
  return s;
}

}  // namespace

GraphFunction::GraphFunction(std::shared_ptr<const ir::Graph> traced, const passes::PassOptions& options)
    : traced_(std::move(traced)), plan_(passes::optimize(*traced_, options)), options_(options) {
  for (int v : traced_->inputs) input_specs_.push_back(traced_->values[static_cast<std::size_t>(v)].spec);
  for (int v : traced_->outputs) output_specs_.push_back(traced_->values[static_cast<std::size_t>(v)].spec);
  for (const auto& n : plan_.graph().nodes) {
    has_effect_ |= n.op->has_effect();
    is_stateful_ |= n.op->is_stateful();
  }
}

const GraphFunction::Gradient& GraphFunction::gradient() const {
  std::call_once(gradient_once_, [this] {
    detail::OutsideKernel outside;
    detail::TracingPassOptions pass_scope(options_);  // for the sub-graphs the backward pass traces
    try {
      auto g = std::make_unique<Gradient>();
      g->split = detail::split_for_gradient(*traced_);
      g->forward = std::make_shared<const GraphFunction>(g->split.forward, options_);
      g->num_residuals = g->split.num_residuals;
      g->backward = std::make_shared<const GraphFunction>(g->split.backward, options_);
      gradient_ = std::move(g);
    } catch (const Error& e) {
      gradient_error_ = e.what();
      gradient_error_kind_ = e.kind();
    }
  });
  if (!gradient_) throw Error(gradient_error_kind_, gradient_error_);
  return *gradient_;
}

bool GraphFunction::has_gradient() const {
  try {
    gradient();
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::shared_ptr<const GraphFunction> GraphFunction::backward_for(const std::vector<bool>& needed) const {
  const Gradient& g = gradient();
  bool all = true;
  for (bool n : needed) all &= n;
  if (all) return g.backward;
  std::lock_guard lock(backward_mutex_);
  auto& slot = backward_for_[needed];
  if (!slot) {
    // The same backward graph with fewer outputs: dead-code elimination drops what only the
    // other gradients needed (the input gradient of a first layer, say).
    auto pruned = std::make_shared<ir::Graph>(*g.split.backward);
    pruned->outputs.clear();
    for (std::size_t k = 0; k < needed.size(); ++k)
      if (needed[k]) pruned->outputs.push_back(g.split.backward->outputs[k]);
    slot = std::make_shared<const GraphFunction>(std::move(pruned), options_);
  }
  return slot;
}

std::vector<SubGraphRef> CallOp::subgraphs() const {
  const GraphFunction& run = with_residuals_ ? *fn_->gradient().forward : *fn_;
  return {{"function '" + fn_->name() + "' (traced)", &run.traced()},
          {"function '" + fn_->name() + "' (optimized)", &run.optimized()}};
}

std::string CallOp::attrs() const {
  return "f=" + fn_->name() + (with_residuals_ ? " residuals=" + std::to_string(fn_->gradient().num_residuals) : "");
}

std::vector<TensorSpec> CallOp::infer(std::span<const Tensor> in) const {
  const auto& wanted = fn_->input_specs();
  bool ok = in.size() == wanted.size();
  for (std::size_t i = 0; ok && i < in.size(); ++i) ok = in[i].defined() && detail::specs_compatible(in[i].spec(), wanted[i]);
  if (!ok)
    fail("call", "function '" + fn_->name() + "' takes (" + specs_str(wanted) + "), got (" + describe(in) + ")");
  if (!with_residuals_) return fn_->output_specs();
  return fn_->gradient().forward->output_specs();
}

void CallOp::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  const auto& wanted = fn_->input_specs();
  for (std::size_t i = 0; i < in.size(); ++i)
    if (!wanted[i].shape.accepts(in[i].shape()))
      fail("call", "function '" + fn_->name() + "' input " + std::to_string(i) + ": " + in[i].spec().str() +
                       " does not match " + wanted[i].str());
  const GraphFunction& run = with_residuals_ ? *fn_->gradient().forward : *fn_;
  run.run(in, out);
  // A graph may hand an input straight back. The call's result must still be a value of its
  // own: a tape takes an op that returns its input for the identity and records nothing.
  for (Tensor& o : out)
    for (const Tensor& i : in)
      if (o.same_as(i)) o = o.clone();
}

std::vector<Tensor> CallOp::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  const GraphFunction::Gradient& g = fn_->gradient();
  const detail::GradientSplit& split = g.split;
  std::size_t n_out = fn_->output_specs().size();
  bool residual_cotangents = false;
  for (std::size_t o = n_out; o < cot.size(); ++o) residual_cotangents |= cot[o].defined();
  if (residual_cotangents) {
    // A higher-order gradient reaches the residuals through the backward call: differentiate
    // the forward graph with all its outputs (its own residuals are computed again).
    std::vector<Tensor> filled(cot.begin(), cot.end());
    for (std::size_t o = 0; o < filled.size(); ++o)
      if (!filled[o].defined()) filled[o] = zeros_like(out[o]);
    return CallOp(g.forward, false).vjp(in, out, filled, needed);
  }
  // A call recorded without its residuals (replayed op by op under a tape): compute them.
  std::vector<Tensor> with_residuals;
  if (!with_residuals_) {
    with_residuals = dispatch(CallOp(fn_, true), in);
    out = with_residuals;
  }
  std::vector<bool> mask(split.gradient_inputs.size());
  bool any = false;
  for (std::size_t k = 0; k < mask.size(); ++k) any |= mask[k] = needed[split.gradient_inputs[k]];
  std::vector<Tensor> grads(in.size());
  if (!any) return grads;
  std::vector<Tensor> args;
  for (std::size_t p : split.forward_inputs) args.push_back(in[p]);
  for (std::size_t r = 0; r < g.num_residuals; ++r) args.push_back(out[n_out + r]);
  for (std::size_t o : split.cotangent_outputs) args.push_back(cot[o].defined() ? cot[o] : zeros_like(out[o]));
  std::vector<Tensor> result = detail::call_graph(fn_->backward_for(mask), args);
  std::size_t j = 0;
  for (std::size_t k = 0; k < mask.size(); ++k)
    if (mask[k]) grads[split.gradient_inputs[k]] = result[j++];
  return grads;
}

namespace detail {

bool specs_compatible(const TensorSpec& given, const TensorSpec& wanted) {
  if (given.dtype != wanted.dtype || given.shape.rank() != wanted.shape.rank()) return false;
  for (int d = 0; d < given.shape.rank(); ++d)
    if (given.shape[d] != wanted.shape[d] && given.shape[d] != kDynamic && wanted.shape[d] != kDynamic) return false;
  return true;
}

std::vector<Tensor> call_graph(const std::shared_ptr<const GraphFunction>& fn, std::span<const Tensor> inputs) {
  bool residuals = tapes_recording() && fn->has_gradient();
  std::vector<Tensor> outs = dispatch(CallOp(fn, residuals), inputs);
  outs.resize(fn->output_specs().size());
  return outs;
}

}  // namespace detail
namespace {
const bool call_rules_registered = register_op_rules<CallOp>({
    .runs_per_example = true,
    .onnx_unsupported = "calls are inlined before export; a call left is a bug to report",
});
}  // namespace

}  // namespace ef
