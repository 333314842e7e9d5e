// Fused scaled-dot-product attention: one op for the forward pass (output and per-row
// logsumexp) and one for its gradient, both block by block (src/kernels/cpu/attention.cpp), so
// neither stores a [q_len, k_len] matrix.
#include "ops/attention_op.h"

#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "ops/rules/builtin_rules.h"
#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/attention.h"
#include "ops/op_factories.h"

namespace ef {
namespace {

bool dims_differ(std::int64_t a, std::int64_t b) { return a != b && a != kDynamic && b != kDynamic; }

// A q/k/v shape read as (batch, heads, seq, dim) in either layout.
struct Bhsd {
  std::int64_t b, h, s, d;
};
Bhsd bhsd(const Shape& x, bool bshd) { return bshd ? Bhsd{x[0], x[2], x[1], x[3]} : Bhsd{x[0], x[1], x[2], x[3]}; }

// Checks q, k, v (and the mask and seed the params call for); dims unknown while tracing pass.
void check_attention(const AttentionParams& p, std::span<const Tensor> in, std::size_t first_extra,
                                        const char* op) {
  std::size_t want = first_extra + (p.has_mask ? 1 : 0) + (p.dropout > 0 ? 1 : 0);
  if (in.size() != want)
    fail(op, "expects " + std::to_string(want) + " inputs, got " + std::to_string(in.size()) + ": " + describe(in));
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  auto shapes = [&] {
    return "q " + q.spec().str() + ", k " + k.spec().str() + ", v " + v.spec().str() +
           (p.bshd ? " (layout [batch, seq, heads, head_dim])" : "");
  };
  if (q.rank() != 4 || k.rank() != 4 || v.rank() != 4)
    fail(op, std::string("expects q, k and v of rank 4 ") +
                 (p.bshd ? "[batch, seq, heads, head_dim]" : "[batch, heads, seq, head_dim]") + ", got " + shapes());
  if (q.dtype() != DType::float32 && q.dtype() != DType::float64)
    fail(kWrongType, op, "expects float32 or float64 q, k and v, got " + shapes());
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
    fail(kWrongType, op, "q, k and v must share a dtype, got " + shapes());
  Bhsd qs = bhsd(q.shape(), p.bshd), ks = bhsd(k.shape(), p.bshd), vs = bhsd(v.shape(), p.bshd);
  if (dims_differ(qs.b, ks.b) || dims_differ(qs.b, vs.b)) fail(op, "batch dims differ: " + shapes());
  if (dims_differ(qs.h, ks.h) || dims_differ(qs.h, vs.h)) fail(op, "heads dims differ: " + shapes());
  if (dims_differ(ks.s, vs.s)) fail(op, "k and v must have the same sequence length: " + shapes());
  if (dims_differ(qs.d, ks.d)) fail(op, "q and k must have the same head_dim: " + shapes());
  if (p.has_mask) {
    const Tensor& m = in[first_extra];
    if (m.dtype() != DType::bool_) fail(kWrongType, op, "the mask must be bool (true = attend), got " + m.spec().str());
    if (m.rank() > 4) fail(op, "the mask " + m.spec().str() + " has rank > 4");
    std::int64_t target[4] = {qs.b, qs.h, qs.s, ks.s};
    for (int a = 0; a < m.rank(); ++a) {
      std::int64_t md = m.shape()[a], td = target[4 - m.rank() + a];
      if (md != 1 && dims_differ(md, td))
        fail(op, "the mask " + m.spec().str() + " does not broadcast to [batch, heads, q_len, k_len] = " +
                     Shape({target[0], target[1], target[2], target[3]}).str() + " (" + shapes() + ")");
    }
  }
  if (p.dropout > 0) {
    const Tensor& s = in[want - 1];
    if (s.dtype() != DType::float64 || s.rank() != 0) fail(op, "the dropout seed must be a float64 scalar, got " + s.spec().str());
  }
  if (!(p.dropout >= 0 && p.dropout < 1)) fail(op, "dropout must be in [0, 1), got " + std::to_string(p.dropout));
}

std::vector<TensorSpec> attention_specs(const AttentionParams& p, std::span<const Tensor> in, std::size_t first_extra,
                                        const char* op) {
  check_attention(p, in, first_extra, op);
  Bhsd qs = bhsd(in[0].shape(), p.bshd);
  std::int64_t dv = in[2].shape()[3];
  DType dt = in[0].dtype();
  Shape out = p.bshd ? Shape({qs.b, qs.s, qs.h, dv}) : Shape({qs.b, qs.h, qs.s, dv});
  return {{dt, out, {}}, {dt, Shape({qs.b, qs.h, qs.s}), {}}};
}

cpu::AttentionDims dims_of(const Tensor& q, const Tensor& k, const Tensor& v, bool bshd) {
  Bhsd qs = bhsd(q.shape(), bshd);
  return {qs.b, qs.h, qs.s, bhsd(k.shape(), bshd).s, qs.d, v.shape()[3], bshd};
}

cpu::AttentionMask mask_view(const Tensor* m, const cpu::AttentionDims& d) {
  cpu::AttentionMask mv;
  if (!m) return mv;
  mv.data = m->data<bool>().data();
  std::int64_t target[4] = {d.batch, d.heads, d.q_len, d.k_len};
  std::int64_t stride = 1;
  for (int a = m->rank() - 1; a >= 0; --a) {
    std::int64_t dim = m->shape()[a];
    mv.stride[4 - m->rank() + a] = (dim == 1 && target[4 - m->rank() + a] != 1) ? 0 : stride;
    stride *= dim;
  }
  return mv;
}

cpu::AttentionConfig config_of(const AttentionParams& p, const Tensor* seed) {
  cpu::AttentionConfig c;
  c.scale = p.scale;
  c.causal = p.causal;
  c.dropout = p.dropout;
  if (seed) c.seed = static_cast<std::uint64_t>(std::fabs(seed->data<double>()[0]));
  return c;
}

}  // namespace

OpParams AttentionParams::parameters() const {
  return OpParams()
      .add("scale", scale)
      .add_flag("causal", causal)
      .add_flag("mask", has_mask)
      .add("dropout", dropout)
      .add_flag("bshd", bshd);
}

AttentionParams AttentionParams::from(const OpParams& p) {
  AttentionParams a;
  a.scale = p.real("scale");
  a.causal = p.flag("causal");
  a.has_mask = p.flag("mask");
  a.dropout = p.real("dropout");
  a.bshd = p.flag("bshd");
  if (!std::isfinite(a.scale)) p.bad("scale must be finite");
  if (!(a.dropout >= 0 && a.dropout < 1)) p.bad("dropout must be in [0, 1)");
  return a;
}

std::vector<TensorSpec> ScaledDotProductAttention::infer(std::span<const Tensor> in) const {
  return attention_specs(p_, in, 3, name());
}

void ScaledDotProductAttention::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                                     std::span<Tensor> out) const {
  check_attention(p_, in, 3, name());  // at run time: the dims a trace could not check
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  out[1] = Tensor::empty(specs[1].dtype, specs[1].shape);
  cpu::AttentionDims d = dims_of(q, k, v, p_.bshd);
  cpu::AttentionMask m = mask_view(p_.has_mask ? &in[3] : nullptr, d);
  cpu::AttentionConfig c = config_of(p_, p_.dropout > 0 ? &in[in.size() - 1] : nullptr);
  if (q.dtype() == DType::float32)
    cpu::attention_forward(q.data<float>().data(), k.data<float>().data(), v.data<float>().data(), m, c, d,
                           out[0].mutable_data<float>().data(), out[1].mutable_data<float>().data());
  else
    cpu::attention_forward(q.data<double>().data(), k.data<double>().data(), v.data<double>().data(), m, c, d,
                           out[0].mutable_data<double>().data(), out[1].mutable_data<double>().data());
}

