// Elementwise ops: unary math, broadcasting binary ops, where, cast.
#include <bit>
#include <cmath>
#include <limits>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/strings.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/bfloat16_blocks.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/vec_math.h"
#include "ops/activation_grad_op.h"
#include "ops/bfloat16_dispatch.h"
#include "ops/complex_op.h"
#include "ops/elementwise_math.h"
#include "ops/primitives.h"
#include "ops/shape_rules.h"
#include "ops/op_factories.h"

namespace ef {
namespace {

// c ? a : b without a branch (a mask on the bits), so that random conditions do not stall the
// loop on mispredictions and the compiler vectorizes it; exact for every dtype, NaN included.
template <class T>
T select_bits(bool c, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint8_t>>;
  U mask = static_cast<U>(0) - static_cast<U>(c);
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask)));
}

// ---------------------------------------------------------------- unary
// Elements' worth of work per element, for splitting loops over threads.
std::int64_t unary_cost(UnaryKind k) {
  switch (k) {
    case UnaryKind::neg: case UnaryKind::abs: case UnaryKind::square: case UnaryKind::relu: return 1;
    default: return 8;
  }
}

template <class T>
void unary_loop(UnaryKind k, const T* in, T* out, std::int64_t n) {
  if constexpr (cpu::vec::vectorized<T>) {
    const auto& vk = cpu::vec::kernels();
    cpu::parallel_for(n, unary_cost(k), [&](std::int64_t b, std::int64_t e) {
      if constexpr (std::is_same_v<T, float>) vk.unary_f32(k, in + b, out + b, e - b);
      else vk.unary_f64(k, in + b, out + b, e - b);
    });
    return;
  }
  cpu::parallel_for(n, 8, [&](std::int64_t b, std::int64_t e) {
    // One switch per chunk, not per element: each case is a tight loop the compiler vectorizes.
    switch (k) {
#define EF_CASE(K) case UnaryKind::K: for (auto i = b; i < e; ++i) out[i] = unary_value(UnaryKind::K, in[i]); break;
      EF_CASE(neg) EF_CASE(abs) EF_CASE(exp) EF_CASE(log) EF_CASE(sqrt) EF_CASE(rsqrt) EF_CASE(square)
      EF_CASE(relu) EF_CASE(sigmoid) EF_CASE(tanh) EF_CASE(gelu) EF_CASE(erf) EF_CASE(sin) EF_CASE(cos) EF_CASE(logical_not)
      EF_CASE(tan) EF_CASE(asin) EF_CASE(acos) EF_CASE(atan) EF_CASE(sinh) EF_CASE(cosh) EF_CASE(asinh) EF_CASE(acosh)
      EF_CASE(atanh) EF_CASE(expm1) EF_CASE(erfc)
#undef EF_CASE
    }
  });
}

}  // namespace

std::vector<TensorSpec> Unary::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  DType t = in[0].dtype();
  bool ok = kind_ == UnaryKind::logical_not ? t == DType::bool_
            : (kind_ == UnaryKind::neg || kind_ == UnaryKind::abs || kind_ == UnaryKind::square ||
               kind_ == UnaryKind::relu)
                ? t != DType::bool_
                : is_floating(t);
  if (!ok)
    fail(kWrongType, name(),
         std::string("does not support dtype ") + std::string(name_of(t)) + ": " + in[0].spec().str());
  return {{t, in[0].shape(), {}}};
}

void Unary::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (in[0].dtype() == DType::bfloat16) {
    const auto& vk = cpu::vec::kernels();
    UnaryKind k = kind_;
    cpu::bfloat16_unary_blocks(static_cast<const std::uint16_t*>(in[0].raw_data()),
                               static_cast<std::uint16_t*>(out[0].raw_mutable_data()), in[0].num_elements(),
                               unary_cost(k), [&](const float* x, float* y, std::int64_t m) { vk.unary_f32(k, x, y, m); });
    return;
  }
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    unary_loop<T>(kind_, in[0].data<T>().data(), out[0].mutable_data<T>().data(), in[0].num_elements());
  });
}

