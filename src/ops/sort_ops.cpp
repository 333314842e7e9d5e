// Sorting along an axis (stable), argsort, top_k, and the gathers and scatters along an axis
// that their gradients use (take_along_axis and its adjoint).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/parallel.h"
#include "ops/op_factories.h"
#include "ops/sequence_primitives.h"

namespace ef {
namespace {

struct Lines {
  std::int64_t outer = 1, n = 1, inner = 1;
};
Lines lines_of(const Shape& s, int a) {
  Lines l;
  for (int d = 0; d < a; ++d) l.outer *= s[d];
  l.n = s[a];
  for (int d = a + 1; d < s.rank(); ++d) l.inner *= s[d];
  return l;
}

// Orders of values: ascending puts NaN after every number (NumPy); descending is its mirror
// (NaN first). Ties are broken by the caller (stable sorts, or the index for top_k).
template <class T>
bool before(T a, T b, bool descending) {
  if constexpr (std::is_floating_point_v<T>) {
    if (descending) return !std::isnan(b) && (std::isnan(a) || a > b);
    return !std::isnan(a) && (std::isnan(b) || a < b);
  } else {
    return descending ? a > b : a < b;
  }
}

// Calls fn(line values (contiguous copy), sorted indices, line offset of element t) per line.
// `sort_line` fills `order` for one line of values.
template <class T, class Sorter, class Writer>
void for_each_sorted_line(const Tensor& x, int a, Sorter&& sort_line, Writer&& write) {
  Lines l = lines_of(x.shape(), a);
  const T* p = x.data<T>().data();
  cpu::parallel_for(l.outer * l.inner, l.n * 8, [&](std::int64_t begin, std::int64_t end) {
    // Per-thread buffers whose capacity stays: replays do not allocate.
    thread_local std::vector<T> vals;
    thread_local std::vector<std::int64_t> order;
    vals.resize(static_cast<std::size_t>(l.n));
    order.resize(static_cast<std::size_t>(l.n));
    for (std::int64_t r = begin; r < end; ++r) {
      std::int64_t o = r / l.inner, e = r % l.inner;
      std::int64_t base = o * l.n * l.inner + e;
      for (std::int64_t t = 0; t < l.n; ++t) vals[static_cast<std::size_t>(t)] = p[base + t * l.inner];
      std::iota(order.begin(), order.end(), std::int64_t{0});
      sort_line(vals, order);
      write(r, base, l.inner, vals, order);
    }
  });
}

void expect_sortable(const Primitive& op, const Tensor& x, int axis) {
  if (x.dtype() == DType::bool_) fail(kWrongType, op.name(), "does not support bool: " + x.spec().str());
  if (x.rank() == 0) fail(op.name(), "needs a tensor of rank >= 1, got " + x.spec().str());
  normalize_axis(axis, x.rank(), op.name());
}

// The stable order as a strict total order (equal values by index), so that std::sort gives
// it without std::stable_sort's temporary buffer (replays do not allocate).
template <class T>
void stable_order(std::vector<T>& vals, std::vector<std::int64_t>& order, bool desc) {
  std::sort(order.begin(), order.end(), [&](std::int64_t i, std::int64_t j) {
    T a = vals[static_cast<std::size_t>(i)], b = vals[static_cast<std::size_t>(j)];
    if (before(a, b, desc)) return true;
    if (before(b, a, desc)) return false;
    return i < j;
  });
}

void expect_index_dtype(const Primitive& op, const Tensor& indices) {
  if (!is_index_dtype(indices.dtype()))
    fail(kWrongType, op.name(), "indices must be int32 or int64, got " + indices.spec().str());
}

template <class Fn>
void read_indices(const Tensor& idx, Fn&& fn) {
  if (idx.dtype() == DType::int32) {
    auto d = idx.data<std::int32_t>();
    for (std::size_t i = 0; i < d.size(); ++i) fn(i, static_cast<std::int64_t>(d[i]));
  } else {
    auto d = idx.data<std::int64_t>();
    for (std::size_t i = 0; i < d.size(); ++i) fn(i, d[i]);
  }
}

// The shape rule shared by take_along_axis and its scatter: indices of x's rank, equal dims
// off the axis.
void check_along_axis(const Primitive& op, const Tensor& x, const Tensor& idx, int axis) {
  expect_index_dtype(op, idx);
  if (x.rank() == 0) fail(op.name(), "needs a tensor of rank >= 1, got " + x.spec().str());
  int a = normalize_axis(axis, x.rank(), op.name());
  bool ok = idx.rank() == x.rank();
  for (int d = 0; ok && d < x.rank(); ++d)
    if (d != a && x.shape()[d] != idx.shape()[d] && x.shape()[d] != kDynamic && idx.shape()[d] != kDynamic) ok = false;
  if (!ok)
    fail(op.name(), "indices " + idx.spec().str() + " need the rank and the dims of " + x.spec().str() +
                        " off axis " + std::to_string(axis));
}

// Indices as int64 checked against [0, n) (in a per-thread buffer: valid until the next call).
const std::vector<std::int64_t>& checked(const Primitive& op, const Tensor& idx, std::int64_t n, const Tensor& x, int axis) {
  thread_local std::vector<std::int64_t> v;
  v.resize(static_cast<std::size_t>(idx.num_elements()));
  read_indices(idx, [&](std::size_t i, std::int64_t k) {
    if (k < 0 || k >= n)
      fail(op.name(), "index " + std::to_string(k) + " is out of range [0, " + std::to_string(n) + ") for " + x.spec().str() +
                          " on axis " + std::to_string(axis));
    v[i] = k;
  });
  return v;
}

}  // namespace

// ---------------------------------------------------------------- sort / argsort
std::vector<TensorSpec> Sort::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_sortable(*this, in[0], axis_);
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Sort::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  int a = normalize_axis(axis_, in[0].rank(), name());
  bool desc = descending_;
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      T* o = out[0].mutable_data<T>().data();
      for_each_sorted_line<T>(
          in[0], a,
          [&](std::vector<T>& vals, std::vector<std::int64_t>& order) { stable_order(vals, order, desc); },
          [&](std::int64_t, std::int64_t base, std::int64_t inner, const std::vector<T>& vals, const std::vector<std::int64_t>& order) {
            for (std::size_t t = 0; t < order.size(); ++t)
              o[base + static_cast<std::int64_t>(t) * inner] = vals[static_cast<std::size_t>(order[t])];
          });
    }
  });
}