std::vector<Tensor> ScaledDotProductAttention::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                                   std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  std::vector<Tensor> grads(in.size());
  if (!needed[0] && !needed[1] && !needed[2]) return grads;
  Tensor dout = cot[0].defined() ? cot[0] : zeros_like(out[0]);
  Tensor dlse = cot[1].defined() ? cot[1] : zeros_like(out[1]);
  std::vector<Tensor> args{in[0], in[1], in[2], out[0], out[1], dout, dlse};
  for (std::size_t i = 3; i < in.size(); ++i) args.push_back(in[i]);
  std::vector<Tensor> g = dispatch(ScaledDotProductAttentionGrad(p_), args);
  for (int i = 0; i < 3; ++i)
    if (needed[i]) grads[i] = g[i];
  return grads;
}

std::vector<TensorSpec> ScaledDotProductAttentionGrad::infer(std::span<const Tensor> in) const {
  if (in.size() < 7) fail(name(), "expects at least 7 inputs, got " + describe(in));
  std::vector<Tensor> fwd{in[0], in[1], in[2]};
  for (std::size_t i = 7; i < in.size(); ++i) fwd.push_back(in[i]);
  std::vector<TensorSpec> o = attention_specs(p_, fwd, 3, name());
  for (int i = 0; i < 4; ++i) {
    const Tensor& t = in[3 + i];
    const TensorSpec& want = o[i % 2];  // out, lse, dout, dlse
    bool ok = t.dtype() == want.dtype && t.rank() == want.shape.rank();
    for (int a = 0; ok && a < t.rank(); ++a) ok = !dims_differ(t.shape()[a], want.shape[a]);
    if (!ok) fail(name(), "input " + std::to_string(3 + i) + " " + t.spec().str() + " should be " + want.str());
  }
  return {in[0].spec(), in[1].spec(), in[2].spec()};
}

void ScaledDotProductAttentionGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                                         std::span<Tensor> out) const {
  const Tensor &q = in[0], &k = in[1], &v = in[2];
  for (int i = 0; i < 3; ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  cpu::AttentionDims d = dims_of(q, k, v, p_.bshd);
  cpu::AttentionMask m = mask_view(p_.has_mask ? &in[7] : nullptr, d);
  cpu::AttentionConfig c = config_of(p_, p_.dropout > 0 ? &in[in.size() - 1] : nullptr);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    cpu::attention_backward(q.data<T>().data(), k.data<T>().data(), v.data<T>().data(), in[3].data<T>().data(),
                            in[4].data<T>().data(), in[5].data<T>().data(), in[6].data<T>().data(), m, c, d,
                            out[0].mutable_data<T>().data(), out[1].mutable_data<T>().data(),
                            out[2].mutable_data<T>().data());
  };
  if (q.dtype() == DType::float32) run(float{});
  else run(double{});
}

// The gradient op as a function of all its inputs, composed from ef ops (quadratic memory):
// P = exp(scale q k^T - lse) (hidden keys 0), dv = P^T dout, dS = P (dout v^T - D) scale with
// D = rowsum(dout out) - dlse, dq = dS k, dk = dS^T q. Differentiating it gives second order.
std::vector<Tensor> ScaledDotProductAttentionGrad::vjp(std::span<const Tensor> in, std::span<const Tensor>,
                                                       std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  if (p_.dropout > 0)
    fail(ErrorCode::unimplemented, name(),
         "gradients of gradients of the fused attention with dropout are not implemented");
  std::vector<Tensor> x(in.begin(), in.begin() + 7);
  for (Tensor& t : x) t = identity(t);  // fresh handles the inner tape can watch
  GradientTape tape;
  tape.watch(x);
  // The formulas in [batch, heads, seq, dim]; bshd tensors are transposed in and out.
  auto in_bhsd = [&](const Tensor& t) { return p_.bshd ? transpose(t, {0, 2, 1, 3}) : t; };
  const Tensor q = in_bhsd(x[0]), k = in_bhsd(x[1]), v = in_bhsd(x[2]), o = in_bhsd(x[3]), dout = in_bhsd(x[5]);
  const Tensor &lse = x[4], &dlse = x[6];
  Tensor s = matmul(q, k, false, true) * p_.scale;
  Tensor visible;
  if (p_.has_mask) visible = broadcast_like(in[7], s);
  if (p_.causal) {
    std::int64_t sq = q.shape()[2], sk = k.shape()[2];
    if (sq == kDynamic || sk == kDynamic)
      fail(name(), "second-order gradients with a causal mask need static sequence lengths: " + describe(in));
    Tensor c = greater_equal(reshape(arange(sq), {sq, 1}), reshape(arange(sk), {1, sk}));
    visible = visible.defined() ? logical_and(visible, broadcast_like(c, s)) : broadcast_like(c, s);
  }
  Tensor shifted = s - expand_dims(lse, -1);
  Tensor p = visible.defined() ? where(visible, exp(where(visible, shifted, zeros_like(shifted))), zeros_like(s)) : exp(shifted);
  Tensor dv = matmul(p, dout, true, false);
  Tensor d = sum(dout * o, {-1}, true) - expand_dims(dlse, -1);
  Tensor ds = p * (matmul(dout, v, false, true) - d) * p_.scale;
  Tensor dq = in_bhsd(matmul(ds, k));
  Tensor dk = in_bhsd(matmul(ds, q, true, false));
  dv = in_bhsd(dv);
  Tensor target;
  const Tensor outs[3] = {dq, dk, dv};
  for (int i = 0; i < 3; ++i) {
    if (!cot[i].defined()) continue;
    Tensor term = sum(outs[i] * cot[i]);
    target = target.defined() ? target + term : term;
  }
  std::vector<Tensor> grads(in.size());
  if (!target.defined()) return grads;
  std::vector<Tensor> g = tape.gradient(target, x, GradientOptions{UnconnectedGradients::zero, {}});
  for (int i = 0; i < 7; ++i)
    if (needed[i]) grads[i] = g[i];
  return grads;
}