std::vector<Tensor> Unary::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                               const std::vector<bool>& needed) const {
  const Tensor &x = in[0], &y = out[0], &g = cot[0];
  // bfloat16: the formulas of more than one op run in float32 and round once, as they did when
  // the op itself ran in float32 between casts (relu's, gelu's and neg's are one op already).
  if (x.dtype() == DType::bfloat16 && kind_ != UnaryKind::relu && kind_ != UnaryKind::gelu && kind_ != UnaryKind::neg)
    return detail::vjp_in_float32(in, out, cot, [&](auto i, auto o, auto c) { return vjp(i, o, c, needed); });
  switch (kind_) {
    case UnaryKind::neg: return {-g};
    case UnaryKind::abs: return {g * (cast(x > 0.0, x.dtype()) - cast(x < 0.0, x.dtype()))};
    case UnaryKind::exp: return {g * y};
    case UnaryKind::log: return {g / x};
    case UnaryKind::sqrt: return {g / (y * 2.0)};
    case UnaryKind::rsqrt: return {g * y * y * y * -0.5};
    case UnaryKind::square: return {g * x * 2.0};
    // relu and gelu: one-pass gradient ops (src/ops/activation_grad_op.h); relu's reads its
    // output, so that the pre-activation need not outlive the forward pass.
    case UnaryKind::relu: return {relu_grad(y, g)};
    case UnaryKind::sigmoid: return {g * y * (1.0 - y)};
    case UnaryKind::tanh: return {g * (1.0 - y * y)};
    case UnaryKind::gelu: return {gelu_grad(x, g)};  // d/dx x*Phi(x) = Phi(x) + x*phi(x)
    case UnaryKind::erf: return {g * exp(-(x * x)) * 1.12837916709551257390};
    case UnaryKind::sin: return {g * cos(x)};
    case UnaryKind::cos: return {-(g * sin(x))};
    case UnaryKind::tan: return {g * (1.0 + y * y)};
    case UnaryKind::asin: return {g * rsqrt(1.0 - x * x)};
    case UnaryKind::acos: return {-(g * rsqrt(1.0 - x * x))};
    case UnaryKind::atan: return {g / (1.0 + x * x)};
    case UnaryKind::sinh: return {g * cosh(x)};
    case UnaryKind::cosh: return {g * sinh(x)};
    case UnaryKind::asinh: return {g * rsqrt(x * x + 1.0)};
    case UnaryKind::acosh: return {g * rsqrt(x * x - 1.0)};
    case UnaryKind::atanh: return {g / (1.0 - x * x)};
    case UnaryKind::expm1: return {g * (y + 1.0)};
    case UnaryKind::erfc: return {g * exp(-(x * x)) * -1.12837916709551257390};
    case UnaryKind::logical_not: break;
  }
  return {Tensor()};
}

