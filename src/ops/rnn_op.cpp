// The fused LSTM / GRU ops on oneDNN (src/ops/rnn_op.h) and their public functions ef::lstm,
// ef::gru (include/eagerflow/nn/recurrent.h).
#include "ops/rnn_op.h"

#include <cstring>
#include <limits>

#include "eagerflow/nn/recurrent.h"
#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/function/scan.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "kernels/cpu/rnn.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

bool is_lstm(RnnCellKind c) { return c == RnnCellKind::lstm; }
int gates(RnnCellKind c) { return is_lstm(c) ? 4 : 3; }
std::size_t forward_inputs(RnnCellKind c) { return is_lstm(c) ? 6 : 5; }
std::size_t forward_outputs(RnnCellKind c) { return is_lstm(c) ? 4 : 3; }  // with the workspace

struct Dims {
  std::int64_t n, t, c, u;
};

// The shape rule shared by the forward and backward ops: inputs 0.. are the forward inputs.
Dims check_forward_inputs(const Primitive& op, RnnCellKind cell, std::span<const Tensor> in) {
  std::string shapes = describe(in.subspan(0, forward_inputs(cell)));
  auto bad = [&](const std::string& why) {
    fail(op.name(), why + " (inputs x, kernel, recurrent_kernel, bias, h0" + (is_lstm(cell) ? ", c0" : "") + ": " +
                        shapes + ")");
  };
  for (std::size_t i = 0; i < forward_inputs(cell); ++i)
    if (in[i].dtype() != DType::float32) bad("expects float32 tensors");
  const Shape &x = in[0].shape(), &w = in[1].shape(), &r = in[2].shape(), &b = in[3].shape();
  if (x.rank() != 3) bad("x must be [batch, time, features]");
  if (w.rank() != 2 || r.rank() != 2 || b.rank() != 2) bad("kernel, recurrent_kernel and bias must be rank 2");
  std::int64_t u = r[0], c = w[0], g = gates(cell);
  if (u == kDynamic || c == kDynamic || w[1] == kDynamic || r[1] == kDynamic || u <= 0)
    bad("the weights need known, nonzero shapes");
  if (w[1] != g * u || r[1] != g * u) bad("kernel and recurrent_kernel need " + std::to_string(g) + " * units columns");
  if (b[0] != 4 || b[1] != u) bad("bias must be [4, units]");
  if (x[2] != kDynamic && x[2] != c) bad("x has " + std::to_string(x[2]) + " features, the kernel expects " + std::to_string(c));
  for (std::size_t i = 4; i < forward_inputs(cell); ++i) {
    const Shape& s = in[i].shape();
    if (s.rank() != 2 || (s[1] != u && s[1] != kDynamic)) bad("the initial states must be [batch, units]");
    if (s[0] != kDynamic && x[0] != kDynamic && s[0] != x[0]) bad("the initial states' batch differs from x's");
  }
  return {x[0], x[1], c, u};
}

cpu::RnnGeometry geometry(RnnCellKind cell, const Dims& d, bool reverse) {
  return {is_lstm(cell) ? cpu::RnnCell::lstm : cpu::RnnCell::gru, d.t, d.n, d.c, d.u, reverse};
}

const float* f32(const Tensor& t) { return t.data<float>().data(); }
float* f32(Tensor& t) { return t.mutable_data<float>().data(); }

Tensor copy_of(const Tensor& t) {
  Tensor c = Tensor::empty(t.dtype(), t.shape());
  if (t.nbytes()) std::memcpy(c.raw_mutable_data(), t.raw_data(), t.nbytes());
  return c;
}

}  // namespace

// ---------------------------------------------------------------- forward
std::vector<TensorSpec> RnnForward::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, forward_inputs(cell_));
  Dims d = check_forward_inputs(*this, cell_, in);
  std::int64_t ws = kDynamic;
  if (d.n != kDynamic && d.t != kDynamic) {
    ws = 0;
    if (d.n > 0 && d.t > 0)
      ws = static_cast<std::int64_t>((cpu::rnn_workspace_bytes(geometry(cell_, d, reverse_)) + 3) / 4);
  }
  std::vector<TensorSpec> out = {{DType::float32, Shape{d.n, d.t, d.u}, {}}, {DType::float32, Shape{d.n, d.u}, {}}};
  if (is_lstm(cell_)) out.push_back({DType::float32, Shape{d.n, d.u}, {}});
  out.push_back({DType::float32, Shape{ws}, {}});
  return out;
}

