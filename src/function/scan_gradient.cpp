// ef::scan's gradient from saved per-step values (JAX's scan transpose). Under a tape the
// scan records its variant whose body is the body's forward graph with residuals (the
// gradient split, src/autodiff/gradient_split.h): each step's residuals, and the carries the
// backward graph reads, come out as extra ys, stacked over the steps. The gradient is one more
// ef::scan, running the other way: its carries are the carries' cotangents and the captures'
// accumulated gradients, its xs the stacked residuals, saved carries, the xs the backward
// reads and the ys' cotangents, and its body is the body's backward graph inlined. No step
// runs twice, a random draw in the body is differentiated at its own draw, and since the
// backward is an ordinary scan, it has a gradient too (second order), wherever the body's
// gradient rules do.
#include <algorithm>

#include "eagerflow/function/scan.h"
#include "eagerflow/ops/ops.h"
#include "exec/interpret.h"
#include "function/call_op.h"
#include "function/scan_op.h"

namespace ef {

struct ScanOp::Residuals {
  std::shared_ptr<const GraphFunction> body;  // the body as traced, with its split
  std::size_t n_ys = 0;                       // the body's own ys
  std::vector<std::size_t> saved_carries;     // carries the backward graph reads, kept per step
};

std::optional<ScanOp> ScanOp::with_residuals() const {
  if (residuals_) return *this;
  auto r = std::make_shared<Residuals>();
  r->body = std::make_shared<const GraphFunction>(body_.traced, body_.options);
  if (!r->body->has_gradient()) return std::nullopt;
  const GraphFunction::Gradient& g = r->body->gradient();
  r->n_ys = n_ys_;
  for (std::size_t p : g.split.forward_inputs)
    if (p < n_carry_) r->saved_carries.push_back(p);
  // The forward graph returns (carries, ys, residuals); the saved carries follow as more ys.
  auto body = std::make_shared<ir::Graph>(*g.split.forward);
  for (std::size_t p : r->saved_carries) body->outputs.push_back(body->inputs[p]);
  ScanOp variant(SubGraph(body, body_.options), n_carry_, n_xs_, length_, reverse_);
  variant.residuals_ = std::move(r);
  return variant;
}

ScanOp ScanOp::over_kept_stacks(std::shared_ptr<const GraphFunction> fn, std::vector<std::size_t> saved_carries,
                                std::size_t n_carry) {
  auto r = std::make_shared<Residuals>();
  r->body = fn;
  r->n_ys = 0;
  r->saved_carries = std::move(saved_carries);
  ScanOp op(SubGraph(std::make_shared<ir::Graph>(fn->traced()), fn->options()), n_carry, 0, -1, false);
  op.residuals_ = std::move(r);
  return op;
}

std::vector<Tensor> ScanOp::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  std::size_t primary = n_carry_ + (residuals_ ? residuals_->n_ys : n_ys_);
  bool through_residuals = false;
  for (std::size_t o = primary; o < cot.size(); ++o) through_residuals |= cot[o].defined();
  if (residuals_ && !through_residuals) return reverse_scan(*this, in, out, cot, needed);
  // Recorded without residuals, or a gradient through them (second order): run the forward
  // scan once more, keeping this op's every output's residuals. A body with effects or random
  // draws cannot run twice.
  if (effects_)
    fail(ErrorCode::unimplemented, "gradient",
         std::string("ef::scan: ") +
             (residuals_ ? "a second-order gradient through a scan"
                         : "a scan recorded without the values its gradient needs") +
             " would run its body again, and the body has effects or random draws (" + body_.traced->name +
             "); take the gradient inside the same trace as the scan, with a body without random draws");
  ScanOp plain = *this;
  plain.residuals_ = nullptr;  // the residual ys become ordinary ys
  std::optional<ScanOp> variant = plain.with_residuals();
  if (!variant)
    GraphFunction(body_.traced, body_.options).gradient();  // throws the split's ef::Error (an op without a gradient)
  std::vector<Tensor> rerun = dispatch(*variant, in);
  std::vector<Tensor> cots(rerun.size());
  std::copy(cot.begin(), cot.end(), cots.begin());
  return reverse_scan(*variant, in, rerun, cots, needed);
}