namespace {

// A complex input runs the complex op of the same function; the functions without one (relu,
// erf, comparisons ...) say so, as TF's kernels do not take complex tensors either.
[[noreturn]] void no_complex_form(const char* op, const Tensor& x) {
  fail(kWrongType, op, "does not take complex tensors, got " + x.spec().str());
}

Tensor complex_of(UnaryKind k, const Tensor& x) {
  switch (k) {
    case UnaryKind::neg: return detail::complex_unary(ComplexFn::neg, x);
    case UnaryKind::abs: return detail::complex_part(ComplexPartKind::abs, x);
    case UnaryKind::exp: return detail::complex_unary(ComplexFn::exp, x);
    case UnaryKind::log: return detail::complex_unary(ComplexFn::log, x);
    case UnaryKind::sqrt: return detail::complex_unary(ComplexFn::sqrt, x);
    case UnaryKind::rsqrt: return detail::complex_unary(ComplexFn::rsqrt, x);
    case UnaryKind::square: return detail::complex_unary(ComplexFn::square, x);
    case UnaryKind::tanh: return detail::complex_unary(ComplexFn::tanh, x);
    case UnaryKind::sin: return detail::complex_unary(ComplexFn::sin, x);
    case UnaryKind::cos: return detail::complex_unary(ComplexFn::cos, x);
    case UnaryKind::tan: return detail::complex_unary(ComplexFn::tan, x);
    case UnaryKind::asin: return detail::complex_unary(ComplexFn::asin, x);
    case UnaryKind::acos: return detail::complex_unary(ComplexFn::acos, x);
    case UnaryKind::atan: return detail::complex_unary(ComplexFn::atan, x);
    case UnaryKind::sinh: return detail::complex_unary(ComplexFn::sinh, x);
    case UnaryKind::cosh: return detail::complex_unary(ComplexFn::cosh, x);
    case UnaryKind::asinh: return detail::complex_unary(ComplexFn::asinh, x);
    case UnaryKind::acosh: return detail::complex_unary(ComplexFn::acosh, x);
    case UnaryKind::atanh: return detail::complex_unary(ComplexFn::atanh, x);
    case UnaryKind::expm1: return detail::complex_unary(ComplexFn::expm1, x);
    default: no_complex_form(unary_name(k), x);
  }
}

Tensor unary(UnaryKind k, const Tensor& x) {
  if (detail::complex_input(x)) [[unlikely]]
    return complex_of(k, x);
  return dispatch1(Unary(k), {x});
}

// ---------------------------------------------------------------- binary
// The vector kernel for K on T, if there is one:
// out[r * cols + i] = a[r * a_row + i * as] K b[r * b_row + i * bs], steps 0 or 1.
template <BinaryKind K, class T, class R>
auto vector_binary() {
  using Fn = void (*)(const T*, std::int64_t, std::int64_t, const T*, std::int64_t, std::int64_t, R*, std::int64_t,
                      std::int64_t);
  if constexpr (std::is_same_v<T, float> && std::is_same_v<R, float>)
    return Fn([](const float* a, std::int64_t ar, std::int64_t as, const float* b, std::int64_t br, std::int64_t bs,
                 float* o, std::int64_t rows, std::int64_t cols) {
      cpu::vec::kernels().binary_f32(K, a, ar, as, b, br, bs, o, rows, cols);
    });
  else if constexpr (std::is_same_v<T, double> && std::is_same_v<R, double>)
    return Fn([](const double* a, std::int64_t ar, std::int64_t as, const double* b, std::int64_t br, std::int64_t bs,
                 double* o, std::int64_t rows, std::int64_t cols) {
      cpu::vec::kernels().binary_f64(K, a, ar, as, b, br, bs, o, rows, cols);
    });
  else if constexpr (std::is_same_v<T, float> && is_comparison(K))
    return Fn([](const float* a, std::int64_t ar, std::int64_t as, const float* b, std::int64_t br, std::int64_t bs,
                 bool* o, std::int64_t rows, std::int64_t cols) {
      const auto& vk = cpu::vec::kernels();
      for (std::int64_t r = 0; r < rows; ++r) vk.compare_f32(K, a + r * ar, as, b + r * br, bs, o + r * cols, cols);
    });
  else
    return Fn(nullptr);
}

template <BinaryKind K, class T>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out) {
  using R = decltype(binary_value<K, T>(T{}, T{}));
  const T* pa = a.data<T>().data();
  const T* pb = b.data<T>().data();
  R* po = out.mutable_data<R>().data();
  std::int64_t n = out.num_elements();
  if (n == 0) return;  // (no stride arithmetic over the dims of an empty result)
  // A handful of elements: the scalar loop, which for these kinds rounds exactly as the vector
  // kernels do (one IEEE operation, or a select) and skips the dispatch.
  constexpr bool exact_scalar = K != BinaryKind::pow;
  if (exact_scalar && n <= 4 && (a.shape() == b.shape() || a.num_elements() == 1 || b.num_elements() == 1)) {
    std::int64_t as = a.num_elements() == 1 ? 0 : 1, bs = b.num_elements() == 1 ? 0 : 1;
    for (std::int64_t i = 0; i < n; ++i) po[i] = binary_value<K, T>(pa[i * as], pb[i * bs]);
    return;
  }
  if (auto vec = vector_binary<K, T, R>()) {
    std::int64_t cost = K == BinaryKind::pow ? 8 : 1;
    if (a.shape() == b.shape() || a.num_elements() == 1 || b.num_elements() == 1) {
      std::int64_t as = a.num_elements() == 1 ? 0 : 1, bs = b.num_elements() == 1 ? 0 : 1;
      cpu::parallel_for(n, cost, [&](std::int64_t s, std::int64_t e) {
        vec(pa + s * as, 0, as, pb + s * bs, 0, bs, po + s, 1, e - s);
      });
      return;
    }
    std::array<std::vector<std::int64_t>, 2> strides{cpu::broadcast_strides(a.shape(), out.shape()),
                                                     cpu::broadcast_strides(b.shape(), out.shape())};
    cpu::CollapsedBroadcast<2> c = cpu::collapse_broadcast<2>(out.shape(), strides);
    auto unit = [](std::int64_t step) { return step == 0 || step == 1; };
    if (c.rank >= 1 && c.rank <= 2 && unit(c.strides[0][c.rank - 1]) && unit(c.strides[1][c.rank - 1])) {
      // Rows of a row or column broadcast (bias adds, per-row scales): one kernel call per
      // block of rows.
      std::int64_t cols = c.dims[c.rank - 1], rows = n / cols;
      std::int64_t ar = c.rank == 2 ? c.strides[0][0] : 0, br = c.rank == 2 ? c.strides[1][0] : 0;
      cpu::parallel_for(rows, cols * cost, [&](std::int64_t r0, std::int64_t r1) {
        vec(pa + r0 * ar, ar, c.strides[0][c.rank - 1], pb + r0 * br, br, c.strides[1][c.rank - 1], po + r0 * cols,
            r1 - r0, cols);
      });
      return;
    }
    cpu::for_each_broadcast_row<2>(out.shape(), strides, [&](std::int64_t o, std::int64_t cnt, auto off, auto inner) {
      if (unit(inner[0]) && unit(inner[1])) {
        vec(pa + off[0], 0, inner[0], pb + off[1], 0, inner[1], po + o, 1, cnt);
      } else {
        for (std::int64_t i = 0; i < cnt; ++i) po[o + i] = binary_value<K, T>(pa[off[0] + i * inner[0]], pb[off[1] + i * inner[1]]);
      }
    });
    return;
  }
  if (a.shape() == b.shape()) {
    cpu::parallel_for(n, 1, [&](std::int64_t s, std::int64_t e) {
      for (auto i = s; i < e; ++i) po[i] = binary_value<K, T>(pa[i], pb[i]);
    });
  } else if (b.num_elements() == 1 && a.shape() == out.shape()) {
    T y = pb[0];
    cpu::parallel_for(n, 1, [&](std::int64_t s, std::int64_t e) {
      for (auto i = s; i < e; ++i) po[i] = binary_value<K, T>(pa[i], y);
    });
  } else if (a.num_elements() == 1 && b.shape() == out.shape()) {
    T x = pa[0];
    cpu::parallel_for(n, 1, [&](std::int64_t s, std::int64_t e) {
      for (auto i = s; i < e; ++i) po[i] = binary_value<K, T>(x, pb[i]);
    });
  } else {
    std::array<std::vector<std::int64_t>, 2> strides{cpu::broadcast_strides(a.shape(), out.shape()),
                                                     cpu::broadcast_strides(b.shape(), out.shape())};
    cpu::for_each_broadcast_row<2>(out.shape(), strides, [&](std::int64_t o, std::int64_t cnt, auto off, auto inner) {
      const T* x = pa + off[0];
      const T* y = pb + off[1];
      for (std::int64_t i = 0; i < cnt; ++i) po[o + i] = binary_value<K, T>(x[i * inner[0]], y[i * inner[1]]);
    });
  }
}

