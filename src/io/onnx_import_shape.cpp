// ONNX shape and layout ops. Shape vectors known at trace time fold into constants (the
// Shape -> Gather -> Concat -> Reshape chains exporters emit); where a dim is dynamic, what is
// known of the vector travels beside it (NodeContext::known) so that Reshape and Expand can
// still take a static form with one inferred (-1) dim.
#include <algorithm>
#include <cmath>
#include <limits>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/array_ops.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/scatter_nd.h"
#include "io/onnx_import_program.h"

namespace ef::onnx::detail {
namespace {

using Out = std::vector<Tensor>;
using Ints = std::vector<std::int64_t>;

Tensor int_vector(const Ints& v) { return tensor(v, Shape{static_cast<std::int64_t>(v.size())}); }
bool all_static(const Ints& v) { return std::none_of(v.begin(), v.end(), [](std::int64_t d) { return d == kDynamic; }); }
Ints dims_of(const Tensor& x) { return Ints(x.shape().begin(), x.shape().end()); }

// A shape vector from its known values: a constant when every one is known, else a runtime
// value (`runtime`) with the known ones recorded beside it.
Out shape_vector(NodeContext& c, const KnownDims& known, const Tensor& runtime) {
  c.partial_out = {known};
  if (all_static(known.values)) return {int_vector(known.values)};
  return {runtime};
}

KnownDims pick(const KnownDims& k, const Ints& at) {
  KnownDims out;
  for (auto i : at) {
    out.values.push_back(k.values.at(static_cast<std::size_t>(i)));
    out.origin.push_back(k.origin.at(static_cast<std::size_t>(i)));
  }
  return out;
}

// Python-style clamping of ONNX's Slice bounds for a dim of `d` (static).
void clamp_slice(std::int64_t d, std::int64_t step, std::int64_t& b, std::int64_t& e) {
  auto norm = [d](std::int64_t v) { return v < 0 ? std::max<std::int64_t>(v + d, -1) : std::min(v, d); };
  b = norm(b);
  e = norm(e);
  if (step > 0) {
    b = std::clamp<std::int64_t>(b, 0, d);
    e = std::clamp<std::int64_t>(e, 0, d);
  } else {
    b = std::clamp<std::int64_t>(b, -1, d - 1);
    e = std::clamp<std::int64_t>(e, -1, d - 1);
  }
}

Ints sorted_axes(NodeContext& c, const Ints& axes, int rank) {
  Ints out;
  for (auto a : axes) out.push_back(c.axis(a, rank));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) c.bad("repeated axes");
  return out;
}

Ints axes_arg(NodeContext& c, std::size_t input) {
  if (c.has_attr("axes")) return c.attr_ints("axes");
  if (c.has(input)) return c.ints(input);
  return {};
}

Out slice_op(NodeContext& c) {
  const Tensor& x = c.in(0);
  Ints starts = c.ints(1), ends = c.ints(2);
  Ints axes = c.has(3) ? c.ints(3) : Ints{};
  Ints steps = c.has(4) ? c.ints(4) : Ints{};
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.bad("starts, ends, axes and steps differ in length");
  int r = x.rank();
  Ints b(static_cast<std::size_t>(r), 0), e(static_cast<std::size_t>(r), std::numeric_limits<std::int64_t>::max()),
      s(static_cast<std::size_t>(r), 1);
  std::vector<int> flip;
  std::vector<bool> seen(static_cast<std::size_t>(r), false);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    int a = c.axis(axes[i], r);
    if (seen[static_cast<std::size_t>(a)]) c.bad("repeated axes");
    seen[static_cast<std::size_t>(a)] = true;
    if (steps[i] == 0) c.bad("a step is 0");
    // Beyond any dim (< 2^31) a step's size makes no difference; bounded, negating it is safe.
    steps[i] = std::clamp<std::int64_t>(steps[i], -(std::int64_t{1} << 40), std::int64_t{1} << 40);
    std::int64_t d = x.shape()[a];
    std::int64_t bi = starts[i], ei = ends[i], si = steps[i];
    if (d == kDynamic) {
      if (si != 1) c.unsupported("a step other than 1 along a dynamic dim");
      b[static_cast<std::size_t>(a)] = bi;
      e[static_cast<std::size_t>(a)] = ei;
      continue;
    }
    clamp_slice(d, si, bi, ei);
    if (si < 0) {  // as a positive slice of the axis reversed
      flip.push_back(a);
      bi = d - 1 - bi;
      ei = d - 1 - ei;
      si = -si;
    }
    b[static_cast<std::size_t>(a)] = bi;
    e[static_cast<std::size_t>(a)] = std::max(ei, bi);
    s[static_cast<std::size_t>(a)] = si;
  }
  // Bounds beyond int32 along dynamic dims mean "to the end": keep them within what the op's
  // Python-style clamping handles.
  for (auto& v : e) v = std::min<std::int64_t>(v, std::int64_t{1} << 40);
  for (auto& v : b) v = std::max<std::int64_t>(v, -(std::int64_t{1} << 40));
  Tensor src = flip.empty() ? x : reverse(x, flip);
  if (auto k = c.known_dims(0); k && x.rank() == 1) {
    std::int64_t d = static_cast<std::int64_t>(k->values.size());
    std::int64_t bi = starts[0], ei = ends[0], si = steps[0];
    clamp_slice(d, si, bi, ei);
    Ints at;
    for (std::int64_t i = bi; si > 0 ? i < ei : i > ei; i += si) at.push_back(i);
    return shape_vector(c, pick(*k, at), slice(src, b, e, s));
  }
  return {slice(src, b, e, s)};
}

