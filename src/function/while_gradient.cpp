// ef::while_loop's gradient from saved forward values. Under a tape the loop records its
// variant that, at each iteration, runs the body's forward graph with residuals (the body's
// gradient split, src/autodiff/gradient_split.h) and keeps them; after the loop they are
// stacked over the iterations. The gradient is one while_grad node: a loop from the last
// iteration to the first that runs the body's backward graph on that iteration's values. No
// iteration runs twice, and a random draw in the body is differentiated at its own draw.
#include <algorithm>

#include "eagerflow/ops/ops.h"
#include "function/call_op.h"
#include "function/control_flow_ops.h"
#include "function/scan_op.h"
#include "eagerflow/ops/op_rules.h"

namespace ef {

struct WhileOp::Residuals {
  std::shared_ptr<const GraphFunction> body;  // the body as traced, with its split
  // Body inputs the backward graph reads that are loop variables: kept per iteration.
  std::vector<std::size_t> saved_vars;
  // The spec of one iteration's value of each kept tensor: the residuals, then saved_vars.
  std::vector<TensorSpec> rows;
};

namespace {

TensorSpec stacked(const TensorSpec& spec) {
  std::vector<std::int64_t> dims{kDynamic};
  for (int d = 0; d < spec.shape.rank(); ++d) dims.push_back(spec.shape[d]);
  return TensorSpec{spec.dtype, Shape(dims), {}};
}

// The per-iteration values as one tensor [iterations, ...]; no iterations: an empty one.
Tensor stack_or_empty(const std::vector<Tensor>& per_iteration, const TensorSpec& spec) {
  if (!per_iteration.empty()) return stack(per_iteration, 0);
  std::vector<std::int64_t> dims{0};
  for (int d = 0; d < spec.shape.rank(); ++d) dims.push_back(spec.shape[d] == kDynamic ? 0 : spec.shape[d]);
  return zeros(Shape(dims), spec.dtype);
}

Tensor row(const Tensor& stacked_values, std::int64_t i) {
  const Shape& s = stacked_values.shape();
  std::vector<std::int64_t> begin(static_cast<std::size_t>(s.rank()), 0), end;
  for (int d = 0; d < s.rank(); ++d) end.push_back(s[d]);
  begin[0] = i;
  end[0] = i + 1;
  std::vector<std::int64_t> dims;
  for (int d = 1; d < s.rank(); ++d) dims.push_back(s[d]);
  return reshape(slice(stacked_values, begin, end), Shape(dims));
}

// Inputs: the iteration count, the stacked residuals, the stacked loop variables the
// backward graph reads, the body's captures, then the cotangents of the floating loop
// variables. Outputs: the gradients of the floating loop variables, then of the floating
// body captures.
class WhileGrad : public PrimitiveBase<WhileGrad> {
 public:
  WhileGrad(std::shared_ptr<const GraphFunction> body, std::vector<std::size_t> saved_vars, std::size_t n_vars,
            std::size_t n_caps)
      : body_(std::move(body)), saved_vars_(std::move(saved_vars)), n_vars_(n_vars), n_caps_(n_caps) {}
  const char* name() const override { return "while_grad"; }
  bool takes_bfloat16() const override { return true; }
  std::string attrs() const override { return "body=" + body_->name(); }
  std::vector<SubGraphRef> subgraphs() const override {
    const GraphFunction& backward = *body_->gradient().backward;
    return {{"backward body (traced)", &backward.traced()}, {"backward body (optimized)", &backward.optimized()}};
  }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    std::vector<TensorSpec> specs;
    const auto& body_inputs = body_->input_specs();
    for (std::size_t p = 0; p < n_vars_ + n_caps_; ++p)
      if (is_inexact(body_inputs[p].dtype)) specs.push_back(p < n_vars_ ? body_inputs[p] : in[caps_at() + p - n_vars_].spec());
    return specs;
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    const GraphFunction::Gradient& g = body_->gradient();
    const detail::GradientSplit& split = g.split;
    std::int64_t n = in[0].item<std::int64_t>();
    std::span<const Tensor> residuals = in.subspan(1, g.num_residuals);
    std::span<const Tensor> saved = in.subspan(1 + g.num_residuals, saved_vars_.size());
    std::span<const Tensor> caps = in.subspan(caps_at(), n_caps_);
    std::span<const Tensor> cots = in.subspan(caps_at() + n_caps_);
    std::vector<Tensor> g_vars(n_vars_), g_caps(n_caps_);
    std::size_t c = 0;
    for (std::size_t o : split.cotangent_outputs) g_vars[o] = cots[c++];
    for (std::size_t k = 0; k < n_caps_; ++k)
      if (is_inexact(caps[k].dtype())) g_caps[k] = zeros_like(caps[k]);
    std::vector<Tensor> args, outs(body_->gradient().backward->output_specs().size());
    for (std::int64_t i = n - 1; i >= 0; --i) {
      args.clear();
      for (std::size_t p : split.forward_inputs) {
        if (p >= n_vars_) {
          args.push_back(caps[p - n_vars_]);
        } else {
          std::size_t s = static_cast<std::size_t>(std::find(saved_vars_.begin(), saved_vars_.end(), p) - saved_vars_.begin());
          args.push_back(row(saved[s], i));
        }
      }
      for (const Tensor& r : residuals) args.push_back(row(r, i));
      for (std::size_t o : split.cotangent_outputs) args.push_back(g_vars[o]);
      g.backward->run(args, outs);
      for (std::size_t k = 0; k < split.gradient_inputs.size(); ++k) {
        std::size_t p = split.gradient_inputs[k];
        if (p < n_vars_) g_vars[p] = outs[k];
        else g_caps[p - n_vars_] = add(g_caps[p - n_vars_], outs[k]);
      }
    }
    std::size_t j = 0;
    for (std::size_t p = 0; p < n_vars_; ++p)
      if (is_inexact(body_->input_specs()[p].dtype)) out[j++] = g_vars[p];
    for (std::size_t k = 0; k < n_caps_; ++k)
      if (is_inexact(body_->input_specs()[n_vars_ + k].dtype)) out[j++] = g_caps[k];
  }
  std::vector<Tensor> vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor>,
                          const std::vector<bool>&) const override {
    fail(ErrorCode::unimplemented, "gradient",
         "second-order gradients through ef::while_loop '" + body_->name() + "' are not supported yet");
  }