template <class T>
void binary_dispatch(BinaryKind k, const Tensor& a, const Tensor& b, Tensor& out) {
  switch (k) {
#define EF_CASE(K) case BinaryKind::K: binary_loop<BinaryKind::K, T>(a, b, out); break;
    EF_CASE(add) EF_CASE(sub) EF_CASE(mul) EF_CASE(div) EF_CASE(pow) EF_CASE(maximum) EF_CASE(minimum)
    EF_CASE(equal) EF_CASE(not_equal) EF_CASE(less) EF_CASE(less_equal) EF_CASE(greater)
    EF_CASE(greater_equal) EF_CASE(logical_and) EF_CASE(logical_or)
#undef EF_CASE
  }
}

// The operand of a row broadcast: `small`'s shape, leading 1s dropped, is the output's trailing
// dims (a bias [C] against [N, H, W, C]); the row's length, or 0 for any other shape.
std::int64_t broadcast_row_length(const Shape& small, const Shape& out) {
  int lead = 0;
  while (lead < small.rank() && small[lead] == 1) ++lead;
  const int k = small.rank() - lead;
  if (k == 0 || k > out.rank()) return 0;
  for (int i = 0; i < k; ++i)
    if (small[lead + i] != out[out.rank() - k + i]) return 0;
  return small.num_elements();
}

