// Ops that move data without arithmetic: reshape, expand_dims, squeeze, transpose, concat,
// slice, gather, one_hot (stack is composed of them), and the scatters their gradients need.
#include <algorithm>
#include <cstring>
#include <limits>

#include "ops/element_bytes.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/broadcast.h"
#include "ops/complex_op.h"
#include "ops/primitives.h"
#include "ops/op_factories.h"

namespace ef {
namespace {

std::vector<std::int64_t> row_major_strides(const Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.rank()));
  std::int64_t k = 1;
  for (int a = s.rank() - 1; a >= 0; --a) { st[static_cast<std::size_t>(a)] = k; k *= s[a]; }
  return st;
}


// Element offsets of `out`'s rows inside a tensor viewed through `strides` from `base`.
template <class T, class Fn>
void for_each_strided(const Shape& out, std::int64_t base, const std::vector<std::int64_t>& strides, Fn&& fn) {
  std::array<std::vector<std::int64_t>, 1> st{strides};
  cpu::for_each_broadcast_row<1>(out, st, [&](std::int64_t o, std::int64_t n, auto off, auto inner) {
    for (std::int64_t i = 0; i < n; ++i) fn(o + i, base + off[0] + i * inner[0]);
  });
}

Tensor view_as(const Tensor& x, const Shape& shape) {
  auto impl = new_tensor_impl(x.impl());
  impl->shape = shape;
  return Tensor(std::move(impl));
}

// The number of elements of a static shape; -1 when a dim is dynamic.
std::int64_t static_count(const Shape& s) { return s.is_static() ? s.num_elements() : -1; }

}  // namespace

// ---------------------------------------------------------------- reshape
std::string Reshape::target_str() const {
  std::string s = "[";
  for (int a = 0; a < target_.rank(); ++a) s += (a ? "," : "") + std::to_string(target_[a]);
  return s + "]";
}

OpParams Reshape::parameters() const { return OpParams().add("shape", target_.dims()); }

std::vector<TensorSpec> Reshape::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  const Shape& s = in[0].shape();
  int unknown = -1;
  std::int64_t known = 1;
  for (int a = 0; a < target_.rank(); ++a) {
    if (target_[a] == -1) {
      if (unknown >= 0) fail(name(), "only one -1 allowed in target shape " + target_str());
      unknown = a;
    } else if (target_[a] < 0) {
      fail(name(), "invalid target shape " + target_str());
    } else if (__builtin_mul_overflow(known, target_[a], &known)) {
      fail(name(), "target shape " + target_str() + " has too many elements");
    }
  }
  Shape out = target_;
  if (!s.is_static()) {
    // The -1 dim is resolved when the graph runs; without one, the static dims of the input
    // must still be able to fill the target.
    if (unknown < 0) {
      std::int64_t fixed = 1;
      for (auto d : s)
        if (d != kDynamic) fixed *= d;
      if (fixed != 0 && known % fixed != 0)
        fail(name(), "cannot reshape " + in[0].spec().str() + " to " + target_str());
    }
    return {{in[0].dtype(), out, {}}};
  }
  std::int64_t n = s.num_elements();
  if (unknown >= 0) {
    if (known == 0 || n % known != 0) fail(name(), "cannot reshape " + in[0].spec().str() + " to " + target_str());
    out[unknown] = n / known;
  } else if (known != n) {
    fail(name(), "cannot reshape " + in[0].spec().str() + " (" + std::to_string(n) + " elements) to " + target_str() +
                     " (" + std::to_string(known) + " elements)");
  }
  return {{in[0].dtype(), out, {}}};
}

// Tensors are contiguous, so a reshape is always a view of the same storage.
void Reshape::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = view_as(in[0], specs[0].shape);
}

std::vector<Tensor> Reshape::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                 const std::vector<bool>&) const {
  return {reshape_like(cot[0], in[0])};
}

std::vector<TensorSpec> ReshapeLike::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  std::int64_t a = static_count(in[0].shape()), b = static_count(in[1].shape());
  if (a >= 0 && b >= 0 && a != b)
    fail(name(), "cannot reshape " + in[0].spec().str() + " to the shape of " + in[1].spec().str());
  return {{in[0].dtype(), in[1].shape(), {}}};
}

void ReshapeLike::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (in[0].num_elements() != specs[0].shape.num_elements())
    fail(name(), "cannot reshape " + in[0].spec().str() + " to " + specs[0].shape.str());
  out[0] = view_as(in[0], specs[0].shape);
}