// Gather along `axis`; indices known at trace time may be negative (ONNX counts them from the end).
Out gather_op(NodeContext& c) {
  const Tensor& x = c.in(0);
  Tensor idx = c.in(1);
  int axis = c.axis(c.attr_int("axis", 0), x.rank());
  std::int64_t d = x.shape()[axis];
  if (!idx.is_symbolic() && d != kDynamic) {
    Ints v = c.ints(1);
    for (auto& i : v) {
      if (i < -d || i >= d) c.bad("index " + std::to_string(i) + " is out of range for a dim of " + std::to_string(d));
      if (i < 0) i += d;
    }
    idx = tensor(v, idx.shape());
    if (auto k = c.known_dims(0); k && x.rank() == 1) {
      KnownDims picked = pick(*k, v);
      c.partial_out = {picked};
      if (all_static(picked.values)) return {reshape(int_vector(picked.values), idx.shape())};
      return {gather(x, idx, axis)};
    }
  }
  return {gather(x, idx, axis)};
}

// ONNX Reshape's target: 0 copies the input's dim (unless allowzero), -1 is inferred. Dims
// known only at run time: one alone becomes the inferred dim; besides, a dynamic dim of the
// input copied to its own place (x.view(x.size(0), -1)) leaves the -1 computable from the
// input's static dims, and becomes the inferred one itself.
Shape reshape_target(NodeContext& c, const Tensor& x, KnownDims target) {
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  Ints& t = target.values;
  if (t.size() > 32) c.bad("a shape of rank above 32");
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == 0 && !allowzero) {
      if (static_cast<int>(i) >= x.rank()) c.bad("a 0 in the shape beyond the input's rank");
      t[i] = x.shape()[static_cast<int>(i)];
      target.origin[i] = {x.impl_ptr().get(), static_cast<int>(i)};
    } else if (t[i] < -1 || t[i] > (std::int64_t{1} << 31)) {
      c.bad("shape entry " + std::to_string(t[i]));
    }
  }
  auto count = [&](std::int64_t v) { return std::count(t.begin(), t.end(), v); };
  // kDynamic is -1: one entry unknown or inferred is what reshape takes as it is.
  if (count(-1) <= 1) return Shape(t);
  std::vector<bool> in_place(t.size(), false);
  std::int64_t x_static = 1, t_static = 1;
  std::size_t n_in_place = 0, inferred = t.size();
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] != kDynamic) {
      t_static *= t[i];
      continue;
    }
    if (target.origin[i].first == x.impl_ptr().get() && target.origin[i].second == static_cast<int>(i)) {
      in_place[i] = true;
      ++n_in_place;
    } else if (inferred == t.size() && target.origin[i].first == nullptr) {
      inferred = i;  // the file's own -1
    } else {
      c.unsupported("the target shape has several dims known only at run time; call the model with static shapes");
    }
  }
  for (int d = 0; d < x.rank(); ++d) {
    bool copied = static_cast<std::size_t>(d) < t.size() && in_place[static_cast<std::size_t>(d)];
    if (copied) continue;
    if (x.shape()[d] == kDynamic)
      c.unsupported("the target shape has several dims known only at run time; call the model with static shapes");
    x_static *= x.shape()[d];
  }
  if (inferred < t.size()) {
    if (t_static == 0 || x_static % t_static != 0) c.bad("cannot reshape " + x.shape().str() + " to the shape given");
    t[inferred] = x_static / t_static;
  }
  if (n_in_place > 1)
    c.unsupported("the target shape copies several dynamic dims; call the model with static shapes");
  return Shape(t);
}

}  // namespace