// bfloat16 arithmetic (Binary::computes_bfloat16), the float32 kernel's operations on widened
// values: same shapes and scalars a block at a time, row broadcasts (bias adds) a block of
// rows at a time against the row widened once, other broadcasts through float32 copies.
void binary_bfloat16(BinaryKind k, const Tensor& a, const Tensor& b, Tensor& out) {
  const std::int64_t n = out.num_elements();
  if (n == 0) return;
  const auto& vk = cpu::vec::kernels();
  const std::int64_t cost = k == BinaryKind::pow ? 8 : 1;
  const auto* pa = static_cast<const std::uint16_t*>(a.raw_data());
  const auto* pb = static_cast<const std::uint16_t*>(b.raw_data());
  auto* po = static_cast<std::uint16_t*>(out.raw_mutable_data());
  const bool a_whole = a.shape() == out.shape(), b_whole = b.shape() == out.shape();
  if ((a_whole || a.num_elements() == 1) && (b_whole || b.num_elements() == 1)) {
    cpu::bfloat16_binary_blocks(pa, a_whole ? 1 : 0, pb, b_whole ? 1 : 0, po, n, cost,
                                [&](const float* x, std::int64_t xs, const float* y, std::int64_t ys, float* o,
                                    std::int64_t m) { vk.binary_f32(k, x, 0, xs, y, 0, ys, o, 1, m); });
    return;
  }
  const std::int64_t cols = a_whole ? broadcast_row_length(b.shape(), out.shape())
                            : b_whole ? broadcast_row_length(a.shape(), out.shape())
                                      : 0;
  if (cols == 0) {
    Tensor wide = Tensor::empty(DType::float32, out.shape());
    binary_dispatch<float>(k, cast(a, DType::float32), cast(b, DType::float32), wide);
    vk.cast(cpu::kFloat32Code, cpu::kBfloat16Code, wide.raw_data(), po, n);
    return;
  }
  const std::uint16_t* whole = a_whole ? pa : pb;
  thread_local std::vector<float> row_buffer;  // kept: a replay allocates nothing once it has grown
  if (static_cast<std::int64_t>(row_buffer.size()) < cols) row_buffer.resize(static_cast<std::size_t>(cols));
  float* const row = row_buffer.data();  // this thread's buffer, read by the workers below
  vk.cast(cpu::kBfloat16Code, cpu::kFloat32Code, a_whole ? pb : pa, row, cols);
  // out[r * cols + i] for rows [r, r + rows) and columns [c, c + m), m * rows <= the block.
  auto run = [&](float* wide, float* result, std::int64_t r, std::int64_t rows, std::int64_t c, std::int64_t m) {
    for (std::int64_t i = 0; i < rows; ++i)
      vk.cast(cpu::kBfloat16Code, cpu::kFloat32Code, whole + (r + i) * cols + c, wide + i * m, m);
    const float* row_at = row + c;
    if (a_whole) vk.binary_f32(k, wide, m, 1, row_at, 0, 1, result, rows, m);
    else vk.binary_f32(k, row_at, 0, 1, wide, m, 1, result, rows, m);
    for (std::int64_t i = 0; i < rows; ++i)
      vk.cast(cpu::kFloat32Code, cpu::kBfloat16Code, result + i * m, po + (r + i) * cols + c, m);
  };
  cpu::parallel_for(n / cols, cols * cost, [&](std::int64_t r0, std::int64_t r1) {
    alignas(64) float wide[cpu::kBfloat16Block], result[cpu::kBfloat16Block];
    if (cols <= cpu::kBfloat16Block) {
      const std::int64_t per_block = cpu::kBfloat16Block / cols;
      for (std::int64_t r = r0; r < r1; r += per_block) run(wide, result, r, std::min(per_block, r1 - r), 0, cols);
    } else {
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t c = 0; c < cols; c += cpu::kBfloat16Block)
          run(wide, result, r, 1, c, std::min(cpu::kBfloat16Block, cols - c));
    }
  });
}

void check_no_zero_divisor(const Primitive& op, const Tensor& b) {
  dispatch_dtype(b.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (T v : b.data<T>())
      if (v == T(0)) fail(op.name(), "integer division by zero");
  });
}

}  // namespace

std::vector<TensorSpec> Binary::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_same_dtype(*this, in);
  DType t = in[0].dtype();
  if (is_logical(kind_) && t != DType::bool_)
    fail(kWrongType, name(), "needs bool inputs, got " + describe(in, " and "));
  if (!is_logical(kind_) && !is_comparison(kind_) && t == DType::bool_)
    fail(kWrongType, name(), "does not support bool inputs: " + describe(in, " and "));
  DType out = (is_comparison(kind_) || is_logical(kind_)) ? DType::bool_ : t;
  return {{out, broadcast_shapes(*this, in), {}}};
}

void Binary::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (kind_ == BinaryKind::div && is_integer(in[1].dtype())) check_no_zero_divisor(*this, in[1]);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (in[0].dtype() == DType::bfloat16) {  // arithmetic kinds only (computes_bfloat16)
    binary_bfloat16(kind_, in[0], in[1], out[0]);
    return;
  }
  dispatch_dtype(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      if (is_logical(kind_) || is_comparison(kind_)) binary_dispatch<bool>(kind_, in[0], in[1], out[0]);
    } else {
      if (!is_logical(kind_)) binary_dispatch<T>(kind_, in[0], in[1], out[0]);
    }
  });
}

namespace {

// Whether broadcasting `x` against `other` leaves x's shape as it is on every run: other has no
// more axes, and each of its axes is 1 or x's own static size. Then x's gradient needs no
// sum_to, which (with a dynamic batch axis) would keep x alive as its shape's source and stop
// fuse_dense from taking in a Dense layer's bias add during training.
bool broadcast_keeps_shape(const Tensor& x, const Tensor& other) {
  const Shape &xs = x.shape(), &os = other.shape();
  if (os.rank() > xs.rank()) return false;
  for (int i = 1; i <= static_cast<int>(os.rank()); ++i) {
    const std::int64_t o = os[static_cast<int>(os.rank()) - i], d = xs[static_cast<int>(xs.rank()) - i];
    if (o != 1 && (o == kDynamic || o != d)) return false;
  }
  return true;
}

Tensor gradient_to(const Tensor& grad, const Tensor& x, const Tensor& other) {
  return broadcast_keeps_shape(x, other) && grad.shape() == x.shape() ? grad : sum_to(grad, x);
}

}  // namespace

