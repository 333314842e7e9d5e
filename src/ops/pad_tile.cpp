// pad, tile and repeat: along each axis, output index j reads input index map[j] (or, for
// pad's constant, nothing). One kernel moves whole inner blocks per axis; the gradient sums
// cotangents back through the same maps (AxisMapGrad).
#include <algorithm>
#include <cstring>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/parallel.h"
#include "ops/op_factories.h"
#include "ops/sequence_primitives.h"

namespace ef {
namespace {

std::string ints_str(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::int64_t checked_add(const char* op, std::int64_t a, std::int64_t b, const Shape& in) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(op, "the output of " + in.str() + " would have more than 2^63 - 1 entries on an axis");
  return r;
}

std::int64_t checked_mul(const char* op, std::int64_t a, std::int64_t b, const Shape& in) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(op, "the output of " + in.str() + " would have more than 2^63 - 1 entries on an axis");
  return r;
}

struct Blocks {
  std::int64_t outer = 1, n = 1, inner = 1;
};
Blocks blocks(const Shape& s, int a) {
  Blocks b;
  for (int d = 0; d < a; ++d) b.outer *= s[d];
  b.n = s[a];
  for (int d = a + 1; d < s.rank(); ++d) b.inner *= s[d];
  return b;
}

// One axis of the forward map: out[o, j, :] = in[o, map[j], :] or the constant.
// The result is allocated before the map, whose size it bounds (a huge size fails there,
// with the allocator's error).
Tensor gather_axis(const Tensor& x, int a, const AxisMapping& mapping, const Shape& in_shape, std::int64_t out_dim) {
  Shape s = x.shape();
  Blocks b = blocks(s, a);
  s[a] = out_dim;
  Tensor out = Tensor::empty(x.dtype(), s);
  if (out.num_elements() == 0) return out;
  thread_local std::vector<std::int64_t> map;  // kept between calls: replays do not allocate
  mapping.fill_axis_map(in_shape, a, map);
  double constant = mapping.constant();
  std::int64_t m = s[a];
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T c = saturate_cast<T>(constant);
    const T* p = x.data<T>().data();
    T* o = out.mutable_data<T>().data();
    const std::int64_t* mp = map.data();
    if (b.inner == 1) {  // the last axis: an indexed gather per row
      cpu::parallel_for(b.outer, m, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          const T* src = p + i * b.n;
          T* dst = o + i * m;
          for (std::int64_t j = 0; j < m; ++j) dst[j] = mp[j] >= 0 ? src[mp[j]] : c;
        }
      });
      return;
    }
    cpu::parallel_for(b.outer * m, b.inner, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) {
        std::int64_t i = r / m, j = r % m, src = mp[j];
        T* dst = o + r * b.inner;
        if (src >= 0) std::copy_n(p + (i * b.n + src) * b.inner, b.inner, dst);
        else std::fill_n(dst, b.inner, c);
      }
    });
  });
  return out;
}

// Its adjoint: res[o, map[j], :] += g[o, j, :], res shaped with n along the axis.
Tensor scatter_axis(const Tensor& g, int a, const std::vector<std::int64_t>& map, std::int64_t n) {
  Shape s = g.shape();
  Blocks b = blocks(s, a);
  s[a] = n;
  Tensor out = Tensor::empty(g.dtype(), s);
  if (out.num_elements() == 0) return out;
  std::int64_t m = b.n;
  dispatch_dtype(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* p = g.data<T>().data();
      T* o = out.mutable_data<T>().data();
      cpu::parallel_for(b.outer, m * b.inner, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          T* dst = o + i * n * b.inner;
          std::fill_n(dst, n * b.inner, T(0));
          for (std::int64_t j = 0; j < m; ++j) {
            std::int64_t src = map[static_cast<std::size_t>(j)];
            if (src < 0) continue;
            const T* from = p + (i * m + j) * b.inner;
            T* to = dst + src * b.inner;
            for (std::int64_t e = 0; e < b.inner; ++e) to[e] += from[e];
          }
        }
      });
    }
  });
  return out;
}

// Runs the maps of `m` on x (static shape).
Tensor apply_maps(const AxisMapping& m, const Tensor& x) {
  Tensor cur = x;
  Shape final_shape = m.out_shape(x.shape());
  if (x.num_elements() == 0 || final_shape.num_elements() == 0)  // nothing to read: all padding
    return full(final_shape, m.constant(), x.dtype());
  for (int a = 0; a < x.rank(); ++a) {
    if (m.is_identity(x.shape(), a)) continue;
    cur = gather_axis(cur, a, m, x.shape(), final_shape[a]);
  }
  if (cur.same_as(x)) cur = x.clone();  // a result of its own (callers may write into it)
  return cur;
}

