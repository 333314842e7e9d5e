// Layer normalization as one op: a one-pass kernel forward (keeping each row's mean and rstd)
// and a one-pass gradient op, instead of a chain of reductions and elementwise ops.
#include "ops/layer_norm_op.h"

#include <cmath>

#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "ops/rules/builtin_rules.h"
#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/core/error.h"
#include "eagerflow/nn/normalization.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/layer_norm.h"
#include "ops/op_factories.h"

namespace ef {
namespace {

bool dims_differ(std::int64_t a, std::int64_t b) { return a != b && a != kDynamic && b != kDynamic; }

// x's shape with the last axis 1: the shape of mean and rstd.
Shape stats_shape(const Shape& x) {
  std::vector<std::int64_t> dims = x.dims();
  dims.back() = 1;
  return Shape(std::move(dims));
}

// Checks x [..., C] (float32/float64) and the per-feature tensors (gamma, beta: [C], x's dtype).
void check_x_and_params(const char* op, const Tensor& x, std::span<const Tensor> params, std::span<const char* const> names,
                        std::span<const Tensor> all) {
  if (x.dtype() != DType::float32 && x.dtype() != DType::float64)
    fail(kWrongType, op, "expects float32 or float64 x, got " + describe(all));
  if (x.rank() < 1) fail(op, "expects x of rank >= 1 (normalized over its last axis), got " + describe(all));
  std::int64_t c = x.shape()[x.rank() - 1];
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (p.dtype() != x.dtype() || p.rank() != 1 || dims_differ(p.shape()[0], c))
      fail(op, std::string(names[i]) + " must be " + std::string(name_of(x.dtype())) + "[" +
                   (c == kDynamic ? std::string("?") : std::to_string(c)) + "] (x's dtype and last axis), got " +
                   describe(all));
  }
}

// Run-time check of the dims a trace could leave unknown.
void check_features(const char* op, const Tensor& x, std::span<const Tensor> params, std::span<const Tensor> all) {
  std::int64_t c = x.shape()[x.rank() - 1];
  for (const Tensor& p : params)
    if (p.shape()[0] != c) fail(op, "the per-feature inputs must have x's last axis " + std::to_string(c) + ": " + describe(all));
}

void check_epsilon(double epsilon) {
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    fail("layer_norm", "epsilon must be positive and finite, got " + std::to_string(epsilon));
}

// 1 / C as a tensor broadcasting against x's rows (C may be known only at run time).
Tensor inverse_features(const Tensor& x) {
  std::int64_t c = x.shape()[x.rank() - 1];
  if (c != kDynamic) return scalar_like(x, 1.0 / static_cast<double>(c));
  return mean(ones_like(x), {-1}, true) / sum(ones_like(x), {-1}, true);
}

// The first row of a batched [N, C] tensor: a [C] of its dtype.
Tensor example_row(const Tensor& t) { return reshape(slice(t, {0, 0}, {1, t.shape()[1]}), {-1}); }

std::vector<int> leading_axes(int rank) {
  std::vector<int> axes;
  for (int a = 0; a + 1 < rank; ++a) axes.push_back(a);
  return axes;
}

}  // namespace

OpParams LayerNormOp::parameters() const { return OpParams().add("epsilon", epsilon_); }
OpParams LayerNormGradOp::parameters() const { return OpParams().add("epsilon", epsilon_); }

std::vector<TensorSpec> LayerNormOp::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  static constexpr const char* names[] = {"gamma", "beta"};
  check_x_and_params(name(), in[0], in.subspan(1, 2), names, in);
  TensorSpec stats{in[0].dtype(), stats_shape(in[0].shape()), {}};
  return {in[0].spec(), stats, stats};
}

void LayerNormOp::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor &x = in[0], &gamma = in[1], &beta = in[2];
  check_features(name(), x, in.subspan(1, 2), in);
  for (int i = 0; i < 3; ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  std::int64_t cols = x.shape()[x.rank() - 1];
  std::int64_t rows = out[1].num_elements();
  if (rows == 0) return;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    cpu::layer_norm_forward(x.data<T>().data(), gamma.data<T>().data(), beta.data<T>().data(), epsilon_, rows, cols,
                            out[0].mutable_data<T>().data(), out[1].mutable_data<T>().data(),
                            out[2].mutable_data<T>().data());
  };
  if (x.dtype() == DType::float32) run(float{});
  else run(double{});
}