std::vector<Tensor> Binary::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  const Tensor &a = in[0], &b = in[1], &y = out[0], &g = cot[0];
  // bfloat16: formulas of more than one op in float32, rounded once (add, sub and mul's are
  // one op each, maximum's and minimum's selects).
  if (a.dtype() == DType::bfloat16 && (kind_ == BinaryKind::div || kind_ == BinaryKind::pow))
    return detail::vjp_in_float32(in, out, cot, [&](auto i, auto o, auto c) { return vjp(i, o, c, needed); });
  Tensor zero = scalar_like(g, 0.0);
  Tensor ga, gb;
  switch (kind_) {
    case BinaryKind::add: ga = g; gb = g; break;
    case BinaryKind::sub: ga = g; if (needed[1]) gb = -g; break;
    case BinaryKind::mul: if (needed[0]) ga = g * b; if (needed[1]) gb = g * a; break;
    case BinaryKind::div: if (needed[0]) ga = g / b; if (needed[1]) gb = -(g * y) / b; break;
    case BinaryKind::pow:
      if (needed[0]) ga = g * b * pow(a, b - 1.0);
      // d/db a^b = a^b log(a), taken as 0 where a <= 0 (like TF) so that no NaN leaks in.
      if (needed[1]) gb = where(a > 0.0, g * y * log(where(a > 0.0, a, scalar_like(a, 1.0))), zero);
      break;
    // Ties: maximum gives the whole gradient to a where a >= b, minimum where a <= b (like TF).
    case BinaryKind::maximum:
    case BinaryKind::minimum: {
      Tensor pick_a = kind_ == BinaryKind::maximum ? greater_equal(a, b) : less_equal(a, b);
      if (needed[0]) ga = where(pick_a, g, zero);
      if (needed[1]) gb = where(pick_a, zero, g);
      break;
    }
    default: return {Tensor(), Tensor()};
  }
  return {needed[0] && ga.defined() ? gradient_to(ga, a, b) : Tensor(), needed[1] && gb.defined() ? gradient_to(gb, b, a) : Tensor()};
}

namespace {

Tensor binary(BinaryKind k, const Tensor& a, const Tensor& b) {
  if (detail::complex_input(a) || detail::complex_input(b)) [[unlikely]] {
    switch (k) {
      case BinaryKind::add: return detail::complex_binary(ComplexBinaryKind::add, a, b);
      case BinaryKind::sub: return detail::complex_binary(ComplexBinaryKind::sub, a, b);
      case BinaryKind::mul: return detail::complex_binary(ComplexBinaryKind::mul, a, b);
      case BinaryKind::div: return detail::complex_binary(ComplexBinaryKind::div, a, b);
      case BinaryKind::pow: return detail::complex_binary(ComplexBinaryKind::pow, a, b);
      case BinaryKind::equal: return detail::complex_binary(ComplexBinaryKind::equal, a, b);
      case BinaryKind::not_equal: return detail::complex_binary(ComplexBinaryKind::not_equal, a, b);
      default: no_complex_form(binary_name(k), detail::complex_input(a) ? a : b);  // complex numbers are not ordered
    }
  }
  return dispatch1(Binary(k), {a, b});
}

// ---------------------------------------------------------------- where
}  // namespace

std::vector<TensorSpec> Where::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  if (in[0].dtype() != DType::bool_) fail(kWrongType, name(), "condition must be bool, got " + in[0].spec().str());
  if (in[1].dtype() != in[2].dtype())
    fail(kWrongType, name(), "branches have different dtypes: " + in[1].spec().str() + " vs " + in[2].spec().str());
  return {{in[1].dtype(), broadcast_shapes(*this, in), {}}};
}

