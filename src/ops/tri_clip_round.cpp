// Issue 18's small ops: tril/triu, floor/ceil/round, clip, any/all, where with scalars.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/parallel.h"
#include "ops/op_factories.h"
#include "ops/shape_rules.h"
#include "ops/sequence_primitives.h"

namespace ef {

// ---------------------------------------------------------------- tril / triu
std::vector<TensorSpec> Tri::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].rank() < 2) fail(name(), "needs a tensor of rank >= 2 (a matrix or a batch of them), got " + in[0].spec().str());
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Tri::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  const Shape& s = specs[0].shape;
  if (s.num_elements() == 0) return;
  std::int64_t rows = s[s.rank() - 2], cols = s[s.rank() - 1];
  std::int64_t mats = s.num_elements() / (rows * cols);
  std::size_t elem = size_of(specs[0].dtype);
  const char* p = static_cast<const char*>(in[0].raw_data());
  char* o = static_cast<char*>(out[0].raw_mutable_data());
  std::int64_t k = std::clamp<std::int64_t>(k_, -rows - 1, cols + 1);  // no overflow in i + k
  bool lower = lower_;
  // Row i keeps columns [0, i + k] (tril) or [i + k, cols) (triu): one copy and one fill per row.
  cpu::parallel_for(mats * rows, cols, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      std::int64_t i = r % rows;
      std::int64_t edge;  // the first column of the upper part
      if (lower) edge = i + k >= cols - 1 ? cols : std::max<std::int64_t>(i + k + 1, 0);
      else edge = i + k <= 0 ? 0 : std::min<std::int64_t>(i + k, cols);
      std::size_t off = static_cast<std::size_t>(r * cols) * elem;
      std::size_t split = static_cast<std::size_t>(edge) * elem, row = static_cast<std::size_t>(cols) * elem;
      if (lower) {
        std::memcpy(o + off, p + off, split);
        std::memset(o + off + split, 0, row - split);
      } else {
        std::memset(o + off, 0, split);
        std::memcpy(o + off + split, p + off + split, row - split);
      }
    }
  });
}

std::vector<Tensor> Tri::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                             const std::vector<bool>&) const {
  return {dispatch1(*this, {cot[0]})};
}

// ---------------------------------------------------------------- floor / ceil / round
const char* Rounding::name() const {
  switch (kind_) {
    case RoundKind::floor: return "floor";
    case RoundKind::ceil: return "ceil";
    case RoundKind::round: return "round";
  }
  return "?";
}

std::vector<TensorSpec> Rounding::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + in[0].spec().str());
  return {{in[0].dtype(), in[0].shape(), {}}};
}

namespace {
template <class T>
void round_kernel(RoundKind kind, const T* p, T* o, std::int64_t n) {
  cpu::parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) {
    switch (kind) {  // one branch per call: each loop vectorizes (roundps/roundpd)
      case RoundKind::floor: for (std::int64_t i = b; i < e; ++i) o[i] = std::floor(p[i]); break;
      case RoundKind::ceil: for (std::int64_t i = b; i < e; ++i) o[i] = std::ceil(p[i]); break;
      // nearbyint in the default rounding mode: ties to even.
      case RoundKind::round: for (std::int64_t i = b; i < e; ++i) o[i] = std::nearbyint(p[i]); break;
    }
  });
}
}  // namespace

void Rounding::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (is_integer(in[0].dtype())) {  // integers are already whole
    out[0] = in[0];
    return;
  }
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (in[0].dtype() == DType::float32)
    round_kernel(kind_, in[0].data<float>().data(), out[0].mutable_data<float>().data(), in[0].num_elements());
  else
    round_kernel(kind_, in[0].data<double>().data(), out[0].mutable_data<double>().data(), in[0].num_elements());
}

// ---------------------------------------------------------------- clip
std::vector<TensorSpec> Clip::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + in[0].spec().str());
  if (std::isnan(lo_) || std::isnan(hi_)) fail(name(), "bounds must not be NaN");
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Clip::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      T lo = saturate_cast<T>(lo_), hi = saturate_cast<T>(hi_);
      const T* p = in[0].data<T>().data();
      T* o = out[0].mutable_data<T>().data();
      // NumPy's order: the upper bound wins when lo > hi. NaN compares false: it stays NaN.
      cpu::parallel_for(in[0].num_elements(), 1, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) {
          T v = p[i] < lo ? lo : p[i];
          o[i] = v > hi ? hi : v;
        }
      });
    }
  });
}

std::vector<Tensor> Clip::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                              const std::vector<bool>&) const {
  const Tensor& x = in[0];
  Tensor inside = logical_and(x >= lo_, x <= hi_);
  return {where(inside, cot[0], 0.0)};
}

// ---------------------------------------------------------------- any / all
std::vector<bool> ReduceBool::reduced_mask(int rank) const { return reduced_axes_mask(axes_, rank, name()); }

