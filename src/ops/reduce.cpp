// Reductions over axes, argmax, and the numerically stable softmax family.
#include <algorithm>
#include <cmath>
#include <limits>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/vec_math.h"
#include "ops/elementwise_math.h"
#include "ops/complex_op.h"
#include "ops/primitives.h"
#include "ops/op_factories.h"
#include "ops/shape_rules.h"

namespace ef {
namespace {

const char* reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::sum: return "sum";
    case ReduceKind::mean: return "mean";
    case ReduceKind::max: return "max";
    case ReduceKind::min: return "min";
  }
  return "?";
}

// Floats accumulate in double so that long sums do not drift; ints in int64.
template <class T> using Acc = std::conditional_t<std::is_floating_point_v<T>, double, std::int64_t>;

template <class T>
struct Reducer {
  ReduceKind kind;
  Acc<T> init() const {
    if (kind == ReduceKind::max) {
      if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<double>::infinity();
      else return std::numeric_limits<T>::lowest();
    }
    if (kind == ReduceKind::min) {
      if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<double>::infinity();
      else return std::numeric_limits<T>::max();
    }
    return 0;
  }
  Acc<T> step(Acc<T> acc, T v) const {
    auto x = static_cast<Acc<T>>(v);
    switch (kind) {
      case ReduceKind::max: return (acc != acc || x != x) ? (acc != acc ? acc : x) : (x > acc ? x : acc);
      case ReduceKind::min: return (acc != acc || x != x) ? (acc != acc ? acc : x) : (x < acc ? x : acc);
      default:
        if constexpr (std::is_integral_v<Acc<T>>) return wrap_add(acc, x);  // integer sums wrap, like TF
        else return acc + x;
    }
  }
  T finish(Acc<T> acc, std::int64_t count) const {
    if (kind == ReduceKind::mean) {
      if constexpr (std::is_floating_point_v<T>) return static_cast<T>(count ? acc / static_cast<double>(count) : NAN);
      else return static_cast<T>(count ? acc / count : 0);
    }
    return static_cast<T>(acc);
  }
};

Shape permuted_shape(const Shape& s, const std::vector<int>& perm) {
  std::vector<std::int64_t> d;
  for (int a : perm) d.push_back(s[a]);
  return Shape(std::move(d));
}

// (outer, n, inner) view of a tensor around one axis.
struct AxisLayout {
  std::int64_t outer = 1, n = 1, inner = 1;
  AxisLayout(const Shape& s, int axis) {
    for (int a = 0; a < s.rank(); ++a) (a < axis ? outer : a == axis ? n : inner) *= s[a];
  }
};

}  // namespace

const char* Reduce::name() const { return reduce_name(kind_); }

OpParams Reduce::parameters() const { return OpParams().add("axes", axes_).add_flag("keepdims", keepdims_); }

std::vector<bool> Reduce::reduced_mask(int rank) const { return reduced_axes_mask(axes_, rank, name()); }

std::vector<TensorSpec> Reduce::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + in[0].spec().str());
  std::vector<bool> reduced = reduced_mask(in[0].rank());
  std::vector<std::int64_t> dims;
  for (int a = 0; a < in[0].rank(); ++a) {
    if (!reduced[static_cast<std::size_t>(a)]) dims.push_back(in[0].shape()[a]);
    else if (keepdims_) dims.push_back(1);
  }
  return {{in[0].dtype(), Shape(std::move(dims)), {}}};
}

