#include "ops/complex_op.h"

#include <cblas.h>

#include <cmath>
#include <complex>
#include <cstring>

#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/parallel.h"
#include "ops/op_factories.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"
#include "ops/shape_rules.h"

namespace ef {
namespace {

constexpr const char* kFnNames[] = {"complex_neg",  "conj",          "complex_exp",   "complex_log",   "complex_sqrt",
                                    "complex_rsqrt", "complex_square", "complex_reciprocal", "complex_sin", "complex_cos",
                                    "complex_tan",  "complex_sinh",  "complex_cosh",  "complex_tanh",  "complex_asin",
                                    "complex_acos", "complex_atan",  "complex_asinh", "complex_acosh", "complex_atanh",
                                    "complex_sign", "complex_expm1", "complex_log1p"};
constexpr const char* kPartNames[] = {"real", "imag", "complex_abs", "angle"};
constexpr const char* kBinaryNames[] = {"complex_add", "complex_sub",   "complex_mul",      "complex_div",
                                        "complex_pow", "complex_equal", "complex_not_equal"};

void expect_complex(const Primitive& op, const Tensor& t, const char* what) {
  if (!is_complex(t.dtype()))
    fail(kWrongType, op.name(), std::string(what) + " must be complex64 or complex128, got " + t.spec().str());
}

// Calls fn with a std::complex of the dtype's precision.
template <class Fn>
decltype(auto) dispatch_complex(DType t, Fn&& fn) {
  if (t == DType::complex64) return fn(std::complex<float>{});
  return fn(std::complex<double>{});
}

// The product without C99 Annex G's infinity recovery (which makes std::complex's operator*
// a library call): TF's and NumPy's kernels multiply the same way.
template <class C>
inline C times(C a, C b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

template <class C>
C apply(ComplexFn fn, C z) {
  using R = typename C::value_type;
  switch (fn) {
    case ComplexFn::neg: return -z;
    case ComplexFn::conj: return std::conj(z);
    case ComplexFn::exp: return std::exp(z);
    case ComplexFn::log: return std::log(z);
    case ComplexFn::sqrt: return std::sqrt(z);
    case ComplexFn::rsqrt: return C(1) / std::sqrt(z);
    case ComplexFn::square: return times(z, z);
    case ComplexFn::reciprocal: return C(1) / z;
    case ComplexFn::sin: return std::sin(z);
    case ComplexFn::cos: return std::cos(z);
    case ComplexFn::tan: return std::tan(z);
    case ComplexFn::sinh: return std::sinh(z);
    case ComplexFn::cosh: return std::cosh(z);
    case ComplexFn::tanh: return std::tanh(z);
    case ComplexFn::asin: return std::asin(z);
    case ComplexFn::acos: return std::acos(z);
    case ComplexFn::atan: return std::atan(z);
    case ComplexFn::asinh: return std::asinh(z);
    case ComplexFn::acosh: return std::acosh(z);
    case ComplexFn::atanh: return std::atanh(z);
    case ComplexFn::sign: {
      R m = std::abs(z);
      return m == R(0) ? C(0) : z / m;
    }
    case ComplexFn::expm1: {  // exp(x) e^{iy} - 1 without cancellation near 0
      R x = z.real(), y = z.imag(), s = std::sin(y / 2);
      return {std::expm1(x) * std::cos(y) - 2 * s * s, std::exp(x) * std::sin(y)};
    }
    case ComplexFn::log1p: {  // log|1+z| + i arg(1+z), the modulus through log1p near 0
      R x = z.real(), y = z.imag();
      return {R(0.5) * std::log1p(x * (2 + x) + y * y), std::atan2(y, 1 + x)};
    }
  }
  return z;
}

template <class C>
C combine(ComplexBinaryKind k, C a, C b) {
  switch (k) {
    case ComplexBinaryKind::add: return a + b;
    case ComplexBinaryKind::sub: return a - b;
    case ComplexBinaryKind::mul: return times(a, b);
    case ComplexBinaryKind::div: return a / b;
    case ComplexBinaryKind::pow:
      if (b == C(0)) return C(1);
      if (a == C(0)) return b.real() > 0 ? C(0) : C(std::numeric_limits<typename C::value_type>::quiet_NaN());
      return std::pow(a, b);
    default: return C(0);
  }
}

// Runs fn(out_index, offset_a, offset_b) over the broadcast of two tensors into `shape`.
template <class Fn>
void for_each_pair(const Tensor& a, const Tensor& b, const Shape& shape, Fn&& fn) {
  std::array<std::vector<std::int64_t>, 2> strides{cpu::broadcast_strides(a.shape(), shape),
                                                  cpu::broadcast_strides(b.shape(), shape)};
  cpu::for_each_broadcast_row<2>(shape, strides, [&](std::int64_t o, std::int64_t n, auto off, auto inner) {
    for (std::int64_t i = 0; i < n; ++i) fn(o + i, off[0] + i * inner[0], off[1] + i * inner[1]);
  });
}

}  // namespace

// ---------------------------------------------------------------- ComplexUnary
const char* ComplexUnary::name() const { return kFnNames[static_cast<int>(fn_)]; }

std::vector<TensorSpec> ComplexUnary::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_complex(*this, in[0], "the input");
  return {in[0].spec()};
}

void ComplexUnary::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  dispatch_complex(specs[0].dtype, [&](auto tag) {
    using C = decltype(tag);
    const C* x = in[0].data<C>().data();
    C* y = out[0].mutable_data<C>().data();
    ComplexFn fn = fn_;
    cpu::parallel_for(in[0].num_elements(), 16, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) y[i] = apply(fn, x[i]);
    });
  });
}