std::vector<TensorSpec> ReduceBool::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  const Shape& s = in[0].shape();
  std::vector<bool> m = reduced_mask(s.rank());
  std::vector<std::int64_t> dims;
  for (int a = 0; a < s.rank(); ++a) {
    if (!m[static_cast<std::size_t>(a)]) dims.push_back(s[a]);
    else if (keepdims_) dims.push_back(1);
  }
  return {{DType::bool_, Shape(std::move(dims)), {}}};
}

void ReduceBool::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(DType::bool_, specs[0].shape);
  const Shape& s = in[0].shape();
  bool* o = out[0].mutable_data<bool>().data();
  std::fill(o, o + out[0].num_elements(), !any_);
  if (s.num_elements() == 0) return;
  // Output strides in input coordinates (0 on reduced axes); walk the input once. Per-thread
  // buffers: replays do not allocate.
  thread_local std::vector<std::int64_t> ostride, idx;
  ostride.assign(static_cast<std::size_t>(s.rank()), 0);
  idx.assign(static_cast<std::size_t>(s.rank()), 0);
  for (int a : axes_) ostride[static_cast<std::size_t>(normalize_axis(a, s.rank(), name()))] = -1;  // reduced
  std::int64_t k = 1;
  for (int a = s.rank() - 1; a >= 0; --a) {
    auto ua = static_cast<std::size_t>(a);
    if (axes_.empty() || ostride[ua] == -1) {
      ostride[ua] = 0;
    } else {
      ostride[ua] = k;
      k *= s[a];
    }
  }
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = in[0].data<T>().data();
    std::int64_t n = s.num_elements(), oi = 0;
    int last = s.rank() - 1;
    for (std::int64_t i = 0; i < n; ++i) {
      bool v = p[i] != T(0);
      if (any_ ? v : !v) o[oi] = any_;
      // Advance the multi-index and the output offset.
      for (int a = last; a >= 0; --a) {
        auto ua = static_cast<std::size_t>(a);
        oi += ostride[ua];
        if (++idx[ua] < s[a]) break;
        oi -= ostride[ua] * s[a];
        idx[ua] = 0;
      }
    }
  });
}

// ---------------------------------------------------------------- public functions
Tensor tril(const Tensor& x, std::int64_t k) { return dispatch1(Tri(true, k), {x}); }
Tensor triu(const Tensor& x, std::int64_t k) { return dispatch1(Tri(false, k), {x}); }
Tensor floor(const Tensor& x) { return dispatch1(Rounding(RoundKind::floor), {x}); }
Tensor ceil(const Tensor& x) { return dispatch1(Rounding(RoundKind::ceil), {x}); }
Tensor round(const Tensor& x) { return dispatch1(Rounding(RoundKind::round), {x}); }
Tensor clip(const Tensor& x, double lo, double hi) { return dispatch1(Clip(lo, hi), {x}); }
Tensor clip(const Tensor& x, const Tensor& lo, const Tensor& hi) { return minimum(maximum(x, lo), hi); }
Tensor any(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return dispatch1(ReduceBool(true, std::move(axes), keepdims), {x});
}
Tensor all(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return dispatch1(ReduceBool(false, std::move(axes), keepdims), {x});
}

Tensor where(const Tensor& c, const Tensor& a, double b) {
  if (!a.defined()) fail("where", "the tensor branch is undefined (default-constructed)");
  return where(c, a, scalar_like(a, b));
}
Tensor where(const Tensor& c, double a, const Tensor& b) {
  if (!b.defined()) fail("where", "the tensor branch is undefined (default-constructed)");
  return where(c, scalar_like(b, a), b);
}
Tensor where(const Tensor& c, double a, double b, DType dtype) {
  return where(c, full(Shape{}, a, dtype), full(Shape{}, b, dtype));
}

void detail::add_sequence_elementwise_factories(detail::OpFactories& f) {
  f["tril"] = [](const OpParams& p) { return std::make_shared<Tri>(true, p.integer("k")); };
  f["triu"] = [](const OpParams& p) { return std::make_shared<Tri>(false, p.integer("k")); };
  f["floor"] = [](const OpParams&) { return std::make_shared<Rounding>(RoundKind::floor); };
  f["ceil"] = [](const OpParams&) { return std::make_shared<Rounding>(RoundKind::ceil); };
  f["round"] = [](const OpParams&) { return std::make_shared<Rounding>(RoundKind::round); };
  f["clip"] = [](const OpParams& p) { return std::make_shared<Clip>(p.real("min"), p.real("max")); };
  f["any"] = [](const OpParams& p) { return std::make_shared<ReduceBool>(true, p.axes("axes"), p.flag("keepdims")); };
  f["all"] = [](const OpParams& p) { return std::make_shared<ReduceBool>(false, p.axes("axes"), p.flag("keepdims")); };
}

}  // namespace ef