void Reduce::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (x.num_elements() == 0) {
    // Nothing to reduce (and the dims, some possibly huge, must not be multiplied): each
    // output is the reduction of no elements: 0 for sum, NaN for mean, the identity for max/min.
    dispatch_dtype(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) {
        Reducer<T> r{kind_};
        for (T& v : out[0].mutable_data<T>()) v = r.finish(r.init(), 0);
      }
    });
    return;
  }
  std::vector<bool> reduced = reduced_mask(x.rank());
  // Lay the input out as [kept..., reduced...] (a copy only when the axes are interleaved).
  std::vector<int> perm;
  std::int64_t rows = 1, cols = 1;
  for (int a = 0; a < x.rank(); ++a)
    if (!reduced[static_cast<std::size_t>(a)]) { perm.push_back(a); rows *= x.shape()[a]; }
  bool leading = true;  // reduced axes form a prefix: accumulate whole rows (bias gradients)
  for (int a = 0; a < x.rank(); ++a) {
    if (reduced[static_cast<std::size_t>(a)]) { perm.push_back(a); cols *= x.shape()[a]; }
    if (a > 0 && reduced[static_cast<std::size_t>(a)] && !reduced[static_cast<std::size_t>(a - 1)]) leading = false;
  }
  if (!reduced.empty() && !reduced[0]) leading = false;
  bool identity = std::is_sorted(perm.begin(), perm.end());
  if (x.dtype() == DType::float32 && kind_ != ReduceKind::min && (identity || leading)) {
    reduce_f32(x.data<float>().data(), out[0].mutable_data<float>().data(), rows, cols, identity);
    return;
  }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      Reducer<T> r{kind_};
      T* o = out[0].mutable_data<T>().data();
      if (leading && !identity) {
        std::vector<Acc<T>> acc(static_cast<std::size_t>(rows), r.init());
        const T* p = x.data<T>().data();
        for (std::int64_t c = 0; c < cols; ++c)
          for (std::int64_t j = 0; j < rows; ++j) acc[j] = r.step(acc[j], p[c * rows + j]);
        for (std::int64_t j = 0; j < rows; ++j) o[j] = r.finish(acc[j], cols);
        return;
      }
      Tensor laid = x;
      if (!identity) {
        laid = Tensor::empty(x.dtype(), permuted_shape(x.shape(), perm));
        std::vector<std::int64_t> strides(perm.size());
        std::vector<std::int64_t> full_strides(perm.size());
        std::int64_t s = 1;
        for (int a = x.rank() - 1; a >= 0; --a) { full_strides[a] = s; s *= x.shape()[a]; }
        for (std::size_t i = 0; i < perm.size(); ++i) strides[i] = full_strides[perm[i]];
        cpu::strided_copy(x.data<T>().data(), 0, strides, laid.shape(), laid.mutable_data<T>().data());
      }
      const T* p = laid.data<T>().data();
      cpu::parallel_for(rows, cols, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t j = b; j < e; ++j) {
          Acc<T> acc = r.init();
          const T* row = p + j * cols;
          for (std::int64_t c = 0; c < cols; ++c) acc = r.step(acc, row[c]);
          o[j] = r.finish(acc, cols);
        }
      });
    }
  });
}

// float32 sum, mean and max with the vector kernels: over trailing axes (rows of `cols`
// contiguous values, in parallel over rows) or over leading axes (column blocks in parallel,
// accumulating one input row at a time).
void Reduce::reduce_f32(const float* p, float* o, std::int64_t rows, std::int64_t cols, bool trailing) const {
  const auto& vk = cpu::vec::kernels();
  const bool is_max = kind_ == ReduceKind::max;
  auto finish = [&](double acc) {
    return static_cast<float>(kind_ == ReduceKind::mean ? acc / static_cast<double>(cols) : acc);
  };
  if (trailing) {
    cpu::parallel_for(rows, cols, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t j = b; j < e; ++j)
        o[j] = is_max ? vk.max_f32(p + j * cols, cols) : finish(vk.sum_f32(p + j * cols, cols));
    });
    return;
  }
  cpu::parallel_for(rows, cols, [&](std::int64_t b, std::int64_t e) {
    std::int64_t n = e - b;
    if (is_max) {
      std::fill(o + b, o + e, -std::numeric_limits<float>::infinity());
      for (std::int64_t c = 0; c < cols; ++c) vk.max_into_f32(o + b, p + c * rows + b, n);
      return;
    }
    // Per-thread accumulators, grown once: replays of a bias gradient allocate nothing.
    thread_local std::vector<double> acc;
    if (acc.size() < static_cast<std::size_t>(n)) acc.resize(static_cast<std::size_t>(n));
    std::fill_n(acc.begin(), n, 0.0);
    for (std::int64_t c = 0; c < cols; ++c) vk.accumulate_f32(acc.data(), p + c * rows + b, n);
    for (std::int64_t j = 0; j < n; ++j) o[b + j] = finish(acc[static_cast<std::size_t>(j)]);
  });
}