std::vector<Tensor> ComplexUnary::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                      std::span<const Tensor> cot, const std::vector<bool>&) const {
  const Tensor &z = in[0], &y = out[0], &g = cot[0];
  auto one = [&] { return ones_like(z); };
  // g * conj(f'(z)): TF's convention for holomorphic functions.
  auto through = [&](const Tensor& derivative) { return mul(g, conj(derivative)); };
  switch (fn_) {
    case ComplexFn::neg: return {neg(g)};
    case ComplexFn::conj: return {conj(g)};
    case ComplexFn::exp: return {through(y)};
    case ComplexFn::log: return {div(g, conj(z))};
    case ComplexFn::sqrt: return {div(g, conj(mul(y, scalar_like(y, 2.0))))};
    case ComplexFn::rsqrt: return {through(mul(mul(y, mul(y, y)), scalar_like(y, -0.5)))};
    case ComplexFn::square: return {through(mul(z, scalar_like(z, 2.0)))};
    case ComplexFn::reciprocal: return {through(neg(mul(y, y)))};
    case ComplexFn::sin: return {through(cos(z))};
    case ComplexFn::cos: return {through(neg(sin(z)))};
    case ComplexFn::tan: return {through(add(one(), mul(y, y)))};
    case ComplexFn::sinh: return {through(cosh(z))};
    case ComplexFn::cosh: return {through(sinh(z))};
    case ComplexFn::tanh: return {through(sub(one(), mul(y, y)))};
    case ComplexFn::asin: return {div(g, conj(sqrt(sub(one(), mul(z, z)))))};
    case ComplexFn::acos: return {neg(div(g, conj(sqrt(sub(one(), mul(z, z))))))};
    case ComplexFn::atan: return {div(g, conj(add(one(), mul(z, z))))};
    case ComplexFn::asinh: return {div(g, conj(sqrt(add(mul(z, z), one()))))};
    case ComplexFn::acosh: return {div(g, conj(mul(sqrt(sub(z, one())), sqrt(add(z, one())))))};
    case ComplexFn::atanh: return {div(g, conj(sub(one(), mul(z, z))))};
    case ComplexFn::sign: return {zeros_like(z)};
    case ComplexFn::expm1: return {through(exp(z))};
    case ComplexFn::log1p: return {div(g, conj(add(one(), z)))};
  }
  return {Tensor()};
}

// ---------------------------------------------------------------- ComplexPart
const char* ComplexPart::name() const { return kPartNames[static_cast<int>(kind_)]; }

std::vector<TensorSpec> ComplexPart::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_complex(*this, in[0], "the input");
  return {{real_dtype_of(in[0].dtype()), in[0].shape(), {}}};
}