void check_out_shape(const Primitive& op, const AxisMapping& m, const Tensor& x, const Shape& want) {
  if (m.out_shape(x.shape()) != want)
    fail(op.name(), "result " + want.str() + " does not match the input " + x.spec().str());
}

}  // namespace

// ---------------------------------------------------------------- pad
OpParams Pad::parameters() const {
  const char* mode = mode_ == Mode::constant ? "constant" : mode_ == Mode::reflect ? "reflect" : "symmetric";
  OpParams p = OpParams().add("paddings", paddings_).add("mode", Word{mode});
  if (mode_ == Mode::constant) p.add("value", value_);
  return p;
}

Shape Pad::out_shape(const Shape& in) const {
  if (paddings_.size() % 2 != 0) fail(name(), "paddings need a (before, after) pair per axis, got " + ints_str(paddings_));
  if (static_cast<int>(paddings_.size() / 2) > in.rank())
    fail(name(), "paddings " + ints_str(paddings_) + " have " + std::to_string(paddings_.size() / 2) +
                     " pairs for a tensor of rank " + std::to_string(in.rank()) + " (" + in.str() + ")");
  for (auto p : paddings_)
    if (p < 0) fail(name(), "paddings must be >= 0, got " + ints_str(paddings_) + " for " + in.str());
  Shape dims = in;  // dims inline: no allocation on replay
  for (std::size_t a = 0; a < paddings_.size() / 2; ++a) {
    std::int64_t b = paddings_[2 * a], e = paddings_[2 * a + 1], n = dims[static_cast<int>(a)];
    if (n == kDynamic) continue;
    if (mode_ == Mode::reflect && (b > n - 1 || e > n - 1) && (b || e))
      fail(name(), "reflect padding of " + std::to_string(b) + ", " + std::to_string(e) + " on axis " + std::to_string(a) +
                       " needs at most " + std::to_string(n - 1) + " (the axis' size - 1) for " + in.str());
    if (mode_ == Mode::symmetric && (b > n || e > n))
      fail(name(), "symmetric padding of " + std::to_string(b) + ", " + std::to_string(e) + " on axis " + std::to_string(a) +
                       " needs at most " + std::to_string(n) + " (the axis' size) for " + in.str());
    dims[static_cast<int>(a)] = checked_add(name(), checked_add(name(), n, b, in), e, in);
  }
  return dims;
}

bool Pad::is_identity(const Shape&, int a) const {
  return static_cast<std::size_t>(2 * a) >= paddings_.size() ||
         (paddings_[static_cast<std::size_t>(2 * a)] == 0 && paddings_[static_cast<std::size_t>(2 * a + 1)] == 0);
}

void Pad::fill_axis_map(const Shape& in, int a, std::vector<std::int64_t>& map) const {
  std::int64_t b = paddings_[static_cast<std::size_t>(2 * a)], e = paddings_[static_cast<std::size_t>(2 * a + 1)], n = in[a];
  map.resize(static_cast<std::size_t>(n + b + e));
  for (std::int64_t j = 0; j < n + b + e; ++j) {
    std::int64_t s = j - b;
    if (mode_ == Mode::constant) s = s >= 0 && s < n ? s : -1;
    else if (mode_ == Mode::reflect) s = s < 0 ? -s : s >= n ? 2 * (n - 1) - s : s;
    else s = s < 0 ? -s - 1 : s >= n ? 2 * n - 1 - s : s;
    map[static_cast<std::size_t>(j)] = s;
  }
}

std::vector<TensorSpec> Pad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  return {{in[0].dtype(), out_shape(in[0].shape()), {}}};
}

void Pad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  check_out_shape(*this, *this, in[0], specs[0].shape);
  out[0] = apply_maps(*this, in[0]);
}

std::vector<Tensor> Pad::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                             const std::vector<bool>&) const {
  return {dispatch1(AxisMapGrad(clone()), {cot[0], in[0]})};
}

// ---------------------------------------------------------------- tile
Shape Tile::out_shape(const Shape& in) const {
  if (static_cast<int>(multiples_.size()) != in.rank())
    fail(name(), "needs one multiple per axis: multiples " + ints_str(multiples_) + " for " + in.str());
  Shape dims = in;
  for (int a = 0; a < dims.rank(); ++a) {
    std::int64_t m = multiples_[static_cast<std::size_t>(a)];
    if (m < 0) fail(name(), "multiples must be >= 0, got " + ints_str(multiples_));
    if (dims[a] != kDynamic) dims[a] = checked_mul(name(), dims[a], m, in);
    else if (m == 0) dims[a] = 0;
  }
  return dims;
}

