// Ops that move data without arithmetic: reshape, transpose, concat, slice, gather, one_hot,
// and the few composed from them (expand_dims, squeeze, stack).
#include <algorithm>
#include <cstring>
#include <limits>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/broadcast.h"

namespace ef {
namespace {

std::vector<std::int64_t> row_major_strides(const Shape& s) {
  std::vector<std::int64_t> st(static_cast<std::size_t>(s.rank()));
  std::int64_t k = 1;
  for (int a = s.rank() - 1; a >= 0; --a) { st[static_cast<std::size_t>(a)] = k; k *= s[a]; }
  return st;
}

std::string list_str(const std::vector<std::int64_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

class Reshape : public PrimitiveBase<Reshape> {
 public:
  explicit Reshape(Shape target) : target_(std::move(target)) {}
  const char* name() const override { return "reshape"; }
  // The target as the user wrote it: -1 means "infer this dim", not "unknown".
  std::string target_str() const {
    std::string s = "[";
    for (int a = 0; a < target_.rank(); ++a) s += (a ? "," : "") + std::to_string(target_[a]);
    return s + "]";
  }
  std::string attrs() const override { return "shape=" + list_str(target_.dims()); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
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
    if (!s.is_static()) return {{in[0].dtype(), out, {}}};  // resolved when the graph runs
    std::int64_t n = s.num_elements();
    if (unknown >= 0) {
      if (known == 0 || n % known != 0)
        fail(name(), "cannot reshape " + in[0].spec().str() + " to " + target_str());
      out[unknown] = n / known;
    } else if (known != n) {
      fail(name(), "cannot reshape " + in[0].spec().str() + " (" + std::to_string(n) + " elements) to " +
                       target_str() + " (" + std::to_string(known) + " elements)");
    }
    return {{in[0].dtype(), out, {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    // Tensors are contiguous, so a reshape is always a view of the same storage.
    auto impl = new_tensor_impl(in[0].impl());
    impl->shape = specs[0].shape;
    out[0] = Tensor(std::move(impl));
  }

 private:
  Shape target_;
};

class Transpose : public PrimitiveBase<Transpose> {
 public:
  explicit Transpose(std::vector<int> perm) : perm_(std::move(perm)) {}
  const char* name() const override { return "transpose"; }
  std::string attrs() const override {
    return "perm=" + list_str(std::vector<std::int64_t>(perm_.begin(), perm_.end()));
  }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    std::vector<int> p = resolved(in[0].rank());
    std::vector<std::int64_t> dims;
    for (int a : p) dims.push_back(in[0].shape()[a]);
    return {{in[0].dtype(), Shape(std::move(dims)), {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
    std::vector<int> p = resolved(in[0].rank());
    auto st = row_major_strides(in[0].shape());
    std::vector<std::int64_t> strides;
    for (int a : p) strides.push_back(st[static_cast<std::size_t>(a)]);
    dispatch_dtype(in[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      cpu::strided_copy(in[0].data<T>().data(), 0, strides, specs[0].shape, out[0].mutable_data<T>().data());
    });
  }

 private:
  std::vector<int> resolved(int rank) const {
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
  std::vector<int> perm_;
};

class Concat : public PrimitiveBase<Concat> {
 public:
  explicit Concat(int axis) : axis_(axis) {}
  const char* name() const override { return "concat"; }
  std::string attrs() const override { return "axis=" + std::to_string(axis_); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    if (in.empty()) fail(name(), "needs at least one tensor");
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
      out[a] = (out[a] == kDynamic || s[a] == kDynamic) ? kDynamic : out[a] + s[a];
    }
    return {{in[0].dtype(), out, {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
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

 private:
  int axis_;
};

class Slice : public PrimitiveBase<Slice> {
 public:
  Slice(std::vector<std::int64_t> b, std::vector<std::int64_t> e, std::vector<std::int64_t> s)
      : begin_(std::move(b)), end_(std::move(e)), strides_(std::move(s)) {}
  const char* name() const override { return "slice"; }
  std::string attrs() const override {
    return "begin=" + list_str(begin_) + " end=" + list_str(end_) + " strides=" + list_str(strides_);
  }
  struct Axis { std::int64_t start, step, count; };
  // Python slice semantics on one axis of length n.
  Axis resolve(int a, std::int64_t n) const {
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
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    const Shape& s = in[0].shape();
    if (begin_.size() != end_.size() || (!strides_.empty() && strides_.size() != begin_.size()))
      fail(name(), "begin, end and strides need the same length");
    if (static_cast<int>(begin_.size()) > s.rank())
      fail(name(), "slices " + std::to_string(begin_.size()) + " axes of " + in[0].spec().str());
    for (auto st : strides_)
      if (st == 0 || st == std::numeric_limits<std::int64_t>::min())
        fail(name(), "stride must be nonzero and greater than INT64_MIN, got " + std::to_string(st));
    std::vector<std::int64_t> dims;
    for (int a = 0; a < s.rank(); ++a) dims.push_back(s[a] == kDynamic ? kDynamic : resolve(a, s[a]).count);
    return {{in[0].dtype(), Shape(std::move(dims)), {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
    const Shape& s = in[0].shape();
    auto st = row_major_strides(s);
    std::int64_t base = 0;
    std::vector<std::int64_t> strides;
    for (int a = 0; a < s.rank(); ++a) {
      Axis ax = resolve(a, s[a]);
      if (ax.count > 0) base += ax.start * st[static_cast<std::size_t>(a)];
      // With one element the step is never taken (and a huge step times the stride could overflow).
      strides.push_back(ax.count > 1 ? ax.step * st[static_cast<std::size_t>(a)] : 0);
    }
    dispatch_dtype(in[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      cpu::strided_copy(in[0].data<T>().data(), base, strides, specs[0].shape, out[0].mutable_data<T>().data());
    });
  }

 private:
  std::vector<std::int64_t> begin_, end_, strides_;
};

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
  if (!is_integer(indices.dtype()))
    fail(op.name(), "indices must be int32 or int64, got " + indices.spec().str());
}

class Gather : public PrimitiveBase<Gather> {
 public:
  explicit Gather(int axis) : axis_(axis) {}
  const char* name() const override { return "gather"; }
  std::string attrs() const override { return "axis=" + std::to_string(axis_); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
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
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    const Tensor& x = in[0];
    int a = normalize_axis(axis_, x.rank(), name());
    std::int64_t outer = 1, inner = 1, n = x.shape()[a];
    for (int d = 0; d < a; ++d) outer *= x.shape()[d];
    for (int d = a + 1; d < x.rank(); ++d) inner *= x.shape()[d];
    std::vector<std::int64_t> idx(static_cast<std::size_t>(in[1].num_elements()));
    for_each_index(in[1], [&](std::size_t i, std::int64_t v) {
      if (v < 0 || v >= n)
        fail(name(), "index " + std::to_string(v) + " is out of range [0, " + std::to_string(n) + ") for " +
                         x.spec().str() + " on axis " + std::to_string(axis_));
      idx[i] = v;
    });
    out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
    std::size_t bytes = static_cast<std::size_t>(inner) * size_of(x.dtype());
    const char* p = static_cast<const char*>(x.raw_data());
    char* o = static_cast<char*>(out[0].raw_mutable_data());
    std::int64_t k = static_cast<std::int64_t>(idx.size());
    for (std::int64_t i = 0; i < outer && bytes; ++i)
      for (std::int64_t j = 0; j < k; ++j)
        std::memcpy(o + (i * k + j) * bytes, p + (i * n + idx[j]) * bytes, bytes);
  }

 private:
  int axis_;
};

class OneHot : public PrimitiveBase<OneHot> {
 public:
  OneHot(std::int64_t depth, DType dtype) : depth_(depth), dtype_(dtype) {}
  const char* name() const override { return "one_hot"; }
  std::string attrs() const override { return "depth=" + std::to_string(depth_) + " dtype=" + std::string(name_of(dtype_)); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    expect_index_dtype(*this, in[0]);
    if (depth_ < 0) fail(name(), "depth must be >= 0, got " + std::to_string(depth_));
    std::vector<std::int64_t> dims = in[0].shape().dims();
    dims.push_back(depth_);
    return {{dtype_, Shape(std::move(dims)), {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
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

 private:
  std::int64_t depth_;
  DType dtype_;
};

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) { return dispatch1(Reshape(shape), {x}); }
Tensor transpose(const Tensor& x, std::vector<int> perm) { return dispatch1(Transpose(std::move(perm)), {x}); }

Tensor expand_dims(const Tensor& x, int axis) {
  int a = normalize_axis(axis, x.rank() + 1, "expand_dims");
  std::vector<std::int64_t> dims = x.shape().dims();
  for (auto& d : dims) if (d == kDynamic) d = -1;
  dims.insert(dims.begin() + a, 1);
  int dynamic = static_cast<int>(std::count(dims.begin(), dims.end(), -1));
  if (dynamic > 1) fail("expand_dims", "more than one dynamic dim in " + x.spec().str());
  return reshape(x, Shape(std::move(dims)));
}

Tensor squeeze(const Tensor& x, std::vector<int> axes) {
  std::vector<bool> drop(static_cast<std::size_t>(x.rank()), false);
  for (int a : axes) {
    int n = normalize_axis(a, x.rank(), "squeeze");
    if (x.shape()[n] != 1)
      fail("squeeze", "cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.shape()[n]) + ": " + x.spec().str());
    drop[static_cast<std::size_t>(n)] = true;
  }
  std::vector<std::int64_t> dims;
  for (int a = 0; a < x.rank(); ++a) {
    bool d = axes.empty() ? x.shape()[a] == 1 : drop[static_cast<std::size_t>(a)];
    if (!d) dims.push_back(x.shape()[a]);
  }
  if (std::count(dims.begin(), dims.end(), kDynamic) > 1) fail("squeeze", "more than one dynamic dim in " + x.spec().str());
  return reshape(x, Shape(std::move(dims)));
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  return dispatch(Concat(axis), std::span<const Tensor>(xs.data(), xs.size())).at(0);
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) fail("stack", "needs at least one tensor");
  for (const auto& x : xs)
    if (x.shape() != xs[0].shape()) {
      std::vector<Tensor> v = xs;
      fail("stack", "all tensors need the same shape: " + describe(v));
    }
  std::vector<Tensor> expanded;
  for (const auto& x : xs) expanded.push_back(expand_dims(x, axis < 0 ? axis : axis));
  int a = normalize_axis(axis, xs[0].rank() + 1, "stack");
  return concat(expanded, a);
}

Tensor slice(const Tensor& x, std::vector<std::int64_t> begin, std::vector<std::int64_t> end,
             std::vector<std::int64_t> strides) {
  return dispatch1(Slice(std::move(begin), std::move(end), std::move(strides)), {x});
}
Tensor gather(const Tensor& x, const Tensor& indices, int axis) { return dispatch1(Gather(axis), {x, indices}); }
Tensor one_hot(const Tensor& indices, std::int64_t depth, DType dtype) { return dispatch1(OneHot(depth, dtype), {indices}); }

}  // namespace ef
