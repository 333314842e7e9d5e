// cumsum / cumprod along an axis with TF's exclusive and reverse options.
#include <algorithm>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/parallel.h"
#include "ops/elementwise_math.h"
#include "ops/op_factories.h"
#include "ops/sequence_primitives.h"

namespace ef {

std::vector<TensorSpec> Cumulative::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + in[0].spec().str());
  if (in[0].rank() == 0) fail(name(), "needs a tensor of rank >= 1, got " + in[0].spec().str());
  normalize_axis(axis_, in[0].rank(), name());
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Cumulative::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  const Shape& s = specs[0].shape;
  if (s.num_elements() == 0) return;
  int a = normalize_axis(axis_, s.rank(), name());
  std::int64_t outer = 1, n = s[a], inner = 1;
  for (int d = 0; d < a; ++d) outer *= s[d];
  for (int d = a + 1; d < s.rank(); ++d) inner *= s[d];
  dispatch_dtype(specs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* p = in[0].data<T>().data();
      T* o = out[0].mutable_data<T>().data();
      const bool prod = product_, excl = exclusive_, rev = reverse_;
      auto combine = [prod](T x, T y) -> T {
        if constexpr (std::is_integral_v<T>) return prod ? wrap_mul(x, y) : wrap_add(x, y);
        else return prod ? x * y : x + y;
      };
      // Each (outer) block is independent; inside, the scan runs along the axis and the
      // innermost loop over `inner` contiguous elements vectorizes.
      cpu::parallel_for(outer, n * inner, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          const T* x = p + i * n * inner;
          T* y = o + i * n * inner;
          for (std::int64_t t = 0; t < n; ++t) {
            std::int64_t cur = rev ? n - 1 - t : t, prev = rev ? cur + 1 : cur - 1;
            T* yc = y + cur * inner;
            if (t == 0) {
              if (excl) std::fill_n(yc, inner, prod ? T(1) : T(0));
              else std::copy_n(x + cur * inner, inner, yc);
              continue;
            }
            const T* yp = y + prev * inner;
            const T* xs = x + (excl ? prev : cur) * inner;
            for (std::int64_t e = 0; e < inner; ++e) yc[e] = combine(yp[e], xs[e]);
          }
        }
      });
    }
  });
}

std::vector<Tensor> Cumulative::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                    const std::vector<bool>&) const {
  Cumulative back(false, axis_, exclusive_, !reverse_);
  if (!product_) return {dispatch1(back, {cot[0]})};
  return {dispatch1(CumprodGrad(axis_, exclusive_, reverse_), {in[0], cot[0]})};
}

// ---------------------------------------------------------------- cumprod's gradient
namespace {
std::vector<TensorSpec> infer_pair(const Primitive& op, std::span<const Tensor> in, int axis) {
  expect_inputs(op, in, 2);
  if (!is_floating(in[0].dtype())) fail(kWrongType, op.name(), "needs a floating dtype, got " + in[0].spec().str());
  if (in[0].dtype() != in[1].dtype()) fail(kWrongType, op.name(), "dtypes differ: " + describe(in, " vs "));
  if (in[0].rank() == 0) fail(op.name(), "needs a tensor of rank >= 1, got " + in[0].spec().str());
  bool ok = in[0].rank() == in[1].rank();
  for (int d = 0; ok && d < in[0].rank(); ++d)
    ok = in[0].shape()[d] == in[1].shape()[d] || in[0].shape()[d] == kDynamic || in[1].shape()[d] == kDynamic;
  if (!ok) fail(op.name(), "the second input " + in[1].spec().str() + " needs the shape of " + in[0].spec().str());
  normalize_axis(axis, in[0].rank(), op.name());
  return {{in[0].dtype(), in[0].shape(), {}}};
}
}  // namespace

std::vector<TensorSpec> CumprodJvp::infer(std::span<const Tensor> in) const { return infer_pair(*this, in, axis_); }