bool Tile::is_identity(const Shape&, int a) const { return multiples_[static_cast<std::size_t>(a)] == 1; }

void Tile::fill_axis_map(const Shape& in, int a, std::vector<std::int64_t>& map) const {
  std::int64_t m = multiples_[static_cast<std::size_t>(a)], n = in[a];
  map.resize(static_cast<std::size_t>(n * m));
  for (std::int64_t j = 0; j < n * m; ++j) map[static_cast<std::size_t>(j)] = j % n;
}

std::vector<TensorSpec> Tile::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  return {{in[0].dtype(), out_shape(in[0].shape()), {}}};
}

void Tile::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  check_out_shape(*this, *this, in[0], specs[0].shape);
  out[0] = apply_maps(*this, in[0]);
}

std::vector<Tensor> Tile::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                              const std::vector<bool>&) const {
  return {dispatch1(AxisMapGrad(clone()), {cot[0], in[0]})};
}

// ---------------------------------------------------------------- repeat
Shape Repeat::out_shape(const Shape& in) const {
  if (in.rank() == 0) fail(name(), "needs a tensor of rank >= 1 (no axis: ef::repeat flattens), got " + in.str());
  int a = normalize_axis(axis_, in.rank(), name());
  if (repeats_.empty()) fail(name(), "needs at least one repeat count");
  for (auto r : repeats_)
    if (r < 0) fail(name(), "repeats must be >= 0, got " + ints_str(repeats_));
  Shape dims = in;
  std::int64_t n = dims[a];
  if (repeats_.size() > 1) {
    if (n != kDynamic && n != static_cast<std::int64_t>(repeats_.size()))
      fail(name(), std::to_string(repeats_.size()) + " repeat counts for axis " + std::to_string(axis_) + " of size " +
                       std::to_string(n) + " (" + in.str() + "): give one count or one per element");
    std::int64_t total = 0;
    for (auto r : repeats_) total = checked_add(name(), total, r, in);
    dims[a] = total;
  } else if (n != kDynamic) {
    dims[a] = checked_mul(name(), n, repeats_[0], in);
  } else if (repeats_[0] == 0) {
    dims[a] = 0;
  }
  return dims;
}

bool Repeat::is_identity(const Shape& in, int a) const {
  return a != normalize_axis(axis_, in.rank(), name()) || (repeats_.size() == 1 && repeats_[0] == 1);
}

void Repeat::fill_axis_map(const Shape& in, int a, std::vector<std::int64_t>& map) const {
  std::int64_t n = in[a];
  map.clear();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t r = repeats_.size() == 1 ? repeats_[0] : repeats_[static_cast<std::size_t>(i)];
    map.insert(map.end(), static_cast<std::size_t>(r), i);
  }
}

std::vector<TensorSpec> Repeat::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  return {{in[0].dtype(), out_shape(in[0].shape()), {}}};
}

void Repeat::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  check_out_shape(*this, *this, in[0], specs[0].shape);
  out[0] = apply_maps(*this, in[0]);
}

std::vector<Tensor> Repeat::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                const std::vector<bool>&) const {
  return {dispatch1(AxisMapGrad(clone()), {cot[0], in[0]})};
}

// ---------------------------------------------------------------- the gradient
AxisMapGrad::AxisMapGrad(std::shared_ptr<const Primitive> forward)
    : forward_(std::move(forward)), map_(dynamic_cast<const AxisMapping*>(forward_.get())) {
  if (!map_) fail("axis_map_grad", std::string("'") + forward_->name() + "' is not pad, tile or repeat");
}

const char* AxisMapGrad::name() const {
  std::string_view f = forward_->name();
  return f == "pad" ? "pad_grad" : f == "tile" ? "tile_grad" : "repeat_grad";
}

std::vector<TensorSpec> AxisMapGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  if (in[0].dtype() != in[1].dtype()) fail(kWrongType, name(), "dtypes differ: " + describe(in, " vs "));
  if (in[0].dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + in[0].spec().str());
  Shape want = map_->out_shape(in[1].shape());
  bool ok = want.rank() == in[0].rank();
  for (int a = 0; ok && a < want.rank(); ++a)
    ok = want[a] == in[0].shape()[a] || want[a] == kDynamic || in[0].shape()[a] == kDynamic;
  if (!ok) fail(name(), "gradient " + in[0].spec().str() + " does not fit the result " + want.str() + " of " + in[1].spec().str());
  return {{in[0].dtype(), in[1].shape(), {}}};
}

void AxisMapGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& xs = specs[0].shape;
  if (map_->out_shape(xs) != in[0].shape())
    fail(name(), "gradient " + in[0].spec().str() + " does not fit the result " + map_->out_shape(xs).str() + " of " + specs[0].str());
  if (xs.num_elements() == 0 || in[0].num_elements() == 0) {
    out[0] = zeros(xs, specs[0].dtype);
    return;
  }
  Tensor cur = in[0];
  for (int a = 0; a < xs.rank(); ++a) {
    if (map_->is_identity(xs, a)) continue;
    thread_local std::vector<std::int64_t> map;
    map_->fill_axis_map(xs, a, map);
    cur = scatter_axis(cur, a, map, xs[a]);
  }
  out[0] = cur.same_as(in[0]) ? in[0].clone() : cur;
}

std::vector<Tensor> AxisMapGrad::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                                     const std::vector<bool>&) const {
  // The adjoint of the scatter is the gather, with zeros where pad wrote its constant.
  if (auto* p = dynamic_cast<const Pad*>(forward_.get())) return {dispatch1(Pad(p->paddings(), p->mode(), 0.0), {cot[0]}), Tensor()};
  return {dispatch1(*forward_, {cot[0]}), Tensor()};
}

// ---------------------------------------------------------------- public functions
Tensor pad(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings, const std::string& mode,
           double constant_value) {
  std::string m = mode;
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  Pad::Mode md;
  if (m == "constant") md = Pad::Mode::constant;
  else if (m == "reflect") md = Pad::Mode::reflect;
  else if (m == "symmetric") md = Pad::Mode::symmetric;
  else fail("pad", "mode must be \"constant\", \"reflect\" or \"symmetric\", got \"" + mode + "\"");
  std::vector<std::int64_t> flat;
  for (auto [b, e] : paddings) {
    flat.push_back(b);
    flat.push_back(e);
  }
  return dispatch1(Pad(std::move(flat), md, md == Pad::Mode::constant ? constant_value : 0.0), {x});
}

Tensor tile(const Tensor& x, std::vector<std::int64_t> multiples) { return dispatch1(Tile(std::move(multiples)), {x}); }

Tensor repeat(const Tensor& x, std::vector<std::int64_t> repeats, std::optional<int> axis) {
  if (!axis) {
    if (!x.defined()) fail("repeat", "an input tensor is undefined (default-constructed)");
    return dispatch1(Repeat(std::move(repeats), 0), {reshape(x, {-1})});
  }
  return dispatch1(Repeat(std::move(repeats), *axis), {x});
}

Tensor repeat(const Tensor& x, std::int64_t repeats, std::optional<int> axis) {
  return repeat(x, std::vector<std::int64_t>{repeats}, axis);
}

namespace {
std::shared_ptr<Primitive> make_pad(const OpParams& p) {
  std::string m = p.word("mode");
  Pad::Mode md = m == "constant" ? Pad::Mode::constant : m == "reflect" ? Pad::Mode::reflect : Pad::Mode::symmetric;
  if (m != "constant" && m != "reflect" && m != "symmetric") p.bad("unknown pad mode " + m);
  return std::make_shared<Pad>(p.ints("paddings"), md, md == Pad::Mode::constant ? p.real("value") : 0.0);
}
std::shared_ptr<Primitive> make_tile(const OpParams& p) { return std::make_shared<Tile>(p.ints("multiples")); }
std::shared_ptr<Primitive> make_repeat(const OpParams& p) { return std::make_shared<Repeat>(p.ints("repeats"), p.axis("axis")); }
}  // namespace

void detail::add_pad_tile_factories(detail::OpFactories& f) {
  f["pad"] = make_pad;
  f["tile"] = make_tile;
  f["repeat"] = make_repeat;
  f["pad_grad"] = [](const OpParams& p) { return std::make_shared<AxisMapGrad>(make_pad(p)); };
  f["tile_grad"] = [](const OpParams& p) { return std::make_shared<AxisMapGrad>(make_tile(p)); };
  f["repeat_grad"] = [](const OpParams& p) { return std::make_shared<AxisMapGrad>(make_repeat(p)); };
}

}  // namespace ef