std::vector<Tensor> LayerNormOp::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                     std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  std::vector<Tensor> grads(3);
  const Tensor &x = in[0], &mean_ = out[1], &rstd = out[2];
  Tensor dy = cot[0].defined() ? cot[0] : zeros_like(out[0]);
  std::vector<Tensor> g = dispatch(LayerNormGradOp(epsilon_), std::vector<Tensor>{x, in[1], mean_, rstd, dy});
  Tensor dx = g[0];
  // mean and rstd are outputs too: d mean / dx = 1 / C, d rstd / dx = -rstd^3 (x - mean) / C.
  if (needed[0] && (cot[1].defined() || cot[2].defined())) {
    Tensor extra;
    if (cot[1].defined()) extra = broadcast_like(cot[1], x);
    if (cot[2].defined()) {
      Tensor t = cot[2] * -(rstd * rstd * rstd) * (x - mean_);
      extra = extra.defined() ? extra + t : t;
    }
    dx = dx + extra * inverse_features(x);
  }
  if (needed[0]) grads[0] = dx;
  if (needed[1]) grads[1] = g[1];
  if (needed[2]) grads[2] = g[2];
  return grads;
}

std::vector<TensorSpec> LayerNormGradOp::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 5);
  static constexpr const char* names[] = {"gamma"};
  check_x_and_params(name(), in[0], in.subspan(1, 1), names, in);
  Shape stats = stats_shape(in[0].shape());
  const char* what[] = {"mean", "rstd", "dy"};
  for (int i = 2; i < 5; ++i) {
    const Tensor& t = in[static_cast<std::size_t>(i)];
    const Shape& want = i == 4 ? in[0].shape() : stats;
    bool ok = t.dtype() == in[0].dtype() && t.rank() == want.rank();
    for (int a = 0; ok && a < t.rank(); ++a) ok = !dims_differ(t.shape()[a], want[a]);
    if (!ok)
      fail(name(), std::string(what[i - 2]) + " " + t.spec().str() + " should be " + std::string(name_of(in[0].dtype())) +
                       want.str() + ": " + describe(in));
  }
  return {in[0].spec(), in[1].spec(), in[1].spec()};
}

void LayerNormGradOp::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor &x = in[0], &gamma = in[1];
  check_features(name(), x, in.subspan(1, 1), in);
  if (in[4].shape() != x.shape() || in[2].shape() != stats_shape(x.shape()) || in[3].shape() != in[2].shape())
    fail(name(), "mean, rstd and dy do not match x: " + describe(in));
  for (int i = 0; i < 3; ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  std::int64_t cols = x.shape()[x.rank() - 1];
  std::int64_t rows = in[2].num_elements();
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if (rows == 0) {  // no rows: the sums over them are 0
      for (int i = 1; i < 3; ++i) std::fill_n(out[i].mutable_data<T>().data(), cols, T(0));
      return;
    }
    cpu::layer_norm_backward(x.data<T>().data(), gamma.data<T>().data(), in[2].data<T>().data(),
                             in[3].data<T>().data(), in[4].data<T>().data(), rows, cols,
                             out[0].mutable_data<T>().data(), out[1].mutable_data<T>().data(),
                             out[2].mutable_data<T>().data());
  };
  if (x.dtype() == DType::float32) run(float{});
  else run(double{});
}

// The gradient op as a function of x, gamma and dy composed from ef ops (mean and rstd
// recomputed from x, so their own inputs get no gradient): differentiating it gives second order.
std::vector<Tensor> LayerNormGradOp::vjp(std::span<const Tensor> in, std::span<const Tensor>,
                                         std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  std::vector<Tensor> x{identity(in[0]), identity(in[1]), identity(in[4])};  // fresh handles to watch
  GradientTape tape;
  tape.watch(x);
  const Tensor &xs = x[0], &gamma = x[1], &dy = x[2];
  Tensor m = mean(xs, {-1}, true);
  Tensor xc = xs - m;
  Tensor r = rsqrt(mean(square(xc), {-1}, true) + epsilon_);
  Tensor xhat = xc * r;
  Tensor gd = dy * gamma;
  Tensor dx = r * (gd - mean(gd, {-1}, true) - xhat * mean(gd * xhat, {-1}, true));
  std::vector<int> lead = leading_axes(xs.rank());
  Tensor dgamma = lead.empty() ? dy * xhat : sum(dy * xhat, lead);
  Tensor dbeta = lead.empty() ? dy * 1.0 : sum(dy, lead);
  Tensor target;
  const Tensor outs[3] = {dx, dgamma, dbeta};
  for (int i = 0; i < 3; ++i) {
    if (!cot[i].defined()) continue;
    Tensor term = sum(outs[i] * cot[i]);
    target = target.defined() ? target + term : term;
  }
  std::vector<Tensor> grads(in.size());
  if (!target.defined()) return grads;
  std::vector<Tensor> g = tape.gradient(target, x, GradientOptions{UnconnectedGradients::zero, {}});
  if (needed[0]) grads[0] = g[0];
  if (needed[1]) grads[1] = g[1];
  if (needed[4]) grads[4] = g[2];
  return grads;
}