std::vector<Tensor> ReshapeLike::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                     const std::vector<bool>&) const {
  return {reshape_like(cot[0], in[0]), Tensor()};
}

std::vector<TensorSpec> ExpandDims::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  int a = normalize_axis(axis_, in[0].rank() + 1, name());
  std::vector<std::int64_t> dims = in[0].shape().dims();
  dims.insert(dims.begin() + a, 1);
  return {{in[0].dtype(), Shape(std::move(dims)), {}}};
}

void ExpandDims::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = view_as(in[0], specs[0].shape);
}

std::vector<Tensor> ExpandDims::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                    const std::vector<bool>&) const {
  return {squeeze(cot[0], {normalize_axis(axis_, in[0].rank() + 1, name())})};
}

OpParams Squeeze::parameters() const { return OpParams().add("axes", axes_); }

std::vector<bool> Squeeze::dropped(const Shape& s) const {
  std::vector<bool> drop(static_cast<std::size_t>(s.rank()), false);
  for (int a : axes_) {
    int n = normalize_axis(a, s.rank(), name());
    if (s[n] != 1)
      fail(name(), "cannot squeeze axis " + std::to_string(a) + " of size " + (s[n] == kDynamic ? std::string("?") : std::to_string(s[n])) +
                       ": " + s.str() + (s[n] == kDynamic ? " (the dim is dynamic; squeeze needs a known 1)" : ""));
    drop[static_cast<std::size_t>(n)] = true;
  }
  if (axes_.empty())
    for (int a = 0; a < s.rank(); ++a) drop[static_cast<std::size_t>(a)] = s[a] == 1;
  return drop;
}

std::vector<TensorSpec> Squeeze::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  std::vector<bool> drop = dropped(in[0].shape());
  std::vector<std::int64_t> dims;
  for (int a = 0; a < in[0].rank(); ++a)
    if (!drop[static_cast<std::size_t>(a)]) dims.push_back(in[0].shape()[a]);
  return {{in[0].dtype(), Shape(std::move(dims)), {}}};
}

void Squeeze::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = view_as(in[0], specs[0].shape);
}

std::vector<Tensor> Squeeze::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                 const std::vector<bool>&) const {
  return {reshape_like(cot[0], in[0])};
}

// ---------------------------------------------------------------- transpose
OpParams Transpose::parameters() const { return OpParams().add("perm", perm_); }

std::vector<int> Transpose::resolved(int rank) const {
  std::vector<int> p = perm_;
  if (p.empty())
    for (int a = rank - 1; a >= 0; --a) p.push_back(a);
  if (static_cast<int>(p.size()) != rank)
    fail(name(), "permutation of length " + std::to_string(p.size()) + " for a tensor of rank " + std::to_string(rank));
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (int& a : p) {
    a = normalize_axis(a, rank, name());
    if (seen[static_cast<std::size_t>(a)]) fail(name(), "permutation repeats axis " + std::to_string(a));
    seen[static_cast<std::size_t>(a)] = true;
  }
  return p;
}

std::vector<TensorSpec> Transpose::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  std::vector<int> p = resolved(in[0].rank());
  std::vector<std::int64_t> dims;
  for (int a : p) dims.push_back(in[0].shape()[a]);
  return {{in[0].dtype(), Shape(std::move(dims)), {}}};
}

void Transpose::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;  // before any stride arithmetic over (maybe huge) dims
  std::vector<int> p = resolved(in[0].rank());
  auto st = row_major_strides(in[0].shape());
  std::vector<std::int64_t> strides;
  for (int a : p) strides.push_back(st[static_cast<std::size_t>(a)]);
  detail::dispatch_element_bytes(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::strided_copy(static_cast<const T*>(in[0].raw_data()), 0, strides, specs[0].shape, static_cast<T*>(out[0].raw_mutable_data()));
  });
}

std::vector<Tensor> Transpose::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                   const std::vector<bool>&) const {
  std::vector<int> p = resolved(in[0].rank()), inverse(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) inverse[static_cast<std::size_t>(p[i])] = static_cast<int>(i);
  return {transpose(cot[0], inverse)};
}