void RnnForward::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  Dims d{in[0].shape()[0], in[0].shape()[1], in[1].shape()[0], in[2].shape()[0]};
  for (std::size_t i = 0; i < specs.size(); ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  bool lstm = is_lstm(cell_);
  if (d.n == 0 || d.t == 0) {  // no steps: the states pass through
    out[1] = copy_of(in[4]);
    if (lstm) out[2] = copy_of(in[5]);
    return;
  }
  Tensor c0 = lstm ? in[5] : Tensor();
  float* ct = lstm ? f32(out[2]) : nullptr;
  cpu::rnn_forward(geometry(cell_, d, reverse_), f32(in[0]), f32(in[4]), lstm ? f32(c0) : nullptr, f32(in[1]),
                   f32(in[2]), f32(in[3]), f32(out[0]), f32(out[1]), ct, out.back().raw_mutable_data());
}

std::vector<Tensor> RnnForward::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                    const std::vector<bool>& needed) const {
  std::vector<Tensor> args(in.begin(), in.end());
  args.insert(args.end(), out.begin(), out.end());
  for (std::size_t i = 0; i + 1 < out.size(); ++i) args.push_back(cot[i].defined() ? cot[i] : zeros_like(out[i]));
  return dispatch(RnnBackward(cell_, reverse_), args);
}

// ---------------------------------------------------------------- backward
std::vector<TensorSpec> RnnBackward::infer(std::span<const Tensor> in) const {
  std::size_t fi = forward_inputs(cell_), fo = forward_outputs(cell_);
  expect_inputs(*this, in, fi + fo + fo - 1);
  check_forward_inputs(*this, cell_, in);
  for (std::size_t i = 0; i + 1 < fo; ++i)
    if (in[fi + fo + i].spec() != in[fi + i].spec() && in[fi + fo + i].shape().is_static() && in[fi + i].shape().is_static())
      fail(name(), "the gradient " + in[fi + fo + i].spec().str() + " does not fit the output " + in[fi + i].spec().str());
  std::vector<TensorSpec> out;
  for (std::size_t i = 0; i < fi; ++i) out.push_back(in[i].spec());
  return out;
}

void RnnBackward::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  std::size_t fi = forward_inputs(cell_), fo = forward_outputs(cell_);
  bool lstm = is_lstm(cell_);
  Dims d{in[0].shape()[0], in[0].shape()[1], in[1].shape()[0], in[2].shape()[0]};
  for (std::size_t i = 0; i + 1 < fo; ++i)
    if (in[fi + fo + i].shape() != in[fi + i].shape())
      fail(name(), "the gradient " + in[fi + fo + i].spec().str() + " does not fit the output " + in[fi + i].spec().str());
  for (std::size_t i = 0; i < specs.size(); ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  if (d.n == 0 || d.t == 0) {
    for (int i : {0, 1, 2, 3}) out[static_cast<std::size_t>(i)] = zeros(specs[static_cast<std::size_t>(i)].shape);
    out[4] = copy_of(in[fi + fo + 1]);
    if (lstm) out[5] = copy_of(in[fi + fo + 2]);
    return;
  }
  const Tensor &y = in[fi], &ht = in[fi + 1], &ws = in[fi + fo - 1];
  const Tensor &dy = in[fi + fo], &dht = in[fi + fo + 1];
  cpu::rnn_backward(geometry(cell_, d, reverse_), f32(in[0]), f32(in[4]), lstm ? f32(in[5]) : nullptr, f32(in[1]),
                    f32(in[2]), f32(in[3]), f32(y), f32(ht), lstm ? f32(in[fi + 2]) : nullptr, ws.raw_data(), f32(dy),
                    f32(dht), lstm ? f32(in[fi + fo + 2]) : nullptr, f32(out[0]), f32(out[4]),
                    lstm ? f32(out[5]) : nullptr, f32(out[1]), f32(out[2]), f32(out[3]));
}