void Where::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  const Shape& s = specs[0].shape;
  if (s.num_elements() == 0) return;
  // Each operand whole or a single element (relu's gradient: where(x > 0, g, 0)): one flat,
  // branchless loop; otherwise the general broadcasting walk.
  auto flat_stride = [&](const Tensor& t) { return t.shape() == s ? 1 : t.num_elements() == 1 ? 0 : -1; };
  std::int64_t sc = flat_stride(in[0]), sa = flat_stride(in[1]), sb = flat_stride(in[2]);
  const bool* c = in[0].data<bool>().data();
  dispatch_dtype(in[1].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* a = in[1].data<T>().data();
    const T* b = in[2].data<T>().data();
    T* o = out[0].mutable_data<T>().data();
    if (sc >= 0 && sa >= 0 && sb >= 0) {
      if constexpr (cpu::vec::vectorized<T>) {  // the runtime-chosen instruction set
        const auto& vk = cpu::vec::kernels();
        cpu::parallel_for(s.num_elements(), 1, [&](std::int64_t begin, std::int64_t end) {
          if constexpr (std::is_same_v<T, float>)
            vk.where_f32(c + begin * sc, sc, a + begin * sa, sa, b + begin * sb, sb, o + begin, end - begin);
          else
            vk.where_f64(c + begin * sc, sc, a + begin * sa, sa, b + begin * sb, sb, o + begin, end - begin);
        });
        return;
      }
      cpu::parallel_for(s.num_elements(), 1, [&](std::int64_t begin, std::int64_t end) {
        if (sc == 1 && sa == 1 && sb == 0) {
          T other = b[0];
          for (std::int64_t i = begin; i < end; ++i) o[i] = select_bits(c[i], a[i], other);
        } else if (sc == 1 && sa == 1 && sb == 1) {
          for (std::int64_t i = begin; i < end; ++i) o[i] = select_bits(c[i], a[i], b[i]);
        } else {
          for (std::int64_t i = begin; i < end; ++i) o[i] = c[i * sc] ? a[i * sa] : b[i * sb];
        }
      });
      return;
    }
    std::array<std::vector<std::int64_t>, 3> strides{cpu::broadcast_strides(in[0].shape(), s),
                                                     cpu::broadcast_strides(in[1].shape(), s),
                                                     cpu::broadcast_strides(in[2].shape(), s)};
    cpu::for_each_broadcast_row<3>(s, strides, [&](std::int64_t base, std::int64_t n, auto off, auto inner) {
      for (std::int64_t i = 0; i < n; ++i)
        o[base + i] = c[off[0] + i * inner[0]] ? a[off[1] + i * inner[1]] : b[off[2] + i * inner[2]];
    });
  });
}

std::vector<Tensor> Where::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                               const std::vector<bool>& needed) const {
  const Tensor& g = cot[0];
  Tensor zero = scalar_like(g, 0.0);
  return {Tensor(), needed[1] ? sum_to(where(in[0], g, zero), in[1]) : Tensor(),
          needed[2] ? sum_to(where(in[0], zero, g), in[2]) : Tensor()};
}

OpParams Cast::parameters() const { return OpParams().add("dtype", to_); }

std::vector<TensorSpec> Cast::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if ((is_complex(in[0].dtype()) || is_complex(to_)) && in[0].dtype() != to_)
    fail(kWrongType, name(), "converts complex tensors only through ef::cast (by parts), got " + in[0].spec().str() +
                                 " to " + std::string(name_of(to_)));
  return {{to_, in[0].shape(), {}}};
}

void Cast::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  if (in[0].dtype() == to_) {  // no-op cast: share storage
    out[0] = in[0];
    return;
  }
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  // The vector kernels take DType's values as ints.
  static_assert(static_cast<int>(DType::float32) == 0 && static_cast<int>(DType::float64) == 1 &&
                static_cast<int>(DType::int32) == 2 && static_cast<int>(DType::int64) == 3 &&
                static_cast<int>(DType::bool_) == 4 && static_cast<int>(DType::bfloat16) == 5);
  const auto& vk = cpu::vec::kernels();
  const void* x = in[0].raw_data();
  void* y = out[0].raw_mutable_data();
  std::size_t from_size = size_of(in[0].dtype()), to_size = size_of(to_);
  int from = static_cast<int>(in[0].dtype()), to = static_cast<int>(to_);
  if (vk.cast(from, to, nullptr, nullptr, 0)) {  // (a pair the kernels have: every pair today)
    cpu::parallel_for(in[0].num_elements(), 1, [&](std::int64_t b, std::int64_t e) {
      vk.cast(from, to, static_cast<const char*>(x) + b * from_size, static_cast<char*>(y) + b * to_size, e - b);
    });
    return;
  }
  dispatch_storage_dtype(in[0].dtype(), [&](auto from_tag) {  // float16's conversions: one rounding each
    using From = decltype(from_tag);
    dispatch_storage_dtype(to_, [&](auto to_tag) {
      using To = decltype(to_tag);
      auto src = in[0].data<From>();
      auto dst = out[0].mutable_data<To>();
      for (std::size_t i = 0; i < src.size(); ++i) dst[i] = saturate_cast<To>(src[i]);
    });
  });
}

std::vector<Tensor> Cast::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                              const std::vector<bool>&) const {
  // Only float -> float casts carry a gradient; through an integer or bool there is none.
  if (!is_floating(in[0].dtype()) || !is_floating(to_)) return {Tensor()};
  return {cast(cot[0], in[0].dtype())};
}

std::vector<TensorSpec> Identity::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  return {in[0].spec()};
}

void Identity::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  out[0] = Tensor(new_tensor_impl(in[0].impl()));  // a new handle on the same storage
}

std::vector<Tensor> Identity::vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                                  const std::vector<bool>&) const {
  return {cot[0]};
}