void CumprodJvp::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& s = in[0].shape();
  if (in[1].shape() != s) fail(name(), "the tangent " + in[1].spec().str() + " needs the shape of " + in[0].spec().str());
  out[0] = Tensor::empty(specs[0].dtype, s);
  if (s.num_elements() == 0) return;
  int a = normalize_axis(axis_, s.rank(), name());
  std::int64_t outer = 1, n = s[a], inner = 1;
  for (int d = 0; d < a; ++d) outer *= s[d];
  for (int d = a + 1; d < s.rank(); ++d) inner *= s[d];
  dispatch_dtype(specs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = in[0].data<T>().data();
      const T* cp = in[1].data<T>().data();
      T* op = out[0].mutable_data<T>().data();
      const bool excl = exclusive_, rev = reverse_;
      cpu::parallel_for(outer, n * inner * 2, [&](std::int64_t begin, std::int64_t end) {
        thread_local std::vector<T> y, t;  // capacity kept between calls
        y.resize(static_cast<std::size_t>(inner));
        t.resize(static_cast<std::size_t>(inner));
        for (std::int64_t i = begin; i < end; ++i) {
          const T* x = xp + i * n * inner;
          const T* c = cp + i * n * inner;
          T* o = op + i * n * inner;
          std::fill(y.begin(), y.end(), T(1));  // the running product before this step
          std::fill(t.begin(), t.end(), T(0));  // and its derivative
          for (std::int64_t k = 0; k < n; ++k) {
            std::int64_t at = (rev ? n - 1 - k : k) * inner;
            for (std::int64_t e = 0; e < inner; ++e) {
              auto ue = static_cast<std::size_t>(e);
              if (excl) o[at + e] = t[ue];
              t[ue] = t[ue] * x[at + e] + y[ue] * c[at + e];
              y[ue] *= x[at + e];
              if (!excl) o[at + e] = t[ue];
            }
          }
        }
      });
    }
  });
}

std::vector<Tensor> CumprodJvp::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                    const std::vector<bool>& needed) const {
  // Linear in the tangent c: its adjoint is cumprod's gradient. In x (second order), from
  // dy = y * F(c / x) with F the cumsum of the same flags: exact where x has no zeros.
  const Tensor& x = in[0];
  const Tensor& c = in[1];
  const Tensor& w = cot[0];
  Tensor dx, dc;
  if (needed[1]) dc = dispatch1(CumprodGrad(axis_, exclusive_, reverse_), {x, w});
  if (needed[0]) {
    Tensor y = dispatch1(Cumulative(true, axis_, exclusive_, reverse_), {x});
    Tensor fc = dispatch1(Cumulative(false, axis_, exclusive_, reverse_), {c / x});
    Tensor back = dispatch1(Cumulative(false, axis_, exclusive_, !reverse_), {w * y});
    dx = dispatch1(CumprodGrad(axis_, exclusive_, reverse_), {x, w * fc}) - c / (x * x) * back;
  }
  return {dx, dc};
}