namespace {

// The op's math with ef ops in one ef::scan (what the layers' scan path computes), in the op's
// layouts: the reference that second-order gradients differentiate.
std::vector<Tensor> reference_forward(RnnCellKind cell, bool reverse, const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &w = in[1], &r = in[2], &b = in[3];
  std::int64_t u = r.shape()[0];
  constexpr std::int64_t end = std::numeric_limits<std::int64_t>::max();
  auto cols = [&](const Tensor& t, std::int64_t k) { return slice(t, {0, k * u}, {end, (k + 1) * u}); };
  auto row = [&](std::int64_t k) { return reshape(slice(b, {k}, {k + 1}), Shape{u}); };
  Tensor projected = matmul(x, w);
  if (is_lstm(cell)) projected = projected + reshape(b, Shape{4 * u});
  else projected = projected + concat({row(0), row(1), row(2)}, 0);
  ScanBody body = [&](const std::vector<Tensor>& carry, const std::vector<Tensor>& xt) {
    const Tensor& p = xt[0];
    Tensor rec = matmul(carry[0], r);
    if (is_lstm(cell)) {
      Tensor z = p + rec;
      Tensor c = sigmoid(cols(z, 1)) * carry[1] + sigmoid(cols(z, 0)) * tanh(cols(z, 2));
      Tensor h = sigmoid(cols(z, 3)) * tanh(c);
      return std::pair{std::vector<Tensor>{h, c}, std::vector<Tensor>{h}};
    }
    Tensor z = sigmoid(cols(p, 0) + cols(rec, 0)), rr = sigmoid(cols(p, 1) + cols(rec, 1));
    Tensor hh = tanh(cols(p, 2) + rr * (cols(rec, 2) + row(3)));
    Tensor h = z * carry[0] + (1.0 - z) * hh;
    return std::pair{std::vector<Tensor>{h}, std::vector<Tensor>{h}};
  };
  std::vector<Tensor> init(in.begin() + 4, in.end());
  ScanOptions o;
  o.reverse = reverse;
  auto [carry, ys] = scan(body, init, std::vector<Tensor>{transpose(projected, {1, 0, 2})}, o);
  std::vector<Tensor> out{transpose(ys[0], {1, 0, 2})};
  out.insert(out.end(), carry.begin(), carry.end());
  return out;
}

}  // namespace

// The gradient op is linear in the cotangents and smooth in the inputs: its own gradient comes
// from differentiating the scan reference twice (nested tapes), so jvp, hessians and
// gradients of gradients work through the fused op.
std::vector<Tensor> RnnBackward::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                     const std::vector<bool>& needed) const {
  std::size_t fi = forward_inputs(cell_), fo = forward_outputs(cell_);
  std::vector<Tensor> xs, gs;
  for (std::size_t i = 0; i < fi; ++i) xs.push_back(identity(in[i]));
  for (std::size_t i = 0; i + 1 < fo; ++i) gs.push_back(identity(in[fi + fo + i]));
  std::vector<GradientSource> all;
  for (const Tensor& t : xs) all.emplace_back(t);
  for (const Tensor& t : gs) all.emplace_back(t);
  GradientTape outer;
  outer.watch(xs);
  outer.watch(gs);
  std::vector<Tensor> first;
  {
    GradientTape inner;
    inner.watch(xs);
    std::vector<Tensor> ys = reference_forward(cell_, reverse_, xs);
    std::vector<GradientSource> src(xs.begin(), xs.end());
    first = inner.gradient(ys, src, gs, UnconnectedGradients::zero);
  }
  std::vector<Tensor> targets, weights;
  for (std::size_t i = 0; i < fi; ++i)
    if (cot[i].defined()) {
      targets.push_back(first[i]);
      weights.push_back(cot[i]);
    }
  std::vector<Tensor> result(in.size());
  if (targets.empty()) return result;
  std::vector<Tensor> g = outer.gradient(targets, all, weights, UnconnectedGradients::zero);
  for (std::size_t i = 0; i < fi; ++i)
    if (needed[i]) result[i] = g[i];
  for (std::size_t i = 0; i + 1 < fo; ++i)
    if (needed[fi + fo + i]) result[fi + fo + i] = g[fi + i];
  return result;
}

void detail::add_rnn_factories(OpFactories& f) {
  f["lstm"] = [](const OpParams& p) { return std::make_shared<RnnForward>(RnnCellKind::lstm, p.flag("reverse")); };
  f["gru"] = [](const OpParams& p) { return std::make_shared<RnnForward>(RnnCellKind::gru, p.flag("reverse")); };
  f["lstm_grad"] = [](const OpParams& p) { return std::make_shared<RnnBackward>(RnnCellKind::lstm, p.flag("reverse")); };
  f["gru_grad"] = [](const OpParams& p) { return std::make_shared<RnnBackward>(RnnCellKind::gru, p.flag("reverse")); };
}