std::vector<Tensor> Sort::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                              const std::vector<bool>&) const {
  Tensor order = dispatch1(ArgSort(axis_, descending_), {in[0]});
  return {dispatch1(ScatterAlongAxis(axis_), {cot[0], order, in[0]})};
}

std::vector<TensorSpec> ArgSort::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_sortable(*this, in[0], axis_);
  return {{DType::int64, in[0].shape(), {}}};
}

void ArgSort::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(DType::int64, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  int a = normalize_axis(axis_, in[0].rank(), name());
  bool desc = descending_;
  std::int64_t* o = out[0].mutable_data<std::int64_t>().data();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      for_each_sorted_line<T>(
          in[0], a, [&](std::vector<T>& vals, std::vector<std::int64_t>& order) { stable_order(vals, order, desc); },
          [&](std::int64_t, std::int64_t base, std::int64_t inner, const std::vector<T>&, const std::vector<std::int64_t>& order) {
            for (std::size_t t = 0; t < order.size(); ++t) o[base + static_cast<std::int64_t>(t) * inner] = order[t];
          });
    }
  });
}

// ---------------------------------------------------------------- top_k
std::vector<TensorSpec> TopK::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_sortable(*this, in[0], -1);
  if (k_ < 0) fail(name(), "k must be >= 0, got " + std::to_string(k_));
  std::int64_t n = in[0].shape()[in[0].rank() - 1];
  if (n != kDynamic && k_ > n)
    fail(name(), "k = " + std::to_string(k_) + " is larger than the last axis of " + in[0].spec().str());
  if (n != kDynamic && n > std::numeric_limits<std::int32_t>::max())
    fail(name(), "the last axis of " + in[0].spec().str() + " is too long for int32 indices");
  Shape s = in[0].shape();
  s[s.rank() - 1] = k_;
  return {{in[0].dtype(), s, {}}, {DType::int32, s, {}}};
}