// ---------------------------------------------------------------- concat
std::vector<TensorSpec> Concat::infer(std::span<const Tensor> in) const {
  if (in.empty()) fail(name(), "needs at least one tensor");
  for (const auto& t : in)
    if (!t.defined()) fail(name(), "an input tensor is undefined (default-constructed)");
  expect_same_dtype(*this, in);
  int rank = in[0].rank();
  if (rank == 0) fail(name(), "cannot concatenate scalars (use ef::stack)");
  int a = normalize_axis(axis_, rank, name());
  Shape out = in[0].shape();
  for (std::size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i].shape();
    bool ok = s.rank() == rank;
    for (int d = 0; ok && d < rank; ++d)
      if (d != a && s[d] != out[d] && s[d] != kDynamic && out[d] != kDynamic) ok = false;
    if (!ok) fail(name(), "shapes differ off the concat axis " + std::to_string(axis_) + ": " + describe(in));
    std::int64_t sum = 0;
    if (out[a] != kDynamic && s[a] != kDynamic && __builtin_add_overflow(out[a], s[a], &sum))
      fail(name(), "the concatenated axis " + std::to_string(axis_) + " would hold more than 2^63 - 1 entries: " + describe(in));
    out[a] = (out[a] == kDynamic || s[a] == kDynamic) ? kDynamic : sum;
  }
  return {{in[0].dtype(), out, {}}};
}

void Concat::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  int a = normalize_axis(axis_, specs[0].shape.rank(), name());
  std::int64_t outer = 1;
  for (int d = 0; d < a; ++d) outer *= specs[0].shape[d];
  std::size_t elem = size_of(specs[0].dtype);
  std::size_t out_row = static_cast<std::size_t>(specs[0].shape.num_elements() / std::max<std::int64_t>(outer, 1)) * elem;
  char* o = static_cast<char*>(out[0].raw_mutable_data());
  std::size_t col = 0;
  for (const auto& t : in) {
    std::size_t row = static_cast<std::size_t>(t.num_elements() / std::max<std::int64_t>(outer, 1)) * elem;
    const char* p = static_cast<const char*>(t.raw_data());
    for (std::int64_t i = 0; i < outer && row; ++i) std::memcpy(o + i * out_row + col, p + i * row, row);
    col += row;
  }
}

std::vector<Tensor> Concat::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  int a = normalize_axis(axis_, in[0].rank(), name());
  std::vector<Tensor> grads(in.size());
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::int64_t len = in[i].shape()[a];
    if (len == kDynamic)
      fail("gradient", "concat along axis " + std::to_string(axis_) + " of inputs with a dynamic size there (" +
                           describe(in) + ") is not differentiable; give that axis a static size");
    if (needed[i]) {
      std::vector<std::int64_t> b(static_cast<std::size_t>(a + 1), 0), e(static_cast<std::size_t>(a + 1), std::numeric_limits<std::int64_t>::max());
      b[static_cast<std::size_t>(a)] = offset;
      e[static_cast<std::size_t>(a)] = offset + len;
      grads[i] = slice(cot[0], b, e);
    }
    offset += len;
  }
  return grads;
}

// ---------------------------------------------------------------- slice
OpParams Slice::parameters() const { return OpParams().add("begin", begin_).add("end", end_).add("strides", strides_); }

Slice::Axis Slice::resolve(int a, std::int64_t n) const {
  std::int64_t step = a < static_cast<int>(strides_.size()) ? strides_[a] : 1;
  if (a >= static_cast<int>(begin_.size())) return {0, 1, n};
  std::int64_t b = begin_[a], e = end_[a];
  auto clamp = [&](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < 0) v += n;
    return std::clamp(v, lo, hi);
  };
  // Counts as (distance - 1) / |step| + 1: no overflow for any step.
  if (step > 0) {
    b = clamp(b, 0, n);
    e = clamp(e, 0, n);
    return {b, step, e > b ? (e - b - 1) / step + 1 : 0};
  }
  b = clamp(b, -1, n - 1);
  e = e < -n ? -1 : clamp(e, -1, n - 1);
  return {b, step, b > e ? (b - e - 1) / -step + 1 : 0};
}

void Slice::check(const Tensor& x) const {
  if (begin_.size() != end_.size() || (!strides_.empty() && strides_.size() != begin_.size()))
    fail(name(), "begin, end and strides need the same length");
  if (static_cast<int>(begin_.size()) > x.rank())
    fail(name(), "slices " + std::to_string(begin_.size()) + " axes of " + x.spec().str());
  for (auto st : strides_)
    if (st == 0 || st == std::numeric_limits<std::int64_t>::min())
      fail(name(), "stride must be nonzero and greater than INT64_MIN, got " + std::to_string(st));
}