 private:
  std::size_t caps_at() const { return 1 + body_->gradient().num_residuals + saved_vars_.size(); }
  std::shared_ptr<const GraphFunction> body_;
  std::vector<std::size_t> saved_vars_;
  std::size_t n_vars_, n_caps_;
};

}  // namespace

std::optional<WhileOp> WhileOp::with_residuals() const {
  if (residuals_) return *this;
  if (!invariants_.empty()) return std::nullopt;  // iterations of changing shapes cannot be stacked
  auto r = std::make_shared<Residuals>();
  r->body = std::make_shared<const GraphFunction>(body_.traced, body_.options);
  if (!r->body->has_gradient()) return std::nullopt;
  const GraphFunction& forward = *r->body->gradient().forward;
  for (std::size_t k = 0; k < r->body->gradient().num_residuals; ++k) r->rows.push_back(forward.output_specs()[n_vars_ + k]);
  for (std::size_t p : r->body->gradient().split.forward_inputs)
    if (p < n_vars_) {
      r->saved_vars.push_back(p);
      r->rows.push_back(forward.input_specs()[p]);
    }
  WhileOp variant = *this;
  variant.residuals_ = std::move(r);
  return variant;
}

void WhileOp::append_residual_specs(std::vector<TensorSpec>& specs) const {
  specs.push_back(TensorSpec{DType::int64, Shape{}, {}});
  for (const TensorSpec& row_spec : residuals_->rows) specs.push_back(stacked(row_spec));
}

void WhileOp::run_loop(std::span<const Tensor> in, std::span<Tensor> out, const Residuals* keep) const {
  std::vector<Tensor> cond_in(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_vars_));
  cond_in.insert(cond_in.end(), in.begin() + static_cast<std::ptrdiff_t>(n_vars_),
                 in.begin() + static_cast<std::ptrdiff_t>(n_vars_ + n_cond_caps_));
  std::vector<Tensor> body_in(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_vars_));
  body_in.insert(body_in.end(), in.begin() + static_cast<std::ptrdiff_t>(n_vars_ + n_cond_caps_), in.end());
  const GraphFunction* forward = keep ? keep->body->gradient().forward.get() : nullptr;
  std::size_t n_res = keep ? keep->body->gradient().num_residuals : 0;
  std::vector<std::vector<Tensor>> kept(n_res + (keep ? keep->saved_vars.size() : 0));
  std::vector<Tensor> next(forward ? forward->output_specs().size() : 0);
  std::int64_t i = 0;
  for (; (max_iterations_ < 0 || i < max_iterations_) && cond_.run(cond_in)[0].data<bool>()[0]; ++i) {
    if (forward) {
      for (std::size_t s = 0; s < keep->saved_vars.size(); ++s) kept[n_res + s].push_back(body_in[keep->saved_vars[s]]);
      forward->run(body_in, next);
      for (std::size_t k = 0; k < n_res; ++k) kept[k].push_back(std::move(next[n_vars_ + k]));
    } else {
      next = body_.run(body_in);
    }
    for (std::size_t v = 0; v < n_vars_; ++v) cond_in[v] = body_in[v] = std::move(next[v]);
  }
  for (std::size_t v = 0; v < n_vars_; ++v) out[v] = cond_in[v];
  if (!keep) return;
  out[n_vars_] = scalar<std::int64_t>(i);
  for (std::size_t k = 0; k < kept.size(); ++k) {
    out[n_vars_ + 1 + k] = stack_or_empty(kept[k], keep->rows[k]);
    kept[k].clear();  // the rows are not kept twice
  }
}