void ComplexPart::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  dispatch_complex(in[0].dtype(), [&](auto tag) {
    using C = decltype(tag);
    using R = typename C::value_type;
    const C* x = in[0].data<C>().data();
    R* y = out[0].mutable_data<R>().data();
    ComplexPartKind kind = kind_;
    cpu::parallel_for(in[0].num_elements(), 4, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        switch (kind) {
          case ComplexPartKind::real: y[i] = x[i].real(); break;
          case ComplexPartKind::imag: y[i] = x[i].imag(); break;
          case ComplexPartKind::abs: y[i] = std::hypot(x[i].real(), x[i].imag()); break;
          case ComplexPartKind::angle: y[i] = std::atan2(x[i].imag(), x[i].real()); break;
        }
      }
    });
  });
}

std::vector<Tensor> ComplexPart::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                     const std::vector<bool>&) const {
  const Tensor &z = in[0], &g = cot[0];
  Tensor zero = zeros_like(g);
  switch (kind_) {
    case ComplexPartKind::real: return {ef::complex(g, zero)};
    case ComplexPartKind::imag: return {ef::complex(zero, g)};
    case ComplexPartKind::abs:  // g z / |z| (0 at 0), as TF's
      return {mul(ef::complex(g, zero), detail::complex_unary(ComplexFn::sign, z))};
    case ComplexPartKind::angle: {  // g (-y + i x) / |z|^2
      Tensor x = real(z), y = imag(z), m2 = add(mul(x, x), mul(y, y));
      Tensor safe = where(equal(m2, zeros_like(m2)), ones_like(m2), m2);
      return {ef::complex(div(mul(neg(g), y), safe), div(mul(g, x), safe))};
    }
  }
  return {Tensor()};
}

// ---------------------------------------------------------------- MakeComplex
std::vector<TensorSpec> MakeComplex::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  for (const Tensor& t : in)
    if (t.dtype() != DType::float32 && t.dtype() != DType::float64)
      fail(kWrongType, name(), "the real and imaginary parts must be float32 or float64, got " + describe(in));
  if (in[0].dtype() != in[1].dtype())
    fail(kWrongType, name(), "the real and imaginary parts must have one dtype, got " + describe(in, " and "));
  return {{complex_dtype_of(in[0].dtype()), broadcast_shapes(*this, in), {}}};
}

void MakeComplex::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  dispatch_complex(specs[0].dtype, [&](auto tag) {
    using C = decltype(tag);
    using R = typename C::value_type;
    const R *re = in[0].data<R>().data(), *im = in[1].data<R>().data();
    C* y = out[0].mutable_data<C>().data();
    for_each_pair(in[0], in[1], specs[0].shape, [&](std::int64_t o, std::int64_t a, std::int64_t b) { y[o] = C(re[a], im[b]); });
  });
}

std::vector<Tensor> MakeComplex::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                     const std::vector<bool>& needed) const {
  std::vector<Tensor> g(2);
  if (needed[0]) g[0] = sum_to(real(cot[0]), in[0]);
  if (needed[1]) g[1] = sum_to(imag(cot[0]), in[1]);
  return g;
}

// ---------------------------------------------------------------- ComplexBinary
const char* ComplexBinary::name() const { return kBinaryNames[static_cast<int>(kind_)]; }

std::vector<TensorSpec> ComplexBinary::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_complex(*this, in[0], "the first input");
  expect_complex(*this, in[1], "the second input");
  if (in[0].dtype() != in[1].dtype())
    fail(kWrongType, name(), "dtypes differ: " + describe(in, " vs ") + " (binary ops need equal dtypes; cast first)");
  bool compare = kind_ == ComplexBinaryKind::equal || kind_ == ComplexBinaryKind::not_equal;
  return {{compare ? DType::bool_ : in[0].dtype(), broadcast_shapes(*this, in), {}}};
}