// vmap: the examples' [batch, heads, ...] tensors merged into one batch of batch x N heads' worth
// ([N, B, H, S, D] -> [N * B, H, S, D]), one call, split again. nullopt (one call per example)
// when sizes are known only at run time or the dropout seed is batched.
static std::optional<std::vector<Batched>> attention_batching_rule(const Primitive& op,
                                                                            std::span<const Batched> in,
                                                                            std::span<const TensorSpec> specs,
                                                                            std::int64_t batch) {
  auto* a = dynamic_cast<const ScaledDotProductAttention*>(&op);
  if (!a || batch == kDynamic || !specs[0].shape.is_static() || !specs[1].shape.is_static()) return std::nullopt;
  const AttentionParams& p = a->params();
  auto with_batch = [&](const Batched& b) {  // [N, example dims...]
    if (b.batched) return b.t;
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), b.t.shape().begin(), b.t.shape().end());
    return broadcast_to(expand_dims(b.t, 0), Shape(dims));
  };
  std::vector<Tensor> xs;
  for (int i = 0; i < 3; ++i) {
    Tensor t = with_batch(in[i]);
    if (!t.shape().is_static()) return std::nullopt;
    xs.push_back(reshape(t, {-1, t.shape()[2], t.shape()[3], t.shape()[4]}));
  }
  if (p.has_mask) {
    // Each example's mask to rank 4 ([b', h', q', k'], each 1 or full), then its b' broadcast
    // to the examples' batch so that [N, B] merges like q's.
    Tensor t = in[3].t;
    for (int r = in[3].rank(); r < 4; ++r) t = expand_dims(t, in[3].batched ? 1 : 0);
    if (!in[3].batched) t = expand_dims(t, 0);
    if (!t.shape().is_static()) return std::nullopt;
    std::int64_t examples_batch = specs[0].shape[0];
    t = broadcast_to(t, Shape({batch, examples_batch, t.shape()[2], t.shape()[3], t.shape()[4]}));
    xs.push_back(reshape(t, {-1, t.shape()[2], t.shape()[3], t.shape()[4]}));
  }
  if (p.dropout > 0) {
    if (in.back().batched) return std::nullopt;
    xs.push_back(in.back().t);
  }
  std::vector<Tensor> outs = dispatch(op, xs);
  auto split = [&](const Tensor& t, const Shape& example) {
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), example.begin(), example.end());
    return Batched{reshape(t, Shape(dims)), true};
  };
  return std::vector<Batched>{split(outs[0], specs[0].shape), split(outs[1], specs[1].shape)};
}