std::vector<TensorSpec> Slice::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  check(in[0]);
  const Shape& s = in[0].shape();
  std::vector<std::int64_t> dims;
  for (int a = 0; a < s.rank(); ++a) dims.push_back(s[a] == kDynamic ? kDynamic : resolve(a, s[a]).count);
  return {{in[0].dtype(), Shape(std::move(dims)), {}}};
}

namespace {
// Where slice `sl` of a tensor of shape `s` starts, and its strides, in elements.
std::int64_t slice_layout(const Slice& sl, const Shape& s, std::vector<std::int64_t>& strides) {
  auto st = row_major_strides(s);
  std::int64_t base = 0;
  for (int a = 0; a < s.rank(); ++a) {
    Slice::Axis ax = sl.resolve(a, s[a]);
    if (ax.count > 0) base += ax.start * st[static_cast<std::size_t>(a)];
    // With one element the step is never taken (and a huge step times the stride could overflow).
    strides.push_back(ax.count > 1 ? ax.step * st[static_cast<std::size_t>(a)] : 0);
  }
  return base;
}
}  // namespace

void Slice::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  std::vector<std::int64_t> strides;
  std::int64_t base = slice_layout(*this, in[0].shape(), strides);
  detail::dispatch_element_bytes(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    cpu::strided_copy(static_cast<const T*>(in[0].raw_data()), base, strides, specs[0].shape, static_cast<T*>(out[0].raw_mutable_data()));
  });
}

std::vector<Tensor> Slice::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                               const std::vector<bool>&) const {
  // (complex cotangents part by part: the scatter kernel is real)
  return {detail::by_parts(cot[0], [&](const Tensor& g) { return dispatch1(SliceGrad(*this), {g, in[0]}); })};
}

std::vector<TensorSpec> SliceGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  slice_.check(in[1]);
  return {{in[0].dtype(), in[1].shape(), {}}};
}

void SliceGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) {
    if (in[0].num_elements() != 0) fail(name(), "gradient " + in[0].spec().str() + " does not fit the slice of " + specs[0].str());
    return;
  }
  std::vector<std::int64_t> strides;
  std::int64_t base = slice_layout(slice_, specs[0].shape, strides);
  std::vector<std::int64_t> dims;
  for (int a = 0; a < specs[0].shape.rank(); ++a) dims.push_back(slice_.resolve(a, specs[0].shape[a]).count);
  Shape sliced(dims);
  if (sliced != in[0].shape())
    fail(name(), "gradient " + in[0].spec().str() + " does not fit the slice " + sliced.str() + " of " + specs[0].str());
  dispatch_dtype(specs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    auto o = out[0].mutable_data<T>();
    std::fill(o.begin(), o.end(), T(0));
    const T* g = in[0].data<T>().data();
    T* dst = o.data();
    for_each_strided<T>(sliced, base, strides, [&](std::int64_t i, std::int64_t d) { dst[d] = g[i]; });
  });
}

std::vector<Tensor> SliceGrad::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                                   const std::vector<bool>&) const {
  return {dispatch1(slice_, {cot[0]}), Tensor()};
}

// ---------------------------------------------------------------- gather
namespace {

template <class Fn>
void for_each_index(const Tensor& indices, Fn&& fn) {
  if (indices.dtype() == DType::int32) {
    auto d = indices.data<std::int32_t>();
    for (std::size_t i = 0; i < d.size(); ++i) fn(i, static_cast<std::int64_t>(d[i]));
  } else {
    auto d = indices.data<std::int64_t>();
    for (std::size_t i = 0; i < d.size(); ++i) fn(i, d[i]);
  }
}

void expect_index_dtype(const Primitive& op, const Tensor& indices) {
  if (!is_index_dtype(indices.dtype()))
    fail(kWrongType, op.name(), "indices must be int32 or int64, got " + indices.spec().str());
}

// Indices checked against [0, n), as int64.
std::vector<std::int64_t> checked_indices(const Primitive& op, const Tensor& indices, std::int64_t n, const Tensor& x,
                                          int axis) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(indices.num_elements()));
  for_each_index(indices, [&](std::size_t i, std::int64_t v) {
    if (v < 0 || v >= n)
      fail(op.name(), "index " + std::to_string(v) + " is out of range [0, " + std::to_string(n) + ") for " +
                          x.spec().str() + " on axis " + std::to_string(axis));
    idx[i] = v;
  });
  return idx;
}

}  // namespace

