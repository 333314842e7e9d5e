// relu_grad and gelu_grad: the activations' gradients in one pass each. relu's used to be
// `where(x > 0, g, 0)` (a bool tensor written and read again), gelu's a chain of seven
// elementwise ops; both ran over every activation of every train step.
#include "ops/activation_grad_op.h"

#include <algorithm>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/bfloat16_blocks.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "ops/bfloat16_dispatch.h"
#include "ops/shape_rules.h"

namespace ef {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;

// The composed formulas: the reference the kernels reproduce, used where shapes broadcast.
Tensor composed(UnaryKind kind, const Tensor& a, const Tensor& g) {
  if (kind == UnaryKind::relu) return where(a > 0.0, g, scalar_like(g, 0.0));
  return g * ((erf(a * kInvSqrt2) + 1.0) * 0.5 + a * exp(a * a * -0.5) * kInvSqrt2Pi);
}

template <class T>
void relu_grad_loop(const T* y, const T* g, T* o, std::int64_t n) {
  cpu::parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) o[i] = y[i] > T(0) ? g[i] : T(0);
  });
}

// float32 on its bits, in a loop the compiler vectorizes (the compare-and-select above stayed
// scalar: a quarter of a mixed_bfloat16 CNN train step, whose bfloat16 gradients come here as
// float32 at the op's boundary). y > 0 exactly when its bits, as an unsigned number, lie in
// [1, 0x7f800000]: positive, not zero, +inf included, NaN not.
template <>
void relu_grad_loop<float>(const float* y, const float* g, float* o, std::int64_t n) {
  const auto* __restrict yb = reinterpret_cast<const std::uint32_t*>(y);
  const auto* __restrict gb = reinterpret_cast<const std::uint32_t*>(g);
  auto* __restrict ob = reinterpret_cast<std::uint32_t*>(o);
  cpu::parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const std::uint32_t positive = (yb[i] - 1u) < 0x7f800000u ? 1u : 0u;
      ob[i] = gb[i] & (0u - positive);
    }
  });
}

// bfloat16 on its bits, by the same rule on the upper half (positive, not zero: [1, 0x7f80]).
void relu_grad_bfloat16(const std::uint16_t* __restrict y, const std::uint16_t* __restrict g, std::uint16_t* __restrict o,
                        std::int64_t n) {
  cpu::parallel_for(n, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const std::uint16_t positive = static_cast<std::uint16_t>(y[i] - 1u) < 0x7f80u ? 0xffffu : 0u;
      o[i] = g[i] & positive;
    }
  });
}

// float32: the kernel that shares Phi and exp with float32 gelu (src/kernels/cpu/vec/vec_kernels.inc).
void gelu_grad_loop(const float* x, const float* g, float* o, std::int64_t n) {
  const auto& vk = cpu::vec::kernels();
  cpu::parallel_for(n, 16, [&](std::int64_t b, std::int64_t e) { vk.gelu_grad_f32(x + b, g + b, o + b, e - b); });
}

// float64 block by block: erf and exp on ef's vector kernels over a block held in cache, the
// rest in plain loops, in the composed formula's order of operations (the same numbers as the op
// chain, one pass over memory).
void gelu_grad_loop(const double* x, const double* g, double* o, std::int64_t n) {
  const auto& vk = cpu::vec::kernels();
  constexpr std::int64_t kBlock = 512;
  cpu::parallel_for(n, 16, [&](std::int64_t b, std::int64_t e) {
    alignas(64) double phi[kBlock], gauss[kBlock];
    for (std::int64_t s = b; s < e; s += kBlock) {
      std::int64_t m = std::min(kBlock, e - s);
      const double* xs = x + s;
      for (std::int64_t i = 0; i < m; ++i) phi[i] = xs[i] * kInvSqrt2;
      for (std::int64_t i = 0; i < m; ++i) gauss[i] = xs[i] * xs[i] * -0.5;
      vk.unary_f64(UnaryKind::erf, phi, phi, m);
      vk.unary_f64(UnaryKind::exp, gauss, gauss, m);
      for (std::int64_t i = 0; i < m; ++i)
        o[s + i] = g[s + i] * ((phi[i] + 1.0) * 0.5 + xs[i] * gauss[i] * kInvSqrt2Pi);
    }
  });
}

}  // namespace

ActivationGrad::ActivationGrad(UnaryKind kind) : kind_(kind) {
  if (kind != UnaryKind::relu && kind != UnaryKind::gelu)
    fail(ErrorCode::internal, "activation_grad", std::string("has no one-pass gradient for ") + unary_name(kind));
}