Tensor neg(const Tensor& x) { return unary(UnaryKind::neg, x); }
Tensor abs(const Tensor& x) { return unary(UnaryKind::abs, x); }
Tensor exp(const Tensor& x) { return unary(UnaryKind::exp, x); }
Tensor log(const Tensor& x) { return unary(UnaryKind::log, x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryKind::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary(UnaryKind::rsqrt, x); }
Tensor square(const Tensor& x) { return unary(UnaryKind::square, x); }
Tensor relu(const Tensor& x) { return unary(UnaryKind::relu, x); }
Tensor sigmoid(const Tensor& x) { return unary(UnaryKind::sigmoid, x); }
Tensor tanh(const Tensor& x) { return unary(UnaryKind::tanh, x); }
Tensor gelu(const Tensor& x) { return unary(UnaryKind::gelu, x); }
Tensor erf(const Tensor& x) { return unary(UnaryKind::erf, x); }
Tensor sin(const Tensor& x) { return unary(UnaryKind::sin, x); }
Tensor cos(const Tensor& x) { return unary(UnaryKind::cos, x); }
Tensor tan(const Tensor& x) { return unary(UnaryKind::tan, x); }
Tensor asin(const Tensor& x) { return unary(UnaryKind::asin, x); }
Tensor acos(const Tensor& x) { return unary(UnaryKind::acos, x); }
Tensor atan(const Tensor& x) { return unary(UnaryKind::atan, x); }
Tensor sinh(const Tensor& x) { return unary(UnaryKind::sinh, x); }
Tensor cosh(const Tensor& x) { return unary(UnaryKind::cosh, x); }
Tensor asinh(const Tensor& x) { return unary(UnaryKind::asinh, x); }
Tensor acosh(const Tensor& x) { return unary(UnaryKind::acosh, x); }
Tensor atanh(const Tensor& x) { return unary(UnaryKind::atanh, x); }
Tensor expm1(const Tensor& x) { return unary(UnaryKind::expm1, x); }
Tensor erfc(const Tensor& x) { return unary(UnaryKind::erfc, x); }
Tensor logical_not(const Tensor& x) { return unary(UnaryKind::logical_not, x); }

// TF's add concatenates string tensors.
Tensor add(const Tensor& a, const Tensor& b) {
  if (a.dtype() == DType::string && b.dtype() == DType::string) return strings::join({a, b});
  return binary(BinaryKind::add, a, b);
}
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryKind::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryKind::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryKind::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(BinaryKind::pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryKind::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryKind::minimum, a, b); }
// String tensors compare by their bytes (TF's tf.equal takes them too).
Tensor equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() == DType::string || b.dtype() == DType::string) return strings::equal(a, b);
  return binary(BinaryKind::equal, a, b);
}
Tensor not_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() == DType::string || b.dtype() == DType::string) return strings::not_equal(a, b);
  return binary(BinaryKind::not_equal, a, b);
}
Tensor less(const Tensor& a, const Tensor& b) { return binary(BinaryKind::less, a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return binary(BinaryKind::less_equal, a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return binary(BinaryKind::greater, a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return binary(BinaryKind::greater_equal, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(BinaryKind::logical_and, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(BinaryKind::logical_or, a, b); }

Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  if (detail::complex_input(a) || detail::complex_input(b)) [[unlikely]]
    return ef::complex(where(c, real(a), real(b)), where(c, imag(a), imag(b)));
  return dispatch1(Where(), {c, a, b});
}
Tensor cast(const Tensor& x, DType dtype) {
  if (x.defined() && (is_complex(x.dtype()) || is_complex(dtype)) && x.dtype() != dtype) [[unlikely]]
    return detail::complex_cast(x, dtype);
  return dispatch1(Cast(dtype), {x});
}
Tensor identity(const Tensor& x) { return dispatch1(Identity(), {x}); }
Tensor stop_gradient(const Tensor& x) { return dispatch1(Identity(true), {x}); }

Tensor scalar_like(const Tensor& like, double value) { return full(Shape{}, value, like.dtype()); }


void detail::add_elementwise_factories(detail::OpFactories& f) {
  for (int k = 0; k <= static_cast<int>(UnaryKind::logical_not); ++k) {
    auto kind = static_cast<UnaryKind>(k);
    f[unary_name(kind)] = [kind](const OpParams&) { return std::make_shared<Unary>(kind); };
  }
  for (int k = 0; k <= static_cast<int>(BinaryKind::logical_or); ++k) {
    auto kind = static_cast<BinaryKind>(k);
    f[binary_name(kind)] = [kind](const OpParams&) { return std::make_shared<Binary>(kind); };
  }
  f["where"] = [](const OpParams&) { return std::make_shared<Where>(); };
  f["cast"] = [](const OpParams& p) { return std::make_shared<Cast>(p.dtype("dtype")); };
  f["identity"] = [](const OpParams&) { return std::make_shared<Identity>(false); };
  f["stop_gradient"] = [](const OpParams&) { return std::make_shared<Identity>(true); };
  add_activation_grad_factories(f);
}

}  // namespace ef