std::vector<Tensor> Reduce::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                const std::vector<bool>&) const {
  const Tensor& x = in[0];
  if (!is_floating(x.dtype())) return {Tensor()};
  std::vector<bool> reduced = reduced_mask(x.rank());
  // Put the reduced axes back (as 1s) so that the cotangent broadcasts against x.
  auto keep = [&](Tensor t) {
    if (!keepdims_)
      for (int a = 0; a < x.rank(); ++a)
        if (reduced[static_cast<std::size_t>(a)]) t = expand_dims(t, a);
    return t;
  };
  Tensor g = keep(cot[0]);
  switch (kind_) {
    case ReduceKind::sum: return {broadcast_like(g, x)};
    case ReduceKind::mean: {
      Tensor spread = broadcast_like(g, x);
      if (x.shape().is_static()) {
        std::int64_t count = 1;
        for (int a = 0; a < x.rank(); ++a)
          if (reduced[static_cast<std::size_t>(a)]) count *= x.shape()[a];
        return {spread / static_cast<double>(count)};
      }
      return {spread / cast(size(x) / size(out[0]), x.dtype())};
    }
    case ReduceKind::max:
    case ReduceKind::min: {
      // Ties share the gradient equally (like TF).
      Tensor hit = cast(equal(x, keep(out[0])), x.dtype());
      std::vector<int> axes;
      for (int a = 0; a < x.rank(); ++a)
        if (reduced[static_cast<std::size_t>(a)]) axes.push_back(a);
      if (axes.empty()) return {hit * g};
      return {hit * g / sum(hit, axes, true)};
    }
  }
  return {Tensor()};
}

OpParams ArgMax::parameters() const { return OpParams().add("axis", axis_).add_flag("keepdims", keepdims_); }

std::vector<TensorSpec> ArgMax::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + in[0].spec().str());
  int a = normalize_axis(axis_, in[0].rank(), name());
  if (in[0].shape()[a] == 0) fail(name(), "cannot take argmax over an empty axis: " + in[0].spec().str());
  std::vector<std::int64_t> dims = in[0].shape().dims();
  if (keepdims_) dims[static_cast<std::size_t>(a)] = 1;
  else dims.erase(dims.begin() + a);
  return {{DType::int64, Shape(std::move(dims)), {}}};
}

void ArgMax::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  AxisLayout l(in[0].shape(), normalize_axis(axis_, in[0].rank(), name()));
  std::int64_t* o = out[0].mutable_data<std::int64_t>().data();
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = in[0].data<T>().data();
    for (std::int64_t i = 0; i < l.outer; ++i)
      for (std::int64_t k = 0; k < l.inner; ++k) {
        const T* base = p + i * l.n * l.inner + k;
        std::int64_t best = 0;
        for (std::int64_t j = 1; j < l.n; ++j) {
          T v = base[j * l.inner], b = base[best * l.inner];
          if (b != b) break;  // NaN wins (first NaN), like NumPy
          if (v != v || v > b) best = j;
        }
        o[i * l.inner + k] = best;
      }
  });
}

std::vector<TensorSpec> Softmax::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (!is_floating(in[0].dtype())) fail(kWrongType, name(), "needs a floating dtype, got " + in[0].spec().str());
  normalize_axis(axis_, in[0].rank(), name());
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Softmax::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  AxisLayout l(in[0].shape(), normalize_axis(axis_, in[0].rank(), name()));
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* p = in[0].data<T>().data();
      T* o = out[0].mutable_data<T>().data();
      if constexpr (std::is_same_v<T, float>) {
        if (l.inner == 1) return softmax_rows_f32(p, o, l.outer, l.n);
      }
      cpu::parallel_for(l.outer * l.inner, l.n * 4, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
          std::int64_t i = r / l.inner, k = r % l.inner, off = i * l.n * l.inner + k;
          T m = -std::numeric_limits<T>::infinity();
          for (std::int64_t j = 0; j < l.n; ++j) m = std::max(m, p[off + j * l.inner]);
          if (std::isinf(m)) m = 0;  // all -inf (or +inf): avoid inf - inf
          double s = 0;
          for (std::int64_t j = 0; j < l.n; ++j) s += std::exp(static_cast<double>(p[off + j * l.inner] - m));
          if (log_) {
            T ls = static_cast<T>(std::log(s));
            for (std::int64_t j = 0; j < l.n; ++j) o[off + j * l.inner] = p[off + j * l.inner] - m - ls;
          } else {
            for (std::int64_t j = 0; j < l.n; ++j)
              o[off + j * l.inner] = static_cast<T>(std::exp(static_cast<double>(p[off + j * l.inner] - m)) / s);
          }
        }
      });
    }
  });
}