const char* ActivationGrad::name() const { return kind_ == UnaryKind::relu ? "relu_grad" : "gelu_grad"; }

std::vector<TensorSpec> ActivationGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_same_dtype(*this, in);
  DType t = in[0].dtype();
  bool ok = kind_ == UnaryKind::relu ? t != DType::bool_ : is_floating(t);
  if (!ok)
    fail(kWrongType, name(), std::string("does not support dtype ") + std::string(name_of(t)) + ": " + describe(in));
  return {{t, broadcast_shapes(*this, in), {}}};
}

void ActivationGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (in[0].dtype() == DType::bfloat16) {
    out[0] = eval_bfloat16(in, specs[0]);
    return;
  }
  if (in[0].shape() != specs[0].shape || in[1].shape() != specs[0].shape) {
    if (kind_ == UnaryKind::relu || in[0].dtype() != DType::float32) {  // broadcasting: the composed ops
      out[0] = composed(kind_, in[0], in[1]);
      return;
    }
  }
  // float32 gelu's formula is its kernel's own: broadcast inputs are expanded for it.
  const Tensor a = in[0].shape() == specs[0].shape ? in[0] : broadcast_to(in[0], specs[0].shape);
  const Tensor g = in[1].shape() == specs[0].shape ? in[1] : broadcast_to(in[1], specs[0].shape);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::int64_t n = specs[0].shape.num_elements();
  if (n == 0) return;
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pa = a.data<T>().data();
      const T* pg = g.data<T>().data();
      T* po = out[0].mutable_data<T>().data();
      if (kind_ == UnaryKind::relu) relu_grad_loop<T>(pa, pg, po, n);
      else if constexpr (cpu::vec::vectorized<T>) gelu_grad_loop(pa, pg, po, n);
    }
  });
}

// bfloat16 (computes_bfloat16): relu's on the bits; gelu's from float32 a block at a time (the
// float32 kernel's bits, rounded once); broadcast shapes through the float32 op.
Tensor ActivationGrad::eval_bfloat16(std::span<const Tensor> in, const TensorSpec& spec) const {
  if (in[0].shape() != spec.shape || in[1].shape() != spec.shape)
    return cast(dispatch1(*this, {cast(in[0], DType::float32), cast(in[1], DType::float32)}), DType::bfloat16);
  Tensor out = Tensor::empty(spec.dtype, spec.shape);
  const auto* a = static_cast<const std::uint16_t*>(in[0].raw_data());
  const auto* g = static_cast<const std::uint16_t*>(in[1].raw_data());
  auto* o = static_cast<std::uint16_t*>(out.raw_mutable_data());
  const std::int64_t n = spec.shape.num_elements();
  if (kind_ == UnaryKind::relu) {
    relu_grad_bfloat16(a, g, o, n);
  } else {
    const auto& vk = cpu::vec::kernels();
    cpu::bfloat16_binary_blocks(a, 1, g, 1, o, n, 16,
                                [&](const float* x, std::int64_t, const float* dy, std::int64_t, float* r,
                                    std::int64_t m) { vk.gelu_grad_f32(x, dy, r, m); });
  }
  return out;
}

// Both are linear in g. relu_grad is piecewise constant in y (no gradient there); gelu's second
// derivative is phi(x) (2 - x^2).
std::vector<Tensor> ActivationGrad::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                        const std::vector<bool>& needed) const {
  const Tensor &a = in[0], &g = in[1], &c = cot[0];
  if (a.dtype() == DType::bfloat16 && kind_ == UnaryKind::gelu && needed[0])  // a chain of ops: in float32
    return detail::vjp_in_float32(in, out, cot, [&](auto i, auto o, auto k) { return vjp(i, o, k, needed); });
  Tensor da, dg;
  if (needed[1]) dg = sum_to(dispatch1(*this, {a, c}), g);
  if (needed[0] && kind_ == UnaryKind::gelu)
    da = sum_to(c * g * (exp(a * a * -0.5) * kInvSqrt2Pi) * (2.0 - a * a), a);
  return {da, dg};
}

Tensor relu_grad(const Tensor& y, const Tensor& g) { return dispatch1(ActivationGrad(UnaryKind::relu), {y, g}); }
Tensor gelu_grad(const Tensor& x, const Tensor& g) { return dispatch1(ActivationGrad(UnaryKind::gelu), {x, g}); }

void detail::add_activation_grad_factories(OpFactories& f) {
  f["relu_grad"] = [](const OpParams&) { return std::make_shared<ActivationGrad>(UnaryKind::relu); };
  f["gelu_grad"] = [](const OpParams&) { return std::make_shared<ActivationGrad>(UnaryKind::gelu); };
}

}  // namespace ef