void TopK::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& xs = in[0].shape();
  std::int64_t n = xs[xs.rank() - 1], k = k_;
  if (k > n) fail(name(), "k = " + std::to_string(k) + " is larger than the last axis of " + in[0].spec().str());
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  out[1] = Tensor::empty(DType::int32, specs[1].shape);
  if (out[0].num_elements() == 0) return;
  std::int64_t rows = xs.num_elements() / n;
  std::int32_t* oi = out[1].mutable_data<std::int32_t>().data();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* p = in[0].data<T>().data();
      T* ov = out[0].mutable_data<T>().data();
      cpu::parallel_for(rows, n * 4, [&](std::int64_t begin, std::int64_t end) {
        thread_local std::vector<std::int32_t> order;  // capacity kept between calls
        order.resize(static_cast<std::size_t>(n));
        for (std::int64_t r = begin; r < end; ++r) {
          const T* x = p + r * n;
          std::iota(order.begin(), order.end(), 0);
          // Largest first; equal values (and NaNs) by index: a strict total order, so the
          // partial sort is deterministic.
          auto cmp = [&](std::int32_t i, std::int32_t j) {
            if (before(x[i], x[j], true)) return true;
            if (before(x[j], x[i], true)) return false;
            return i < j;
          };
          if (k < n) std::partial_sort(order.begin(), order.begin() + k, order.end(), cmp);
          else std::sort(order.begin(), order.end(), cmp);
          for (std::int64_t t = 0; t < k; ++t) {
            ov[r * k + t] = x[order[static_cast<std::size_t>(t)]];
            oi[r * k + t] = order[static_cast<std::size_t>(t)];
          }
        }
      });
    }
  });
}

std::vector<Tensor> TopK::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                              const std::vector<bool>&) const {
  if (!cot[0].defined()) return {Tensor()};  // only the indices were used: no gradient
  return {dispatch1(ScatterAlongAxis(-1), {cot[0], out[1], in[0]})};
}

// ---------------------------------------------------------------- take_along_axis and its scatter
std::vector<TensorSpec> TakeAlongAxis::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  check_along_axis(*this, in[0], in[1], axis_);
  return {{in[0].dtype(), in[1].shape(), {}}};
}

void TakeAlongAxis::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  int a = normalize_axis(axis_, x.rank(), name());
  check_along_axis(*this, x, in[1], axis_);
  for (int d = 0; d < x.rank(); ++d)
    if (d != a && x.shape()[d] != in[1].shape()[d])
      fail(name(), "indices " + in[1].spec().str() + " need the dims of " + x.spec().str() + " off axis " + std::to_string(axis_));
  Lines lx = lines_of(x.shape(), a);
  const std::vector<std::int64_t>& idx = checked(*this, in[1], lx.n, x, axis_);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  std::int64_t m = in[1].shape()[a];
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>().data();
    T* o = out[0].mutable_data<T>().data();
    for (std::int64_t i = 0; i < lx.outer; ++i)
      for (std::int64_t j = 0; j < m; ++j)
        for (std::int64_t e = 0; e < lx.inner; ++e) {
          std::int64_t at = (i * m + j) * lx.inner + e;
          o[at] = p[(i * lx.n + idx[static_cast<std::size_t>(at)]) * lx.inner + e];
        }
  });
}

std::vector<Tensor> TakeAlongAxis::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                       const std::vector<bool>&) const {
  return {dispatch1(ScatterAlongAxis(axis_), {cot[0], in[1], in[0]}), Tensor()};
}