// Softmax over contiguous rows with the vector kernels: max, exp(x - max) in float, the sum
// in double (sum_f32), one division.
void Softmax::softmax_rows_f32(const float* p, float* o, std::int64_t rows, std::int64_t n) const {
  const auto& vk = cpu::vec::kernels();
  cpu::parallel_for(rows, n * 4, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const float* x = p + r * n;
      float* y = o + r * n;
      float m = vk.max_f32(x, n);
      if (std::isinf(m)) m = 0;  // all -inf (or +inf): avoid inf - inf
      vk.binary_f32(BinaryKind::sub, x, 0, 1, &m, 0, 0, y, 1, n);
      if (log_) {
        // log-sum-exp from exp(x - m) made in y, then y = (x - m) - lse (no scratch buffer).
        vk.unary_f32(UnaryKind::exp, y, y, n);
        float ls = static_cast<float>(std::log(vk.sum_f32(y, n)));
        vk.binary_f32(BinaryKind::sub, x, 0, 1, &m, 0, 0, y, 1, n);
        vk.binary_f32(BinaryKind::sub, y, 0, 1, &ls, 0, 0, y, 1, n);
      } else {
        vk.unary_f32(UnaryKind::exp, y, y, n);
        float s = static_cast<float>(vk.sum_f32(y, n));
        vk.binary_f32(BinaryKind::div, y, 0, 1, &s, 0, 0, y, 1, n);
      }
    }
  });
}

std::vector<Tensor> Softmax::vjp(std::span<const Tensor>, std::span<const Tensor> out, std::span<const Tensor> cot,
                                 const std::vector<bool>&) const {
  const Tensor &y = out[0], &g = cot[0];
  if (log_) return {g - exp(y) * sum(g, {axis_}, true)};
  return {y * (g - sum(g * y, {axis_}, true))};
}

// Sums and means of complex tensors are those of their parts.
Tensor sum(const Tensor& x, std::vector<int> axes, bool keepdims) {
  if (detail::complex_input(x)) [[unlikely]]
    return detail::by_parts(x, [&](const Tensor& part) { return sum(part, axes, keepdims); });
  return dispatch1(Reduce(ReduceKind::sum, std::move(axes), keepdims), {x});
}
Tensor mean(const Tensor& x, std::vector<int> axes, bool keepdims) {
  if (detail::complex_input(x)) [[unlikely]]
    return detail::by_parts(x, [&](const Tensor& part) { return mean(part, axes, keepdims); });
  return dispatch1(Reduce(ReduceKind::mean, std::move(axes), keepdims), {x});
}
Tensor max(const Tensor& x, std::vector<int> axes, bool keepdims) { return dispatch1(Reduce(ReduceKind::max, std::move(axes), keepdims), {x}); }
Tensor min(const Tensor& x, std::vector<int> axes, bool keepdims) { return dispatch1(Reduce(ReduceKind::min, std::move(axes), keepdims), {x}); }
Tensor argmax(const Tensor& x, int axis, bool keepdims) { return dispatch1(ArgMax(axis, keepdims), {x}); }
Tensor softmax(const Tensor& x, int axis) { return dispatch1(Softmax(axis, false), {x}); }
Tensor log_softmax(const Tensor& x, int axis) { return dispatch1(Softmax(axis, true), {x}); }


void detail::add_reduce_factories(detail::OpFactories& f) {
  const std::pair<const char*, ReduceKind> reductions[] = {
      {"sum", ReduceKind::sum}, {"mean", ReduceKind::mean}, {"max", ReduceKind::max}, {"min", ReduceKind::min}};
  for (auto [name, kind] : reductions)
    f[name] = [kind](const OpParams& p) { return std::make_shared<Reduce>(kind, p.axes("axes"), p.flag("keepdims")); };
  f["argmax"] = [](const OpParams& p) { return std::make_shared<ArgMax>(p.axis("axis"), p.flag("keepdims")); };
  f["softmax"] = [](const OpParams& p) { return std::make_shared<Softmax>(p.axis("axis"), false); };
  f["log_softmax"] = [](const OpParams& p) { return std::make_shared<Softmax>(p.axis("axis"), true); };
}

}  // namespace ef