void ComplexBinary::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  dispatch_complex(in[0].dtype(), [&](auto tag) {
    using C = decltype(tag);
    const C *a = in[0].data<C>().data(), *b = in[1].data<C>().data();
    ComplexBinaryKind kind = kind_;
    if (kind == ComplexBinaryKind::equal || kind == ComplexBinaryKind::not_equal) {
      bool* y = out[0].mutable_data<bool>().data();
      bool want = kind == ComplexBinaryKind::equal;
      for_each_pair(in[0], in[1], specs[0].shape, [&](std::int64_t o, std::int64_t i, std::int64_t j) { y[o] = (a[i] == b[j]) == want; });
      return;
    }
    C* y = out[0].mutable_data<C>().data();
    if (in[0].shape() == specs[0].shape && in[1].shape() == specs[0].shape) {  // no broadcasting: one flat loop
      cpu::parallel_for(out[0].num_elements(), 4, [&](std::int64_t s, std::int64_t e) {
        for (std::int64_t i = s; i < e; ++i) y[i] = combine(kind, a[i], b[i]);
      });
      return;
    }
    for_each_pair(in[0], in[1], specs[0].shape, [&](std::int64_t o, std::int64_t i, std::int64_t j) { y[o] = combine(kind, a[i], b[j]); });
  });
}

std::vector<Tensor> ComplexBinary::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                       std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  const Tensor &a = in[0], &b = in[1], &y = out[0], &g = cot[0];
  Tensor ga, gb;
  switch (kind_) {
    case ComplexBinaryKind::add: ga = g, gb = g; break;
    case ComplexBinaryKind::sub: ga = g, gb = needed[1] ? neg(g) : Tensor(); break;
    case ComplexBinaryKind::mul:
      if (needed[0]) ga = mul(g, conj(b));
      if (needed[1]) gb = mul(g, conj(a));
      break;
    case ComplexBinaryKind::div:
      if (needed[0]) ga = div(g, conj(b));
      if (needed[1]) gb = neg(mul(g, conj(div(y, b))));
      break;
    case ComplexBinaryKind::pow: {
      // d/da = b a^(b-1), d/db = a^b log a, with log 0 taken as 0 (TF's rule for a = 0).
      if (needed[0]) ga = mul(g, conj(mul(b, pow(a, sub(b, ones_like(b))))));
      if (needed[1]) {
        Tensor nonzero = not_equal(a, zeros_like(a));
        Tensor log_a = detail::complex_unary(ComplexFn::log, where(nonzero, a, ones_like(a)));
        gb = mul(g, conj(mul(y, log_a)));
      }
      break;
    }
    default: return {Tensor(), Tensor()};
  }
  return {needed[0] ? sum_to(ga, a) : Tensor(), needed[1] ? sum_to(gb, b) : Tensor()};
}

// ---------------------------------------------------------------- ComplexMatMul
OpParams ComplexMatMul::parameters() const {
  return OpParams().add_flag("transpose_a", ta_).add_flag("transpose_b", tb_).add_flag("conj_a", ca_).add_flag("conj_b", cb_);
}

std::vector<TensorSpec> ComplexMatMul::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_complex(*this, in[0], "a");
  expect_complex(*this, in[1], "b");
  if (in[0].dtype() != in[1].dtype()) fail(kWrongType, name(), "dtypes differ: " + describe(in, " vs "));
  const Shape &sa = in[0].shape(), &sb = in[1].shape();
  if (sa.rank() < 2 || sb.rank() < 2) fail(name(), "needs matrices (rank >= 2), got " + describe(in, " and "));
  std::int64_t m = ta_ ? sa[sa.rank() - 1] : sa[sa.rank() - 2], ka = ta_ ? sa[sa.rank() - 2] : sa[sa.rank() - 1];
  std::int64_t kb = tb_ ? sb[sb.rank() - 1] : sb[sb.rank() - 2], n = tb_ ? sb[sb.rank() - 2] : sb[sb.rank() - 1];
  if (ka != kb && ka != kDynamic && kb != kDynamic)
    fail(name(), "inner dimensions differ: " + describe(in, " @ ") + " (" + std::to_string(ka) + " vs " + std::to_string(kb) + ")");
  std::vector<Shape> batches{Shape(std::vector<std::int64_t>(sa.begin(), sa.end() - 2)),
                             Shape(std::vector<std::int64_t>(sb.begin(), sb.end() - 2))};
  Shape batch;
  if (!try_broadcast(batches, batch)) fail(name(), "the batch dimensions do not broadcast: " + describe(in, " @ "));
  std::vector<std::int64_t> dims(batch.begin(), batch.end());
  dims.push_back(m);
  dims.push_back(n);
  return {{in[0].dtype(), Shape(dims), {}}};
}