std::vector<TensorSpec> ScatterAlongAxis::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  check_along_axis(*this, in[2], in[1], axis_);
  if (in[0].dtype() != in[2].dtype())
    fail(kWrongType, name(), "dtypes differ: " + in[0].spec().str() + " vs " + in[2].spec().str());
  if (in[0].dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + in[0].spec().str());
  bool ok = in[0].rank() == in[1].rank();
  for (int d = 0; ok && d < in[0].rank(); ++d)
    ok = in[0].shape()[d] == in[1].shape()[d] || in[0].shape()[d] == kDynamic || in[1].shape()[d] == kDynamic;
  if (!ok) fail(name(), "updates " + in[0].spec().str() + " need the shape of the indices " + in[1].spec().str());
  return {{in[0].dtype(), in[2].shape(), {}}};
}

void ScatterAlongAxis::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& xs = specs[0].shape;
  int a = normalize_axis(axis_, xs.rank(), name());
  for (int d = 0; d < xs.rank(); ++d)
    if ((d != a && xs[d] != in[1].shape()[d]) || in[0].shape()[d] != in[1].shape()[d])
      fail(name(), "updates " + in[0].spec().str() + " and indices " + in[1].spec().str() + " do not fit " + specs[0].str() +
                       " off axis " + std::to_string(axis_));
  Lines lx = lines_of(xs, a);
  const std::vector<std::int64_t>& idx = checked(*this, in[1], lx.n, in[2], axis_);
  out[0] = Tensor::empty(specs[0].dtype, xs);
  if (out[0].num_elements() == 0) return;
  std::int64_t m = in[1].shape()[a];
  dispatch_dtype(specs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* g = in[0].data<T>().data();
      auto o = out[0].mutable_data<T>();
      std::fill(o.begin(), o.end(), T(0));
      for (std::int64_t i = 0; i < lx.outer; ++i)
        for (std::int64_t j = 0; j < m; ++j)
          for (std::int64_t e = 0; e < lx.inner; ++e) {
            std::int64_t at = (i * m + j) * lx.inner + e;
            o[static_cast<std::size_t>((i * lx.n + idx[static_cast<std::size_t>(at)]) * lx.inner + e)] += g[at];
          }
    }
  });
}

std::vector<Tensor> ScatterAlongAxis::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                          const std::vector<bool>&) const {
  return {dispatch1(TakeAlongAxis(axis_), {cot[0], in[1]}), Tensor(), Tensor()};
}

// ---------------------------------------------------------------- public functions
Tensor sort(const Tensor& x, int axis, bool descending) { return dispatch1(Sort(axis, descending), {x}); }
Tensor argsort(const Tensor& x, int axis, bool descending) { return dispatch1(ArgSort(axis, descending), {x}); }
TopKResult top_k(const Tensor& x, std::int64_t k) {
  std::vector<Tensor> out = dispatch(TopK(k), std::span<const Tensor>(&x, 1));
  return {out.at(0), out.at(1)};
}
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int axis) {
  return dispatch1(TakeAlongAxis(axis), {x, indices});
}

void detail::add_sort_factories(detail::OpFactories& f) {
  f["sort"] = [](const OpParams& p) { return std::make_shared<Sort>(p.axis("axis"), p.flag("descending")); };
  f["argsort"] = [](const OpParams& p) { return std::make_shared<ArgSort>(p.axis("axis"), p.flag("descending")); };
  f["top_k"] = [](const OpParams& p) {
    std::int64_t k = p.integer("k");
    if (k < 0) p.bad("negative k");
    return std::make_shared<TopK>(k);
  };
  f["take_along_axis"] = [](const OpParams& p) { return std::make_shared<TakeAlongAxis>(p.axis("axis")); };
  f["scatter_add_along_axis"] = [](const OpParams& p) { return std::make_shared<ScatterAlongAxis>(p.axis("axis")); };
}

}  // namespace ef
