// ONNX LSTM (gates i, o, f, c) and GRU (gates z, r, h), forward, reverse or bidirectional,
// in either layout. The input projection of all steps is one matmul; the steps (one matmul
// with R each) are unrolled over a static sequence length, or an ef::scan over a dynamic one.
#include "eagerflow/core/error.h"
#include "eagerflow/function/scan.h"
#include "eagerflow/ops/array_ops.h"
#include "eagerflow/ops/ops.h"
#include "io/onnx_import_program.h"

namespace ef::onnx::detail {
namespace {

using Out = std::vector<Tensor>;
using Act = Tensor (*)(const Tensor&);

Act activation(NodeContext& c, const std::string& name) {
  if (name == "Sigmoid") return sigmoid;
  if (name == "Tanh") return tanh;
  if (name == "Relu") return relu;
  c.unsupported("activation '" + name + "' (Sigmoid, Tanh and Relu are supported)");
}

struct Rnn {
  int dirs = 1;
  std::int64_t hidden = 0, seq = 0;
  bool batch_first = false;
  std::vector<bool> reverse;   // per direction
  std::vector<Act> acts;       // per direction, the op's count of activations each
  Tensor x;                    // [seq, batch, input]
};

Rnn common(NodeContext& c, std::int64_t gates, std::size_t acts_per_dir, const std::vector<std::string>& default_acts) {
  Rnn r;
  std::string direction = c.attr_string("direction", "forward");
  if (direction == "bidirectional") r.dirs = 2;
  else if (direction != "forward" && direction != "reverse") c.bad("direction '" + direction + "'");
  for (int d = 0; d < r.dirs; ++d) r.reverse.push_back(direction == "reverse" || d == 1);
  if (c.has_attr("clip")) c.unsupported("clip");
  r.hidden = c.attr_int("hidden_size");
  r.batch_first = c.attr_int("layout", 0) != 0;
  r.x = r.batch_first ? transpose(c.in(0), {1, 0, 2}) : c.in(0);
  if (r.x.rank() != 3) c.bad("X must be 3-D");
  r.seq = r.x.shape()[0];
  const Tensor &w = c.in(1), &rw = c.in(2);
  if (r.hidden <= 0 || w.rank() != 3 || rw.rank() != 3 || w.shape()[0] != r.dirs || rw.shape()[0] != r.dirs ||
      w.shape()[1] != gates * r.hidden || rw.shape()[1] != gates * r.hidden || rw.shape()[2] != r.hidden ||
      (r.x.shape()[2] != kDynamic && w.shape()[2] != r.x.shape()[2]))
    c.bad("W, R and hidden_size disagree");
  if (c.has(4)) {
    const Tensor& lens = c.in(4);
    bool full = !lens.is_symbolic() && r.seq != kDynamic;
    if (full)
      for (auto v : cast(lens, DType::int64).to_vector<std::int64_t>()) full = full && v == r.seq;
    if (!full) c.unsupported("sequence_lens other than the full length");
  }
  std::vector<std::string> names = c.attr_strings("activations");
  if (names.empty())
    for (int d = 0; d < r.dirs; ++d) names.insert(names.end(), default_acts.begin(), default_acts.end());
  if (names.size() != acts_per_dir * static_cast<std::size_t>(r.dirs)) c.bad("wrong number of activations");
  for (const auto& n : names) r.acts.push_back(activation(c, n));
  return r;
}

// The initial state for direction d: given ([dirs, batch, H], or [batch, dirs, H] in layout 1),
// or zeros shaped like `like` (a [batch, H] value, so a dynamic batch works too).
Tensor initial(NodeContext& c, const Rnn& r, std::size_t input, int d, const Tensor& like) {
  if (!c.has(input)) {
    std::int64_t b = like.shape()[0];
    if (b != kDynamic) return zeros(Shape{b, r.hidden}, like.dtype());
    return broadcast_like(zeros(Shape{1, r.hidden}, like.dtype()), like);
  }
  Tensor h = c.in(input);
  if (h.rank() != 3) c.bad("initial states must be 3-D");
  if (r.batch_first) h = transpose(h, {1, 0, 2});
  return squeeze(slice(h, {d, 0, 0}, {d + 1, std::int64_t{1} << 40, std::int64_t{1} << 40}), {0});
}

// Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]) and the final states [dirs, batch, H].
Out outputs(const Rnn& r, const std::vector<Tensor>& ys, const std::vector<std::vector<Tensor>>& finals) {
  Tensor y = stack(ys, 1);
  if (r.batch_first) y = transpose(y, {2, 0, 1, 3});
  Out out{y};
  for (const auto& f : finals) {
    Tensor s = stack(f, 0);
    out.push_back(r.batch_first ? transpose(s, {1, 0, 2}) : s);
  }
  return out;
}

// One step: (states, projected input of the step) -> new states; the first state is the output.
using Step = std::function<std::vector<Tensor>(const std::vector<Tensor>& state, const Tensor& x)>;

// Runs `step` over xw [seq, batch, gates*H] from `init`, in time order or reversed; returns the
// outputs [seq, batch, H] in time order and the final states.
std::pair<Tensor, std::vector<Tensor>> run_steps(NodeContext& c, const Rnn& r, bool reverse, const Tensor& xw,
                                                 std::vector<Tensor> init, const Step& step) {
  if (r.seq == 0) c.bad("an empty sequence");
  if (r.seq == kDynamic) {
    ScanBody body = [&step](const std::vector<Tensor>& carry, const std::vector<Tensor>& x) {
      std::vector<Tensor> next = step(carry, x.at(0));
      return std::pair{next, std::vector<Tensor>{next[0]}};
    };
    auto [carry, ys] = scan(body, std::move(init), {xw}, ScanOptions{.reverse = reverse});
    return {ys.at(0), carry};
  }
  std::vector<Tensor> steps = unstack(xw, 0), y(static_cast<std::size_t>(r.seq));
  std::vector<Tensor> state = std::move(init);
  for (std::int64_t k = 0; k < r.seq; ++k) {
    std::size_t t = static_cast<std::size_t>(reverse ? r.seq - 1 - k : k);
    state = step(state, steps[t]);
    y[t] = state[0];
  }
  return {stack(y, 0), state};
}

// A [batch, H] slice of the projected input: what zero initial states are shaped like.
Tensor batch_by_h(const Tensor& xw, std::int64_t h) {
  Tensor first = gather(xw, scalar<std::int64_t>(0), 0);  // [batch, gates*H], also where seq is dynamic
  return slice(first, {0, 0}, {std::int64_t{1} << 40, h});
}

Tensor row(const Tensor& t, int d) { return squeeze(slice(t, {d}, {d + 1}), {0}); }

Out lstm(NodeContext& c) {
  Rnn r = common(c, 4, 3, {"Sigmoid", "Tanh", "Tanh"});
  if (c.has(7)) c.unsupported("peepholes (input P)");
  if (c.attr_int("input_forget", 0) != 0) c.unsupported("input_forget=1");
  std::int64_t h = r.hidden;
  std::vector<Tensor> ys, hs, cs;
  for (int d = 0; d < r.dirs; ++d) {
    Act f = r.acts[static_cast<std::size_t>(3 * d)], g = r.acts[static_cast<std::size_t>(3 * d + 1)],
        act_h = r.acts[static_cast<std::size_t>(3 * d + 2)];
    Tensor w = row(c.in(1), d), rw = row(c.in(2), d);
    Tensor xw = matmul(r.x, w, false, true);  // [seq, batch, 4H]
    if (c.has(3)) {
      Tensor b = row(c.in(3), d);
      if (b.rank() != 1 || b.shape()[0] != 8 * h) c.bad("B must be [dirs, 8*hidden_size]");
      xw = add(xw, add(slice(b, {0}, {4 * h}), slice(b, {4 * h}, {8 * h})));
    }
    if (r.seq == 0) c.bad("an empty sequence");
    Tensor like = batch_by_h(xw, h);
    Step step = [&](const std::vector<Tensor>& state, const Tensor& x) {
      std::vector<Tensor> gates = split(add(x, matmul(state[0], rw, false, true)), 4, 1);  // i, o, f, c
      Tensor i = f(gates[0]), o = f(gates[1]), fg = f(gates[2]), cand = g(gates[3]);
      Tensor ct = add(mul(fg, state[1]), mul(i, cand));
      return std::vector<Tensor>{mul(o, act_h(ct)), ct};
    };
    auto [y, final] = run_steps(c, r, r.reverse[static_cast<std::size_t>(d)], xw,
                                {initial(c, r, 5, d, like), initial(c, r, 6, d, like)}, step);
    ys.push_back(y);
    hs.push_back(final[0]);
    cs.push_back(final[1]);
  }
  return outputs(r, ys, {hs, cs});
}

Out gru(NodeContext& c) {
  Rnn r = common(c, 3, 2, {"Sigmoid", "Tanh"});
  bool before_reset = c.attr_int("linear_before_reset", 0) != 0;
  std::int64_t h = r.hidden;
  std::vector<Tensor> ys, hs;
  for (int d = 0; d < r.dirs; ++d) {
    Act f = r.acts[static_cast<std::size_t>(2 * d)], g = r.acts[static_cast<std::size_t>(2 * d + 1)];
    Tensor w = row(c.in(1), d), rw = row(c.in(2), d);
    std::vector<Tensor> r3 = split(rw, 3, 0);  // Rz, Rr, Rh: [H, H] each
    Tensor rzr = concat({r3[0], r3[1]}, 0);
    Tensor xw = matmul(r.x, w, false, true);  // [seq, batch, 3H]
    Tensor rb_zr, rb_h;
    if (c.has(3)) {
      Tensor b = row(c.in(3), d);
      if (b.rank() != 1 || b.shape()[0] != 6 * h) c.bad("B must be [dirs, 6*hidden_size]");
      xw = add(xw, slice(b, {0}, {3 * h}));
      rb_zr = slice(b, {3 * h}, {5 * h});
      rb_h = slice(b, {5 * h}, {6 * h});
    }
    if (r.seq == 0) c.bad("an empty sequence");
    Step step = [&](const std::vector<Tensor>& state, const Tensor& x) {
      const Tensor& ht = state[0];
      std::vector<Tensor> xg = split(x, 3, 1);  // z, r, h
      Tensor hr = matmul(ht, rzr, false, true);
      if (rb_zr.defined()) hr = add(hr, rb_zr);
      std::vector<Tensor> hzr = split(hr, 2, 1);
      Tensor z = f(add(xg[0], hzr[0])), rs = f(add(xg[1], hzr[1]));
      Tensor cand;
      if (before_reset) {
        Tensor hh = matmul(ht, r3[2], false, true);
        if (rb_h.defined()) hh = add(hh, rb_h);
        cand = g(add(xg[2], mul(rs, hh)));
      } else {
        Tensor hh = matmul(mul(rs, ht), r3[2], false, true);
        if (rb_h.defined()) hh = add(hh, rb_h);
        cand = g(add(xg[2], hh));
      }
      return std::vector<Tensor>{add(mul(sub(scalar_like(z, 1), z), cand), mul(z, ht))};
    };
    auto [y, final] = run_steps(c, r, r.reverse[static_cast<std::size_t>(d)], xw, {initial(c, r, 5, d, batch_by_h(xw, h))}, step);
    ys.push_back(y);
    hs.push_back(final[0]);
  }
  return outputs(r, ys, {hs});
}

}  // namespace

void add_rnn_ops(std::map<std::string, OpFn>& t) {
  t["LSTM"] = lstm;
  t["GRU"] = gru;
}

}  // namespace ef::onnx::detail