std::vector<TensorSpec> Gather::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_index_dtype(*this, in[1]);
  if (in[0].rank() == 0) fail(name(), "cannot gather from a scalar");
  int a = normalize_axis(axis_, in[0].rank(), name());
  const auto& xd = in[0].shape().dims();
  std::vector<std::int64_t> dims(xd.begin(), xd.begin() + a);
  dims.insert(dims.end(), in[1].shape().begin(), in[1].shape().end());
  dims.insert(dims.end(), xd.begin() + a + 1, xd.end());
  return {{in[0].dtype(), Shape(std::move(dims)), {}}};
}

void Gather::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  int a = normalize_axis(axis_, x.rank(), name());
  std::int64_t n = x.shape()[a];
  std::vector<std::int64_t> idx = checked_indices(*this, in[1], n, x, axis_);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;  // the dims of x may be huge around a zero
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; ++d) outer *= x.shape()[d];
  for (int d = a + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  std::size_t bytes = static_cast<std::size_t>(inner) * size_of(x.dtype());
  const char* p = static_cast<const char*>(x.raw_data());
  char* o = static_cast<char*>(out[0].raw_mutable_data());
  std::int64_t k = static_cast<std::int64_t>(idx.size());
  for (std::int64_t i = 0; i < outer && bytes; ++i)
    for (std::int64_t j = 0; j < k; ++j) std::memcpy(o + (i * k + j) * bytes, p + (i * n + idx[j]) * bytes, bytes);
}

std::vector<Tensor> Gather::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                const std::vector<bool>&) const {
  return {detail::by_parts(cot[0], [&](const Tensor& g) { return dispatch1(GatherGrad(axis_), {g, in[1], in[0]}); }),
          Tensor()};
}

std::vector<TensorSpec> GatherGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  expect_index_dtype(*this, in[1]);
  if (in[2].rank() == 0) fail(name(), "cannot scatter into a scalar");
  normalize_axis(axis_, in[2].rank(), name());
  return {{in[0].dtype(), in[2].shape(), {}}};
}

void GatherGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& xs = specs[0].shape;
  int a = normalize_axis(axis_, xs.rank(), name());
  std::int64_t n = xs[a];
  std::vector<std::int64_t> idx = checked_indices(*this, in[1], n, in[2], axis_);
  std::int64_t k = static_cast<std::int64_t>(idx.size());
  // The gradient has x's shape with the axis replaced by the indices' count.
  std::vector<std::int64_t> gdims(xs.begin(), xs.begin() + a);
  gdims.insert(gdims.end(), in[1].shape().begin(), in[1].shape().end());
  gdims.insert(gdims.end(), xs.begin() + a + 1, xs.end());
  if (in[0].shape() != Shape(gdims))
    fail(name(), "gradient " + in[0].spec().str() + " does not fit indices " + in[1].spec().str() + " into " + specs[0].str());
  out[0] = Tensor::empty(specs[0].dtype, xs);
  if (out[0].num_elements() == 0) return;
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < a; ++d) outer *= xs[d];
  for (int d = a + 1; d < xs.rank(); ++d) inner *= xs[d];
  dispatch_dtype(specs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      auto o = out[0].mutable_data<T>();
      std::fill(o.begin(), o.end(), T(0));
      const T* g = in[0].data<T>().data();
      for (std::int64_t i = 0; i < outer; ++i)
        for (std::int64_t j = 0; j < k; ++j) {
          T* dst = o.data() + (i * n + idx[static_cast<std::size_t>(j)]) * inner;
          const T* src = g + (i * k + j) * inner;
          for (std::int64_t e = 0; e < inner; ++e) dst[e] += src[e];
        }
    }
  });
}

std::vector<Tensor> GatherGrad::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                    const std::vector<bool>&) const {
  return {gather(cot[0], in[1], axis_), Tensor(), Tensor()};
}

// ---------------------------------------------------------------- one_hot
OpParams OneHot::parameters() const { return OpParams().add("depth", depth_).add("dtype", dtype_); }