void add_shape_ops(std::map<std::string, OpFn>& t) {
  t["Shape"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    int r = x.rank();
    std::int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
    auto clampi = [r](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + r : v, 0, r); };
    start = clampi(start);
    end = std::max(clampi(end), start);
    KnownDims part;
    for (std::int64_t d = start; d < end; ++d) {
      part.values.push_back(x.shape()[static_cast<int>(d)]);
      part.origin.emplace_back(x.impl_ptr().get(), static_cast<int>(d));
    }
    if (all_static(part.values)) return shape_vector(c, part, Tensor());
    return shape_vector(c, part, slice(shape(x), {start}, {end}));
  };
  t["Size"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    if (all_static(dims_of(x))) return Out{scalar<std::int64_t>(x.num_elements())};
    return Out{size(x)};
  };
  t["Reshape"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    auto k = c.known_dims(1);
    if (!k) c.unsupported("the target shape must be known when the graph is traced");
    return Out{reshape(x, reshape_target(c, x, *k))};
  };
  t["Flatten"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    int axis = static_cast<int>(c.attr_int("axis", 1));
    if (axis < 0) axis += x.rank();
    if (axis < 0 || axis > x.rank()) c.bad("axis out of range");
    std::int64_t outer = 1, inner = 1;
    bool outer_dyn = false, inner_dyn = false;
    for (int d = 0; d < x.rank(); ++d) {
      std::int64_t v = x.shape()[d];
      bool& dyn = d < axis ? outer_dyn : inner_dyn;
      if (v == kDynamic) dyn = true;
      else (d < axis ? outer : inner) *= v;
    }
    if (outer_dyn && inner_dyn) c.unsupported("dynamic dims on both sides of the axis");
    return Out{reshape(x, Shape{outer_dyn ? -1 : outer, inner_dyn ? -1 : inner})};
  };
  t["Transpose"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    Ints perm = c.attr_ints("perm");
    std::vector<int> p;
    if (perm.empty())
      for (int d = x.rank() - 1; d >= 0; --d) p.push_back(d);
    else {
      if (static_cast<int>(perm.size()) != x.rank()) c.bad("perm's length differs from the rank");
      Ints sorted = sorted_axes(c, perm, x.rank());
      (void)sorted;
      for (auto v : perm) p.push_back(c.axis(v, x.rank()));
    }
    return Out{transpose(x, p)};
  };
  t["Squeeze"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    Ints axes = axes_arg(c, 1);
    std::vector<int> ax;
    if (axes.empty()) {
      for (int d = 0; d < x.rank(); ++d) {
        if (x.shape()[d] == kDynamic) c.unsupported("squeezing all 1-dims with dynamic dims");
        if (x.shape()[d] == 1) ax.push_back(d);
      }
    } else {
      for (auto a : sorted_axes(c, axes, x.rank())) {
        if (x.shape()[static_cast<int>(a)] != 1 && x.shape()[static_cast<int>(a)] != kDynamic)
          c.bad("cannot squeeze axis " + std::to_string(a) + " of " + x.shape().str());
        ax.push_back(static_cast<int>(a));
      }
    }
    c.partial_out = {c.known_dims(0)};
    Tensor y = ax.empty() ? identity(x) : squeeze(x, ax);
    return Out{y};
  };
  t["Unsqueeze"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    Ints axes = axes_arg(c, 1);
    int out_rank = x.rank() + static_cast<int>(axes.size());
    Tensor y = x;
    for (auto a : sorted_axes(c, axes, out_rank)) y = expand_dims(y, static_cast<int>(a));
    c.partial_out = {c.known_dims(0)};
    return Out{identity(y)};
  };
  t["Concat"] = [](NodeContext& c) {
    std::vector<Tensor> xs;
    bool all_known = true;
    KnownDims joined;
    for (std::size_t i = 0; i < c.num_inputs(); ++i) {
      xs.push_back(c.in(i));
      auto k = c.known_dims(i);
      if (k && xs.back().rank() == 1) {
        joined.values.insert(joined.values.end(), k->values.begin(), k->values.end());
        joined.origin.insert(joined.origin.end(), k->origin.begin(), k->origin.end());
      } else {
        all_known = false;
      }
    }
    const Ints& vals = joined.values;
    if (xs.empty()) c.bad("no inputs");
    int axis = c.axis(c.attr_int("axis"), xs[0].rank());
    if (all_known) {
      // Mixed constant and runtime pieces: the constants made the dtype of the others.
      if (all_static(vals)) {
        c.partial_out = {joined};
        return Out{cast(int_vector(vals), xs[0].dtype())};
      }
      for (auto& x : xs) x = cast(x, xs[0].dtype());
      c.partial_out = {joined};
    }
    return Out{concat(xs, axis)};
  };
  t["Split"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    int axis = c.axis(c.attr_int("axis", 0), x.rank());
    Ints sizes = c.attr_ints("split");
    if (c.has(1)) sizes = c.ints(1);
    std::vector<Tensor> parts;
    if (sizes.empty()) {
      std::int64_t n = c.attr_int("num_outputs", static_cast<std::int64_t>(c.num_outputs()));
      std::int64_t d = x.shape()[axis];
      if (n <= 0) c.bad("no outputs");
      if (d == kDynamic) c.unsupported("splitting a dynamic dim");
      std::int64_t chunk = (d + n - 1) / n;
      for (std::int64_t i = 0; i < n; ++i) sizes.push_back(std::max<std::int64_t>(0, std::min(chunk, d - i * chunk)));
    }
    if (sizes.size() != c.num_outputs()) c.bad("the split sizes do not match the number of outputs");
    return split(x, sizes, axis);
  };
  t["Slice"] = slice_op;
  t["Gather"] = gather_op;
  t["GatherElements"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    return Out{take_along_axis(x, c.in(1), c.axis(c.attr_int("axis", 0), x.rank()))};
  };
  t["GatherND"] = [](NodeContext& c) {
    return Out{gather_nd(c.in(0), c.in(1), static_cast<int>(c.attr_int("batch_dims", 0)))};
  };
  t["Expand"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    auto k = c.known(1);
    if (!k) c.unsupported("the target shape must be known when the graph is traced");
    Ints target = *k;
    if (target.size() > 32) c.bad("a shape of rank above 32");
    int r = std::max<int>(x.rank(), static_cast<int>(target.size()));
    Ints out(static_cast<std::size_t>(r));
    for (int i = 0; i < r; ++i) {
      int xi = i - (r - x.rank()), ti = i - (r - static_cast<int>(target.size()));
      std::int64_t xd = xi >= 0 ? x.shape()[xi] : 1, td = ti >= 0 ? target[static_cast<std::size_t>(ti)] : 1;
      if (td < kDynamic) c.bad("negative dim in the shape");
      std::int64_t o = td == 1 ? xd : xd == 1 ? td : td == kDynamic ? xd : xd == kDynamic ? td : xd;
      if (td != 1 && td != kDynamic && xd != 1 && xd != kDynamic && xd != td)
        c.bad("cannot broadcast " + x.shape().str() + " to the shape given");
      out[static_cast<std::size_t>(i)] = o;
    }
    c.check_size(Shape(out));
    Tensor y = x;
    while (y.rank() < r) y = expand_dims(y, 0);
    return Out{broadcast_to(y, Shape(out))};
  };
  t["ConstantOfShape"] = [](NodeContext& c) {
    Ints dims = c.ints(0);
    for (auto d : dims)
      if (d < 0) c.bad("negative dim");
    Tensor value = c.has_attr("value") ? c.attr_tensor("value") : scalar(0.0f);
    if (value.num_elements() != 1) c.bad("value must hold one element");
    Shape s(dims);
    c.check_size(s);
    return Out{add(zeros(s, value.dtype()), reshape(value, Shape{}))};
  };
  t["Range"] = [](NodeContext& c) {
    DType dt = c.in(0).dtype();
    double start = c.number(0), limit = c.number(1), delta = c.number(2);
    if (delta == 0) c.bad("delta is 0");
    double n = std::ceil((limit - start) / delta);
    if (!std::isfinite(n) || std::abs(start) > 1e15 || std::abs(delta) > 1e15) c.bad("start, limit and delta must be finite and moderate");
    if (n > double(std::int64_t{1} << 28)) c.bad("more than 2^28 elements");
    if (n <= 0) return Out{zeros(Shape{0}, dt)};
    if (is_integer(dt)) {
      std::vector<std::int64_t> v;
      for (std::int64_t k = 0; k < static_cast<std::int64_t>(n); ++k)
        v.push_back(static_cast<std::int64_t>(start) + k * static_cast<std::int64_t>(delta));
      return Out{cast(int_vector(v), dt)};
    }
    return Out{arange(start, start + delta * n - delta * 0.5, delta, dt)};
  };
  t["Tile"] = [](NodeContext& c) {
    Ints reps = c.ints(1);
    if (static_cast<int>(reps.size()) != c.in(0).rank()) c.bad("repeats' length differs from the rank");
    std::vector<std::int64_t> result;
    for (int d = 0; d < c.in(0).rank(); ++d) {
      std::int64_t r = reps[static_cast<std::size_t>(d)], dim = c.in(0).shape()[d];
      if (r < 0) c.bad("negative repeat");
      if (r > (std::int64_t{1} << 28)) c.bad("repeat beyond 2^28");
      result.push_back(dim == kDynamic ? kDynamic : dim * r);
    }
    c.check_size(Shape(result));
    return Out{tile(c.in(0), reps)};
  };
  t["Pad"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    Ints pads = c.has_attr("pads") ? c.attr_ints("pads") : c.ints(1);
    std::string mode = c.attr_string("mode", "constant");
    double value = c.has(2) ? c.number(2) : 0.0;
    int r = x.rank();
    Ints axes = c.has(3) ? c.ints(3) : Ints{};
    if (axes.empty())
      for (int i = 0; i < r; ++i) axes.push_back(i);
    if (pads.size() != 2 * axes.size()) c.bad("pads must hold two values per axis");
    std::vector<std::pair<std::int64_t, std::int64_t>> p(static_cast<std::size_t>(r), {0, 0});
    for (std::size_t i = 0; i < axes.size(); ++i) {
      int a = c.axis(axes[i], r);
      if (pads[i] < 0 || pads[i + axes.size()] < 0) c.unsupported("negative pads (cropping)");
      p[static_cast<std::size_t>(a)] = {pads[i], pads[i + axes.size()]};
    }
    std::vector<std::int64_t> result;
    for (int d = 0; d < r; ++d) {
      std::int64_t dim = x.shape()[d];
      auto [lo, hi] = p[static_cast<std::size_t>(d)];
      if (lo > (std::int64_t{1} << 28) || hi > (std::int64_t{1} << 28)) c.bad("pads beyond 2^28");
      result.push_back(dim == kDynamic ? kDynamic : dim + lo + hi);
    }
    c.check_size(Shape(result));
    if (mode != "constant" && mode != "reflect") c.unsupported("mode '" + mode + "' (constant and reflect are supported)");
    return Out{pad(x, p, mode, value)};
  };
  t["Trilu"] = [](NodeContext& c) {
    std::int64_t k = 0;
    if (c.has(1)) {
      auto v = c.ints(1);
      if (v.size() != 1) c.bad("k must hold one value");
      k = v[0];
    }
    return Out{c.attr_int("upper", 1) ? triu(c.in(0), k) : tril(c.in(0), k)};
  };
  t["TopK"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    Ints k = c.ints(1);
    if (k.size() != 1 || k[0] < 0) c.bad("K must be one non-negative value");
    if (c.axis(c.attr_int("axis", -1), x.rank()) != x.rank() - 1) c.unsupported("an axis other than the last");
    if (c.attr_int("largest", 1) == 0) c.unsupported("largest=0");
    TopKResult r = top_k(x, k[0]);
    return Out{r.values, cast(r.indices, DType::int64)};
  };
}

}  // namespace ef::onnx::detail