void ComplexMatMul::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape &sa = in[0].shape(), &sb = in[1].shape(), &so = specs[0].shape;
  out[0] = zeros(so, specs[0].dtype);
  std::int64_t m = so[so.rank() - 2], n = so[so.rank() - 1];
  std::int64_t k = ta_ ? sa[sa.rank() - 2] : sa[sa.rank() - 1];
  if (m == 0 || n == 0 || k == 0) return;  // (zeros: an empty sum)
  Shape batch(std::vector<std::int64_t>(so.begin(), so.end() - 2));
  std::array<std::vector<std::int64_t>, 2> strides{
      cpu::broadcast_strides(Shape(std::vector<std::int64_t>(sa.begin(), sa.end() - 2)), batch),
      cpu::broadcast_strides(Shape(std::vector<std::int64_t>(sb.begin(), sb.end() - 2)), batch)};
  std::int64_t mat_a = sa[sa.rank() - 2] * sa[sa.rank() - 1], mat_b = sb[sb.rank() - 2] * sb[sb.rank() - 1];
  std::int64_t lda = sa[sa.rank() - 1], ldb = sb[sb.rank() - 1];
  // BLAS conjugates only with a transpose: a conjugated operand that is not transposed is
  // conjugated into a copy first.
  Tensor a = ca_ && !ta_ ? conj(in[0]) : in[0], b = cb_ && !tb_ ? conj(in[1]) : in[1];
  auto trans = [](bool t, bool c) { return !t ? CblasNoTrans : c ? CblasConjTrans : CblasTrans; };
  CBLAS_TRANSPOSE op_a = trans(ta_, ca_), op_b = trans(tb_, cb_);
  dispatch_complex(specs[0].dtype, [&](auto tag) {
    using C = decltype(tag);
    const C *pa = a.data<C>().data(), *pb = b.data<C>().data();
    C* po = out[0].mutable_data<C>().data();
    const C one(1), zero(0);
    cpu::for_each_broadcast_row<2>(batch, strides, [&](std::int64_t o, std::int64_t count, auto off, auto inner) {
      for (std::int64_t i = 0; i < count; ++i) {
        const C* ma = pa + (off[0] + i * inner[0]) * mat_a;
        const C* mb = pb + (off[1] + i * inner[1]) * mat_b;
        C* mo = po + (o + i) * m * n;
        if constexpr (std::is_same_v<C, std::complex<float>>)
          cblas_cgemm(CblasRowMajor, op_a, op_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one, ma,
                      static_cast<int>(lda), mb, static_cast<int>(ldb), &zero, mo, static_cast<int>(n));
        else
          cblas_zgemm(CblasRowMajor, op_a, op_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), &one, ma,
                      static_cast<int>(lda), mb, static_cast<int>(ldb), &zero, mo, static_cast<int>(n));
      }
    });
  });
}

std::vector<Tensor> ComplexMatMul::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                       const std::vector<bool>& needed) const {
  // With A' = op(a) and B' = op(b): dA' = g B'^H and dB' = A'^H g; op's adjoint (transpose
  // and/or conjugate) takes them back to a and b. B'^H is b under the opposite flags.
  const Tensor &a = in[0], &b = in[1], &g = cot[0];
  auto back = [](Tensor d, bool t, bool c) {
    if (t) {
      std::vector<int> perm(static_cast<std::size_t>(d.rank()));
      for (int i = 0; i < d.rank(); ++i) perm[static_cast<std::size_t>(i)] = i;
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      d = transpose(d, perm);
    }
    return c ? conj(d) : d;
  };
  std::vector<Tensor> grads(2);
  if (needed[0]) grads[0] = sum_to(back(detail::complex_matmul(g, b, false, !tb_, false, !cb_), ta_, ca_), a);
  if (needed[1]) grads[1] = sum_to(back(detail::complex_matmul(a, g, !ta_, false, !ca_, false), tb_, cb_), b);
  return grads;
}