std::vector<TensorSpec> OneHot::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_index_dtype(*this, in[0]);
  if (depth_ < 0) fail(name(), "depth must be >= 0, got " + std::to_string(depth_));
  std::vector<std::int64_t> dims = in[0].shape().dims();
  dims.push_back(depth_);
  return {{dtype_, Shape(std::move(dims)), {}}};
}

void OneHot::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  dispatch_dtype(dtype_, [&](auto tag) {
    using T = decltype(tag);
    auto o = out[0].mutable_data<T>();
    std::fill(o.begin(), o.end(), T(0));
    // Out-of-range indices give an all-zero row, as in TF.
    for_each_index(in[0], [&](std::size_t i, std::int64_t v) {
      if (v >= 0 && v < depth_) o[i * static_cast<std::size_t>(depth_) + static_cast<std::size_t>(v)] = T(1);
    });
  });
}

Tensor reshape(const Tensor& x, const Shape& shape) { return dispatch1(Reshape(shape), {x}); }
Tensor reshape_like(const Tensor& x, const Tensor& like) { return dispatch1(ReshapeLike(), {x, like}); }
Tensor transpose(const Tensor& x, std::vector<int> perm) { return dispatch1(Transpose(std::move(perm)), {x}); }
Tensor expand_dims(const Tensor& x, int axis) { return dispatch1(ExpandDims(axis), {x}); }
Tensor squeeze(const Tensor& x, std::vector<int> axes) { return dispatch1(Squeeze(std::move(axes)), {x}); }

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  return dispatch(Concat(axis), std::span<const Tensor>(xs.data(), xs.size())).at(0);
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) fail("stack", "needs at least one tensor");
  for (const auto& x : xs) {
    if (!x.defined()) fail("stack", "an input tensor is undefined (default-constructed)");
    if (x.shape() != xs[0].shape()) fail("stack", "all tensors need the same shape: " + describe(xs));
  }
  int a = normalize_axis(axis, xs[0].rank() + 1, "stack");
  std::vector<Tensor> expanded;
  for (const auto& x : xs) expanded.push_back(expand_dims(x, a));
  return concat(expanded, a);
}

Tensor slice(const Tensor& x, std::vector<std::int64_t> begin, std::vector<std::int64_t> end,
             std::vector<std::int64_t> strides) {
  return dispatch1(Slice(std::move(begin), std::move(end), std::move(strides)), {x});
}
Tensor gather(const Tensor& x, const Tensor& indices, int axis) { return dispatch1(Gather(axis), {x, indices}); }
Tensor one_hot(const Tensor& indices, std::int64_t depth, DType dtype) {
  // bfloat16 is a storage dtype (src/ops/bfloat16_dispatch.cpp): the rows are made in float32
  // (0 and 1 are exact in both) and cast.
  if (is_storage_float(dtype)) return cast(dispatch1(OneHot(depth, DType::float32), {indices}), dtype);
  return dispatch1(OneHot(depth, dtype), {indices});
}


void detail::add_shape_factories(detail::OpFactories& f) {
  f["reshape"] = [](const OpParams& p) { return std::make_shared<Reshape>(Shape(p.ints("shape"))); };
  f["reshape_like"] = [](const OpParams&) { return std::make_shared<ReshapeLike>(); };
  f["expand_dims"] = [](const OpParams& p) { return std::make_shared<ExpandDims>(p.axis("axis")); };
  f["squeeze"] = [](const OpParams& p) { return std::make_shared<Squeeze>(p.axes("axes")); };
  f["transpose"] = [](const OpParams& p) { return std::make_shared<Transpose>(p.axes("perm")); };
  f["concat"] = [](const OpParams& p) { return std::make_shared<Concat>(p.axis("axis")); };
  f["slice"] = [](const OpParams& p) { return std::make_shared<Slice>(p.ints("begin"), p.ints("end"), p.ints("strides")); };
  f["slice_grad"] = [](const OpParams& p) {
    return std::make_shared<SliceGrad>(Slice(p.ints("begin"), p.ints("end"), p.ints("strides")));
  };
  f["gather"] = [](const OpParams& p) { return std::make_shared<Gather>(p.axis("axis")); };
  f["gather_grad"] = [](const OpParams& p) { return std::make_shared<GatherGrad>(p.axis("axis")); };
  f["one_hot"] = [](const OpParams& p) {
    std::int64_t depth = p.integer("depth");
    if (depth < 0) p.bad("negative depth");
    return std::make_shared<OneHot>(depth, p.dtype("dtype"));
  };
}

}  // namespace ef