std::vector<TensorSpec> CumprodGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  if (!is_floating(in[0].dtype())) fail(kWrongType, name(), "needs a floating dtype, got " + in[0].spec().str());
  if (in[0].dtype() != in[1].dtype()) fail(kWrongType, name(), "dtypes differ: " + describe(in, " vs "));
  if (in[0].rank() == 0) fail(name(), "needs a tensor of rank >= 1, got " + in[0].spec().str());
  bool ok = in[0].rank() == in[1].rank();
  for (int d = 0; ok && d < in[0].rank(); ++d)
    ok = in[0].shape()[d] == in[1].shape()[d] || in[0].shape()[d] == kDynamic || in[1].shape()[d] == kDynamic;
  if (!ok) fail(name(), "the gradient " + in[1].spec().str() + " needs the shape of " + in[0].spec().str());
  normalize_axis(axis_, in[0].rank(), name());
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void CumprodGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& s = in[0].shape();
  if (in[1].shape() != s) fail(name(), "the gradient " + in[1].spec().str() + " needs the shape of " + in[0].spec().str());
  out[0] = Tensor::empty(specs[0].dtype, s);
  if (s.num_elements() == 0) return;
  int a = normalize_axis(axis_, s.rank(), name());
  std::int64_t outer = 1, n = s[a], inner = 1;
  for (int d = 0; d < a; ++d) outer *= s[d];
  for (int d = a + 1; d < s.rank(); ++d) inner *= s[d];
  dispatch_dtype(specs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* xp = in[0].data<T>().data();
      const T* gp = in[1].data<T>().data();
      T* op = out[0].mutable_data<T>().data();
      const bool excl = exclusive_, rev = reverse_;
      cpu::parallel_for(outer, n * inner * 2, [&](std::int64_t begin, std::int64_t end) {
        thread_local std::vector<T> running;  // capacity kept between calls
        running.resize(static_cast<std::size_t>(inner));
        for (std::int64_t i = begin; i < end; ++i) {
          const T* x = xp + i * n * inner;
          const T* g = gp + i * n * inner;
          T* o = op + i * n * inner;
          auto at = [&](std::int64_t t) { return (rev ? n - 1 - t : t) * inner; };  // scan order
          // Backward over the scan: S_t = g_t + x_{t+1} S_{t+1} (inclusive), or
          // S_t = g_{t+1} + x_{t+1} S_{t+1} (exclusive), S past the end = 0.
          for (std::int64_t t = n - 1; t >= 0; --t) {
            T* st = o + at(t);
            if (t == n - 1) {
              for (std::int64_t e = 0; e < inner; ++e) st[e] = excl ? T(0) : g[at(t) + e];
              continue;
            }
            const T* sn = o + at(t + 1);
            const T* xn = x + at(t + 1);
            const T* gs = g + (excl ? at(t + 1) : at(t));
            for (std::int64_t e = 0; e < inner; ++e) st[e] = gs[e] + xn[e] * sn[e];
          }
          // Forward: times the exclusive running product E_t.
          std::fill(running.begin(), running.end(), T(1));
          for (std::int64_t t = 0; t < n; ++t) {
            T* ot = o + at(t);
            const T* xt = x + at(t);
            for (std::int64_t e = 0; e < inner; ++e) {
              ot[e] *= running[static_cast<std::size_t>(e)];
              running[static_cast<std::size_t>(e)] *= xt[e];
            }
          }
        }
      });
    }
  });
}

std::vector<Tensor> CumprodGrad::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                     const std::vector<bool>& needed) const {
  // Linear in g: its adjoint is cumprod's forward derivative (exact). In x, from TF's form of
  // this op, r = F^T(g * y) / x with y = cumprod(x) and F the cumsum of the same flags:
  //   d x = -c * r / x + cumprod_grad(x, g * F(c / x))   (exact where x has no zeros).
  const Tensor& x = in[0];
  const Tensor& g = in[1];
  const Tensor& c = cot[0];
  Tensor dx, dg;
  if (needed[0]) {
    Tensor fc = dispatch1(Cumulative(false, axis_, exclusive_, reverse_), {c / x});
    dx = dispatch1(*this, {x, g * fc}) - c * out[0] / x;
  }
  if (needed[1]) dg = dispatch1(CumprodJvp(axis_, exclusive_, reverse_), {x, c});  // exact with zeros
  return {dx, dg};
}

Tensor cumsum(const Tensor& x, int axis, bool exclusive, bool reverse) {
  return dispatch1(Cumulative(false, axis, exclusive, reverse), {x});
}
Tensor cumprod(const Tensor& x, int axis, bool exclusive, bool reverse) {
  return dispatch1(Cumulative(true, axis, exclusive, reverse), {x});
}

void detail::add_cumulative_factories(detail::OpFactories& f) {
  f["cumprod_jvp"] = [](const OpParams& p) {
    return std::make_shared<CumprodJvp>(p.axis("axis"), p.flag("exclusive"), p.flag("reverse"));
  };
  f["cumprod_grad"] = [](const OpParams& p) {
    return std::make_shared<CumprodGrad>(p.axis("axis"), p.flag("exclusive"), p.flag("reverse"));
  };
  for (bool prod : {false, true})
    f[prod ? "cumprod" : "cumsum"] = [prod](const OpParams& p) {
      return std::make_shared<Cumulative>(prod, p.axis("axis"), p.flag("exclusive"), p.flag("reverse"));
    };
}

}  // namespace ef