// vmap: x's rows are independent, so the batched x runs in one call. Per-example gamma and beta
// scale and shift a normalization with gamma 1 and beta 0; the gradient op's per-example
// dgamma and dbeta are sums over each example's rows.
static std::optional<std::vector<Batched>> layer_norm_batching_rule(const Primitive& op,
                                                                             std::span<const Batched> in,
                                                                             std::int64_t batch) {
  auto* fwd = dynamic_cast<const LayerNormOp*>(&op);
  auto* grad = dynamic_cast<const LayerNormGradOp*>(&op);
  if (!fwd && !grad) return std::nullopt;
  // An unbatched input spread over the batch (static batch sizes only).
  auto with_batch = [&](const Batched& b) -> Tensor {
    if (b.batched) return b.t;
    if (batch == kDynamic) return Tensor();
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), b.t.shape().begin(), b.t.shape().end());
    return broadcast_to(expand_dims(b.t, 0), Shape(dims));
  };
  // A batched [N, C] per-feature tensor as [N, 1, ..., 1, C] against a batched x of rank r.
  auto per_feature = [&](const Batched& b, int r) {
    if (!b.batched) return b.t;
    std::vector<std::int64_t> dims(static_cast<std::size_t>(r), 1);
    dims.front() = b.t.shape()[0] == kDynamic ? -1 : b.t.shape()[0];
    dims.back() = b.t.shape()[1] == kDynamic ? -1 : b.t.shape()[1];
    return reshape(b.t, Shape(dims));
  };
  if (fwd) {
    Tensor x = with_batch(in[0]);
    if (!x.defined()) return std::nullopt;
    if (!in[1].batched && !in[2].batched) {
      std::vector<Tensor> o = dispatch(op, std::vector<Tensor>{x, in[1].t, in[2].t});
      return std::vector<Batched>{{o[0], true}, {o[1], true}, {o[2], true}};
    }
    Tensor ones_c = ones_like(in[1].batched ? in[2].batched ? example_row(in[1].t) : in[2].t : in[1].t);
    std::vector<Tensor> o = dispatch(op, std::vector<Tensor>{x, ones_c, zeros_like(ones_c)});
    Tensor y = o[0] * per_feature(in[1], x.rank()) + per_feature(in[2], x.rank());
    return std::vector<Batched>{{y, true}, {o[1], true}, {o[2], true}};
  }
  Tensor x = with_batch(in[0]), m = with_batch(in[2]), rs = with_batch(in[3]), dy = with_batch(in[4]);
  if (!x.defined() || !m.defined() || !rs.defined() || !dy.defined()) return std::nullopt;
  int r = x.rank();
  Tensor xhat = (x - m) * rs;
  Tensor dx;
  if (!in[1].batched) {
    dx = dispatch(op, std::vector<Tensor>{x, in[1].t, m, rs, dy})[0];
  } else {
    Tensor gd = dy * per_feature(in[1], r);
    dx = rs * (gd - mean(gd, {-1}, true) - xhat * mean(gd * xhat, {-1}, true));
  }
  std::vector<int> rows;  // each example's row axes
  for (int a = 1; a + 1 < r; ++a) rows.push_back(a);
  Tensor dgamma = rows.empty() ? dy * xhat : sum(dy * xhat, rows);
  Tensor dbeta = rows.empty() ? dy * 1.0 : sum(dy, rows);
  return std::vector<Batched>{{dx, true}, {dgamma, true}, {dbeta, true}};
}

void detail::add_layer_norm_factories(detail::OpFactories& f) {
  f["layer_norm"] = [](const OpParams& p) {
    double e = p.real("epsilon");
    if (!(e > 0) || !std::isfinite(e)) p.bad("epsilon must be positive and finite");
    return std::make_shared<LayerNormOp>(e);
  };
  f["layer_norm_grad"] = [](const OpParams& p) {
    double e = p.real("epsilon");
    if (!(e > 0) || !std::isfinite(e)) p.bad("epsilon must be positive and finite");
    return std::make_shared<LayerNormGradOp>(e);
  };
}

namespace nn {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon) {
  check_epsilon(epsilon);
  return dispatch(LayerNormOp(epsilon), std::vector<Tensor>{x, gamma, beta})[0];
}

}  // namespace nn
}  // namespace ef

namespace ef {

void detail::register_layer_norm_rules() {
  auto batching = [](const Primitive& op, BatchingCall call) { return layer_norm_batching_rule(op, call.inputs, call.batch); };
  register_op_rules<LayerNormOp>({
      .batching = batching,
      .onnx = [](const LayerNormOp& ln, onnx::Lowering& to) {
        // ONNX's LayerNormalization (opset 17) over the last axis. Its Mean and InvStdDev are
        // float32 only (stash_type), so a float64 graph exports y alone (mean and rstd feed only
        // the gradient op, which exported graphs do not hold).
        bool f32 = to.input_spec(0).dtype == DType::float32;
        std::vector<std::string> outs{to.output(0)};
        if (f32) outs = {to.output(0), to.output(1), to.output(2)};
        to.node("LayerNormalization", to.inputs(), outs, {{"axis", -1}, {"epsilon", static_cast<float>(ln.epsilon())}});
      },
  });
  register_op_rules<LayerNormGradOp>({.batching = batching, .onnx_unsupported = "a gradient op: exported graphs run inference only"});
}

}  // namespace ef