// ---------------------------------------------------------------- public functions
namespace {

// Zeros [batch, units] for x [batch, time, features], also when the batch is dynamic.
Tensor zero_state(const Tensor& x, std::int64_t units) {
  // [n, 1] zeros from the first step's first feature (summed: no steps give zeros too)
  Tensor first = sum(zeros_like(slice(x, {0, 0, 0}, {std::numeric_limits<std::int64_t>::max(), 1, 1})), {1, 2});
  return broadcast_to(reshape(first, Shape{-1, 1}), Shape{kDynamic, units});
}

void expect_defined(const char* op, std::initializer_list<Tensor> ts) {
  for (const Tensor& t : ts)
    if (!t.defined()) fail(op, "called with an undefined tensor");
}

}  // namespace

LstmOutputs lstm(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias,
                 const Tensor& h0, const Tensor& c0, bool reverse) {
  expect_defined("lstm", {x, kernel, recurrent_kernel, bias});
  if (recurrent_kernel.rank() != 2 || bias.rank() != 1 || bias.shape()[0] != 4 * recurrent_kernel.shape()[0])
    fail("lstm", "expects recurrent_kernel [units, 4 * units] and bias [4 * units], got " + recurrent_kernel.spec().str() +
                     ", " + bias.spec().str());
  if (x.rank() != 3) fail("lstm", "x must be [batch, time, features], got " + x.spec().str());
  std::int64_t u = recurrent_kernel.shape()[0];
  Tensor h = h0.defined() ? h0 : zero_state(x, u), c = c0.defined() ? c0 : zero_state(x, u);
  std::vector<Tensor> args{x, kernel, recurrent_kernel, reshape(bias, {4, u}), h, c};
  std::vector<Tensor> out = dispatch(RnnForward(RnnCellKind::lstm, reverse), args);
  return {out[0], out[1], out[2]};
}

GruOutputs gru(const Tensor& x, const Tensor& kernel, const Tensor& recurrent_kernel, const Tensor& bias, const Tensor& h0,
               bool reverse) {
  expect_defined("gru", {x, kernel, recurrent_kernel, bias});
  if (recurrent_kernel.rank() != 2 || bias.rank() != 2 || bias.shape()[0] != 2 ||
      bias.shape()[1] != 3 * recurrent_kernel.shape()[0])
    fail("gru", "expects recurrent_kernel [units, 3 * units] and bias [2, 3 * units] (Keras' reset_after GRU), got " +
                    recurrent_kernel.spec().str() + ", " + bias.spec().str());
  if (x.rank() != 3) fail("gru", "x must be [batch, time, features], got " + x.spec().str());
  std::int64_t u = recurrent_kernel.shape()[0];
  // oneDNN's linear-before-reset bias: z and r take both biases; h keeps them apart (the
  // recurrent one is multiplied by the reset gate).
  Tensor in = reshape(slice(bias, {0}, {1}), {3, u}), rec = reshape(slice(bias, {1}, {2}), {3, u});
  Tensor b = concat({slice(in, {0}, {2}) + slice(rec, {0}, {2}), slice(in, {2}, {3}), slice(rec, {2}, {3})}, 0);
  Tensor h = h0.defined() ? h0 : zero_state(x, u);
  std::vector<Tensor> args{x, kernel, recurrent_kernel, b, h};
  std::vector<Tensor> out = dispatch(RnnForward(RnnCellKind::gru, reverse), args);
  return {out[0], out[1]};
}

}  // namespace ef