std::vector<Tensor> ScanOp::reverse_scan(const ScanOp& variant, std::span<const Tensor> in, std::span<const Tensor> out,
                                         std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  const Residuals& r = *variant.residuals_;
  const GraphFunction::Gradient& g = r.body->gradient();
  const detail::GradientSplit& split = g.split;
  const std::size_t n_carry = n_carry_, n_xs = n_xs_, x_end = n_carry_ + n_xs_;
  std::vector<Tensor> grads(in.size());

  // Gradients the backward body computes: every floating carry's (they chain through the
  // steps), and the xs' and captures' that are needed.
  std::vector<bool> mask(split.gradient_inputs.size());
  bool any = false;
  for (std::size_t k = 0; k < mask.size(); ++k) {
    std::size_t p = split.gradient_inputs[k];
    any |= needed[p];
    mask[k] = needed[p] || p < n_carry;
  }
  if (!any) return grads;
  std::shared_ptr<const GraphFunction> backward = r.body->backward_for(mask);

  // The backward scan's carries: cotangents of the floating carries, then the captures'
  // accumulated gradients. Its xs: residuals, saved carries, xs the backward reads, ys'
  // cotangents. masked_at[k]: the backward graph's output for gradient_inputs[k].
  std::vector<std::size_t> carry_ks, cap_ks, x_ks;
  std::vector<int> masked_at(mask.size(), -1);
  for (std::size_t k = 0, j = 0; k < mask.size(); ++k) {
    if (!mask[k]) continue;
    masked_at[k] = static_cast<int>(j++);
    std::size_t p = split.gradient_inputs[k];
    (p < n_carry ? carry_ks : p < x_end ? x_ks : cap_ks).push_back(k);
  }
  std::vector<Tensor> init_b, xs_b;
  std::vector<int> carry_slot(n_carry, -1);  // carry p -> its cotangent's position in init_b
  for (std::size_t k : carry_ks) {
    std::size_t p = split.gradient_inputs[k];
    carry_slot[p] = static_cast<int>(init_b.size());
    init_b.push_back(cot[p].defined() ? cot[p] : zeros_like(out[p]));
  }
  for (std::size_t k : cap_ks) init_b.push_back(zeros_like(in[split.gradient_inputs[k]]));
  const std::size_t base = n_carry + r.n_ys;  // the variant's residual ys start here
  for (std::size_t m = 0; m < g.num_residuals; ++m) xs_b.push_back(out[base + m]);
  for (std::size_t s = 0; s < r.saved_carries.size(); ++s) xs_b.push_back(out[base + g.num_residuals + s]);
  std::vector<std::size_t> x_reads;  // xs (as body input positions) the backward graph reads
  for (std::size_t p : split.forward_inputs)
    if (p >= n_carry && p < x_end) {
      x_reads.push_back(p);
      xs_b.push_back(in[p]);
    }
  std::vector<std::size_t> y_cots;  // body outputs (ys) whose cotangents the backward reads
  for (std::size_t o : split.cotangent_outputs)
    if (o >= n_carry) {
      y_cots.push_back(o);
      xs_b.push_back(cot[o].defined() ? cot[o] : zeros_like(out[o]));
    }
  ScanOptions options{.reverse = !reverse_, .length = std::nullopt};
  if (xs_b.empty()) {
    if (n_xs) xs_b.push_back(in[n_carry]);  // only its length matters
    else options.length = length_;
  }
  const std::size_t n_res = g.num_residuals, n_saved = r.saved_carries.size();
  const std::size_t at_x = n_res + n_saved, at_ycot = at_x + x_reads.size();

  ScanBody body = [&](const std::vector<Tensor>& carry_b, const std::vector<Tensor>& x_b) {
    std::vector<Tensor> args;
    for (std::size_t p : split.forward_inputs) {
      if (p < n_carry) {
        auto s = std::find(r.saved_carries.begin(), r.saved_carries.end(), p) - r.saved_carries.begin();
        args.push_back(x_b[n_res + static_cast<std::size_t>(s)]);
      } else if (p < x_end) {
        auto s = std::find(x_reads.begin(), x_reads.end(), p) - x_reads.begin();
        args.push_back(x_b[at_x + static_cast<std::size_t>(s)]);
      } else {
        args.push_back(in[p]);
      }
    }
    for (std::size_t m = 0; m < n_res; ++m) args.push_back(x_b[m]);
    for (std::size_t o : split.cotangent_outputs) {
      if (o < n_carry) {
        args.push_back(carry_b[static_cast<std::size_t>(carry_slot[o])]);
      } else {
        auto s = std::find(y_cots.begin(), y_cots.end(), o) - y_cots.begin();
        args.push_back(x_b[at_ycot + static_cast<std::size_t>(s)]);
      }
    }
    std::vector<Tensor> outs = exec::replay(backward->traced(), args);
    std::vector<Tensor> next, ys;
    for (std::size_t k : carry_ks) next.push_back(outs[static_cast<std::size_t>(masked_at[k])]);
    for (std::size_t c = 0; c < cap_ks.size(); ++c)
      next.push_back(add(carry_b[carry_ks.size() + c], outs[static_cast<std::size_t>(masked_at[cap_ks[c]])]));
    for (std::size_t k : x_ks) ys.push_back(outs[static_cast<std::size_t>(masked_at[k])]);
    return std::pair{next, ys};
  };
  auto [carry_g, xs_g] = scan(body, init_b, xs_b, options);
  for (std::size_t c = 0; c < carry_ks.size(); ++c) {
    std::size_t p = split.gradient_inputs[carry_ks[c]];
    if (needed[p]) grads[p] = carry_g[c];
  }
  for (std::size_t c = 0; c < cap_ks.size(); ++c) {
    std::size_t p = split.gradient_inputs[cap_ks[c]];
    if (needed[p]) grads[p] = carry_g[carry_ks.size() + c];
  }
  for (std::size_t c = 0; c < x_ks.size(); ++c) grads[split.gradient_inputs[x_ks[c]]] = xs_g[c];
  return grads;
}

}  // namespace ef