// ---------------------------------------------------------------- functions
Tensor detail::complex_unary(ComplexFn fn, const Tensor& x) { return dispatch1(ComplexUnary(fn), {x}); }
Tensor detail::complex_binary(ComplexBinaryKind kind, const Tensor& a, const Tensor& b) {
  return dispatch1(ComplexBinary(kind), {a, b});
}
Tensor detail::complex_part(ComplexPartKind kind, const Tensor& x) { return dispatch1(ComplexPart(kind), {x}); }
Tensor detail::complex_matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, bool conj_a, bool conj_b) {
  return dispatch1(ComplexMatMul(transpose_a, transpose_b, conj_a, conj_b), {a, b});
}

Tensor detail::complex_cast(const Tensor& x, DType to) {
  if (is_complex(x.dtype())) {
    if (!is_complex(to)) return cast(real(x), to);  // TF's tf.cast keeps the real part
    DType part = real_dtype_of(to);
    return ef::complex(cast(real(x), part), cast(imag(x), part));
  }
  DType part = real_dtype_of(to);
  Tensor re = cast(x, part);
  return ef::complex(re, zeros_like(re));
}

Tensor matmul_conj(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b, bool conj_a, bool conj_b) {
  if (is_complex(a.dtype()) || is_complex(b.dtype()))
    return detail::complex_matmul(a, b, transpose_a, transpose_b, conj_a, conj_b);
  return matmul(a, b, transpose_a, transpose_b);
}

Tensor complex(const Tensor& real, const Tensor& imag) { return dispatch1(MakeComplex(), {real, imag}); }
Tensor real(const Tensor& x) {
  return is_complex(x.dtype()) ? detail::complex_part(ComplexPartKind::real, x) : x;
}
Tensor imag(const Tensor& x) {
  return is_complex(x.dtype()) ? detail::complex_part(ComplexPartKind::imag, x) : zeros_like(x);
}
Tensor conj(const Tensor& x) { return is_complex(x.dtype()) ? detail::complex_unary(ComplexFn::conj, x) : x; }
Tensor angle(const Tensor& x) {
  if (is_complex(x.dtype())) return detail::complex_part(ComplexPartKind::angle, x);
  // A real number's argument: pi for negatives, 0 otherwise (NaN stays NaN), as TF's.
  return where(less(x, zeros_like(x)), full_like(x, M_PI), mul(x, zeros_like(x)));
}

void detail::add_complex_factories(detail::OpFactories& f) {
  for (int k = 0; k <= static_cast<int>(ComplexFn::log1p); ++k) {
    auto fn = static_cast<ComplexFn>(k);
    f[kFnNames[k]] = [fn](const OpParams&) { return std::make_shared<ComplexUnary>(fn); };
  }
  for (int k = 0; k <= static_cast<int>(ComplexPartKind::angle); ++k) {
    auto kind = static_cast<ComplexPartKind>(k);
    f[kPartNames[k]] = [kind](const OpParams&) { return std::make_shared<ComplexPart>(kind); };
  }
  for (int k = 0; k <= static_cast<int>(ComplexBinaryKind::not_equal); ++k) {
    auto kind = static_cast<ComplexBinaryKind>(k);
    f[kBinaryNames[k]] = [kind](const OpParams&) { return std::make_shared<ComplexBinary>(kind); };
  }
  f["complex"] = [](const OpParams&) { return std::make_shared<MakeComplex>(); };
  f["complex_matmul"] = [](const OpParams& p) {
    return std::make_shared<ComplexMatMul>(p.flag("transpose_a"), p.flag("transpose_b"), p.flag("conj_a"), p.flag("conj_b"));
  };
}

void detail::register_complex_rules() {
  const std::string no_onnx = "ONNX has no complex tensors";
  auto elementwise = [&]<class Op>() {
    register_op_rules<Op>({.batching = [](const Op& op, BatchingCall call) { return batching::broadcasting(op, call); },
                           .onnx_unsupported = no_onnx});
  };
  elementwise.template operator()<ComplexUnary>();
  elementwise.template operator()<ComplexPart>();
  elementwise.template operator()<MakeComplex>();
  elementwise.template operator()<ComplexBinary>();
  elementwise.template operator()<ComplexMatMul>();  // (its leading axes broadcast, as MatMul's)
}

}  // namespace ef