namespace ef {
namespace {

// The fused LSTM / GRU as ONNX's LSTM / GRU (time-major, between transposes: onnxruntime runs
// layout 0 only): weights transposed to [1, gates * units, in] with the gates in ONNX's order
// (LSTM i, o, f, c from Keras' i, f, c, o; GRU z, r, h as Keras), biases as
// [1, input bias ++ recurrent bias].
void lower_rnn(const RnnForward& r, onnx::Lowering& to) {
  bool lstm = r.cell() == RnnCellKind::lstm;
  std::int64_t u = to.input_spec(2).shape[0];
  DType t = to.input_spec(0).dtype;
  std::vector<std::int64_t> order;
  for (std::int64_t gate : lstm ? std::vector<std::int64_t>{0, 3, 1, 2} : std::vector<std::int64_t>{0, 1, 2})
    for (std::int64_t k = 0; k < u; ++k) order.push_back(gate * u + k);
  std::string idx = to.ints(order), zero_axis = to.ints({0});
  auto weights = [&](const std::string& w) {  // [in, g*u] -> [1, g*u (ONNX order), in]
    std::string tw = to.fresh("rnn_wt"), gw = to.fresh("rnn_w"), out = to.fresh("rnn_w");
    to.node("Transpose", {w}, {tw}, {{"perm", std::vector<std::int64_t>{1, 0}}});
    to.node("Gather", {tw, idx}, {gw}, {{"axis", 0}});
    to.node("Unsqueeze", {gw, zero_axis}, {out});
    return out;
  };
  std::string w = weights(to.input(1)), rk = weights(to.input(2));
  // Bias rows (src/ops/rnn_op.h): LSTM i, f, c, o; GRU z, r (both biases summed), h input, h recurrent.
  std::string flat = to.fresh("rnn_b");
  to.node("Reshape", {to.input(3), to.ints({4 * u})}, {flat});
  std::string wb = to.fresh("rnn_wb"), rb = to.fresh("rnn_rb"), b = to.fresh("rnn_b"), b1 = to.fresh("rnn_b");
  if (lstm) {
    to.node("Gather", {flat, idx}, {wb}, {{"axis", 0}});
    rb = to.constant(zeros(Shape{4 * u}, t));
  } else {
    std::string zr = to.fresh("rnn_b"), zeros2 = to.constant(zeros(Shape{2 * u}, t));
    to.node("Slice", {flat, to.ints({0}), to.ints({3 * u}), to.ints({0})}, {wb});
    to.node("Slice", {flat, to.ints({3 * u}), to.ints({4 * u}), to.ints({0})}, {zr});
    to.node("Concat", {zeros2, zr}, {rb}, {{"axis", 0}});
  }
  to.node("Concat", {wb, rb}, {b}, {{"axis", 0}});
  to.node("Unsqueeze", {b, zero_axis}, {b1});
  auto state = [&](const std::string& s) {  // [batch, u] -> [1, batch, u]
    std::string out = to.fresh("rnn_state");
    to.node("Unsqueeze", {s, zero_axis}, {out});
    return out;
  };
  std::string x_tnc = to.fresh("rnn_x");
  to.node("Transpose", {to.input(0)}, {x_tnc}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}});
  std::vector<std::string> inputs{x_tnc, w, rk, b1, "", state(to.input(4))};
  if (lstm) inputs.push_back(state(to.input(5)));
  std::string y = to.fresh("rnn_y"), yh = to.fresh("rnn_yh"), yc = to.fresh("rnn_yc");
  std::vector<std::string> outputs{y, yh};
  if (lstm) outputs.push_back(yc);
  std::vector<onnx::Attribute> attrs{{"hidden_size", u}};
  if (r.reverse()) attrs.emplace_back("direction", "reverse");
  if (!lstm) attrs.emplace_back("linear_before_reset", 1);
  to.node(lstm ? "LSTM" : "GRU", inputs, outputs, std::move(attrs));
  std::string seq_tnc = to.fresh("rnn_seq");
  to.node("Squeeze", {y, to.ints({1})}, {seq_tnc});  // [t, 1, batch, u] -> [t, batch, u]
  to.node("Transpose", {seq_tnc}, {to.output(0)}, {{"perm", std::vector<std::int64_t>{1, 0, 2}}});
  to.node("Squeeze", {yh, zero_axis}, {to.output(1)});
  if (lstm) to.node("Squeeze", {yc, zero_axis}, {to.output(2)});
  // The workspace output feeds the gradient op only, which exported graphs do not hold.
}

}  // namespace

void detail::register_rnn_rules() {
  register_op_rules<RnnForward>({.runs_per_example = true, .onnx = lower_rnn});
  register_op_rules<RnnBackward>({.runs_per_example = true, .onnx_unsupported = "a gradient op: exported graphs run inference only"});
}

}  // namespace ef