std::vector<Tensor> WhileOp::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                 const std::vector<bool>& needed) const {
  if (!residuals_ && has_shape_invariants())
    fail(ErrorCode::unimplemented, "gradient",
         "ef::while_loop '" + body_.graph->name + "' has shape_invariants (loop variables that change shape): eagerflow "
         "cannot differentiate such a loop");
  if (!residuals_)
    fail("gradient", "ef::while_loop '" + body_.graph->name + "' over loop variables " + describe(in.subspan(0, n_vars_)) +
                         " was recorded without the values its gradient needs (its body has no gradient)");
  const GraphFunction::Gradient& g = residuals_->body->gradient();
  std::size_t n_caps = in.size() - n_vars_ - n_cond_caps_;
  const std::size_t n_stacks = residuals_->rows.size();
  bool through_stacks = false;
  for (std::size_t o = n_vars_; o < cot.size(); ++o) through_stacks |= cot[o].defined();
  if (n_stacks > 0) {
    // The backward pass as a reverse ef::scan over the stacks (differentiable again), with
    // the loop's inputs and outputs seen as a scan's: (vars, body captures) -> (vars, stacks).
    std::vector<Tensor> s_in(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n_vars_));
    s_in.insert(s_in.end(), in.begin() + static_cast<std::ptrdiff_t>(n_vars_ + n_cond_caps_), in.end());
    std::vector<Tensor> s_out(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n_vars_));
    s_out.insert(s_out.end(), out.begin() + static_cast<std::ptrdiff_t>(n_vars_ + 1), out.end());
    std::vector<Tensor> s_cot(cot.begin(), cot.begin() + static_cast<std::ptrdiff_t>(n_vars_));
    s_cot.insert(s_cot.end(), cot.begin() + static_cast<std::ptrdiff_t>(n_vars_ + 1), cot.end());
    std::vector<bool> s_needed(needed.begin(), needed.begin() + static_cast<std::ptrdiff_t>(n_vars_));
    s_needed.insert(s_needed.end(), needed.begin() + static_cast<std::ptrdiff_t>(n_vars_ + n_cond_caps_), needed.end());
    std::vector<Tensor> s_grads;
    if (!through_stacks) {
      s_grads = ScanOp::over_kept_stacks(residuals_->body, residuals_->saved_vars, n_vars_).vjp(s_in, s_out, s_cot, s_needed);
    } else {
      // A gradient through the stacks (second order): the loop as a scan over its first
      // stack (whose length is the iteration count), whose body is the body's forward graph
      // with residuals and whose ys are the stacks; that scan's gradient runs it once more
      // (an ef::Error for a body with effects or random draws).
      auto body = std::make_shared<ir::Graph>(*g.split.forward);
      for (std::size_t p : residuals_->saved_vars) body->outputs.push_back(body->inputs[p]);
      int row = body->add_input(residuals_->rows[0]);
      body->inputs.pop_back();
      body->inputs.insert(body->inputs.begin() + static_cast<std::ptrdiff_t>(n_vars_), row);
      for (std::size_t i = 0; i < body->inputs.size(); ++i)
        body->values[static_cast<std::size_t>(body->inputs[i])].index = static_cast<int>(i);
      ScanOp loop(SubGraph(body, body_.options), n_vars_, 1, -1, false);
      s_in.insert(s_in.begin() + static_cast<std::ptrdiff_t>(n_vars_), out[n_vars_ + 1]);
      s_needed.insert(s_needed.begin() + static_cast<std::ptrdiff_t>(n_vars_), false);
      s_grads = loop.vjp(s_in, s_out, s_cot, s_needed);
      s_grads.erase(s_grads.begin() + static_cast<std::ptrdiff_t>(n_vars_));
    }
    std::vector<Tensor> grads(in.size());
    for (std::size_t p = 0; p < s_grads.size(); ++p) grads[p < n_vars_ ? p : p + n_cond_caps_] = s_grads[p];
    return grads;
  }
  if (through_stacks)
    fail(ErrorCode::unimplemented, "gradient",
         "second-order gradients through ef::while_loop '" + body_.graph->name + "' are not supported yet");
  std::vector<Tensor> args{out[n_vars_]};
  for (std::size_t k = 0; k < g.num_residuals + residuals_->saved_vars.size(); ++k) args.push_back(out[n_vars_ + 1 + k]);
  for (std::size_t k = 0; k < n_caps; ++k) args.push_back(in[n_vars_ + n_cond_caps_ + k]);
  for (std::size_t o : g.split.cotangent_outputs) args.push_back(cot[o].defined() ? cot[o] : zeros_like(out[o]));
  std::vector<Tensor> grads_out =
      dispatch(WhileGrad(residuals_->body, residuals_->saved_vars, n_vars_, n_caps), args);
  std::vector<Tensor> grads(in.size());
  std::size_t j = 0;
  const auto& body_inputs = residuals_->body->input_specs();
  for (std::size_t p = 0; p < n_vars_ + n_caps; ++p) {
    if (!is_inexact(body_inputs[p].dtype)) continue;
    std::size_t at = p < n_vars_ ? p : p + n_cond_caps_;
    if (needed[at]) grads[at] = grads_out[j];
    ++j;
  }
  return grads;
}

namespace {
const bool while_grad_rules_registered = register_op_rules<WhileGrad>(
    {.runs_per_example = true, .onnx_unsupported = "a gradient op: exported graphs run inference only"});
}  // namespace

}  // namespace ef