void detail::add_attention_factories(detail::OpFactories& f) {
  f["scaled_dot_product_attention"] = [](const OpParams& p) {
    return std::make_shared<ScaledDotProductAttention>(AttentionParams::from(p));
  };
  f["scaled_dot_product_attention_grad"] = [](const OpParams& p) {
    return std::make_shared<ScaledDotProductAttentionGrad>(AttentionParams::from(p));
  };
}

}  // namespace ef

namespace ef {
namespace {

// ONNX: softmax((scale q) k^T, masked) v decomposed, with masked probabilities zeroed as the
// kernel computes them (dropout is training-only); the logsumexp output as ReduceLogSumExp of
// the masked scores.
void lower_attention(const ScaledDotProductAttention& a, onnx::Lowering& to) {
  const AttentionParams& p = a.params();
  DType t = to.input_spec(0).dtype;
  const std::vector<std::int64_t> to_bhsd{0, 2, 1, 3};
  // [batch, seq, heads, dim] inputs to [batch, heads, seq, dim] (and the output back).
  auto heads_second = [&](const std::string& x) {
    if (!p.bshd) return x;
    std::string y = to.fresh("attn_bhsd");
    to.node("Transpose", {x}, {y}, {{"perm", to_bhsd}});
    return y;
  };
  std::string qs = to.fresh("attn_q"), kt = to.fresh("attn_kt"), s = to.fresh("attn_s");
  to.node("Mul", {heads_second(to.input(0)), to.scalar_constant(p.scale, t)}, {qs});
  to.node("Transpose", {to.input(1)}, {kt},
          {{"perm", p.bshd ? std::vector<std::int64_t>{0, 2, 3, 1} : std::vector<std::int64_t>{0, 1, 3, 2}}});
  to.node("MatMul", {qs, kt}, {s});
  std::string visible;
  if (p.has_mask) visible = to.input(3);
  if (p.causal) {
    std::int64_t sq = to.input_spec(0).shape[p.bshd ? 1 : 2], sk = to.input_spec(1).shape[p.bshd ? 1 : 2];
    if (sq == kDynamic || sk == kDynamic)
      fail(ErrorCode::unimplemented, "onnx",
           "causal attention exports with static sequence lengths only, got q " + to.input_spec(0).str() + ", k " +
               to.input_spec(1).str());
    std::string c = to.constant(greater_equal(reshape(arange(sq), {sq, 1}), reshape(arange(sk), {1, sk})));
    if (visible.empty()) {
      visible = c;
    } else {
      std::string both = to.fresh("attn_visible");
      to.node("And", {visible, c}, {both});
      visible = both;
    }
  }
  std::string scores = s, probs = to.fresh("attn_p");
  if (!visible.empty()) {
    scores = to.fresh("attn_s");
    to.node("Where", {visible, s, to.scalar_constant(-1e9, t)}, {scores});
    std::string p0 = to.fresh("attn_p");
    to.node("Softmax", {scores}, {p0}, {{"axis", -1}});
    to.node("Where", {visible, p0, to.scalar_constant(0.0, t)}, {probs});
  } else {
    to.node("Softmax", {scores}, {probs}, {{"axis", -1}});
  }
  if (p.bshd) {
    std::string o = to.fresh("attn_o");
    to.node("MatMul", {probs, heads_second(to.input(2))}, {o});
    to.node("Transpose", {o}, {to.output(0)}, {{"perm", to_bhsd}});
  } else {
    to.node("MatMul", {probs, to.input(2)}, {to.output(0)});
  }
  to.node("ReduceLogSumExp", {scores}, {to.output(1)}, {{"axes", std::vector<std::int64_t>{-1}}, {"keepdims", 0}});
}

}  // namespace

void detail::register_attention_rules() {
  register_op_rules<ScaledDotProductAttention>({
      .batching = [](const ScaledDotProductAttention& op, BatchingCall call) {
        return attention_batching_rule(op, call.inputs, call.specs, call.batch);
      },
      .onnx = lower_attention,
  });
  register_op_rules<ScaledDotProductAttentionGrad>(
      {.runs_per_example = true, .onnx_unsupported = "a gradient op: exported graphs run inference only"});
}

}  // namespace ef
