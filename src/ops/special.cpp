// Special functions composed of elementwise ops. lgamma and digamma shift the argument up to >= 10
// by the recurrences (Gamma(x+1) = x Gamma(x), psi(x+1) = psi(x) + 1/x), use their asymptotic
// series there (errors below 1e-15 of the value), and reflect negative arguments. erfinv starts
// from Giles' single-precision approximation and takes two Newton steps on erf.
#include "eagerflow/ops/special.h"

#include <cmath>
#include <numbers>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"

namespace ef::math {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr int kShift = 10;

void expect_floating(const Tensor& x, const char* op) {
  if (!x.defined()) fail(op, "got an undefined tensor");
  if (!is_floating(x.dtype())) fail(kWrongType, op, "takes floating tensors, got " + x.spec().str());
}

// lgamma for x > 0.
Tensor lgamma_positive(const Tensor& x) {
  Tensor z = x, log_product = zeros_like(x);
  for (int i = 0; i < kShift; ++i) {  // lgamma(x) = lgamma(x + 10) - log(x (x+1) ... (x+9))
    log_product = log_product + log(z);
    z = z + 1.0;
  }
  Tensor inv = 1.0 / z, inv2 = inv * inv;
  // Stirling's series to the 1/z^9 term.
  Tensor series = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680 - inv2 * (1.0 / 1188)))));
  return (z - 0.5) * log(z) - z + 0.5 * std::log(2 * kPi) + series - log_product;
}

// digamma for x > 0.
Tensor digamma_positive(const Tensor& x) {
  Tensor z = x, reciprocal_sum = zeros_like(x);
  for (int i = 0; i < kShift; ++i) {
    reciprocal_sum = reciprocal_sum + 1.0 / z;
    z = z + 1.0;
  }
  Tensor inv = 1.0 / z, inv2 = inv * inv;
  Tensor series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132)))));
  return log(z) - 0.5 * inv - series - reciprocal_sum;
}

}  // namespace

Tensor lgamma(const Tensor& x) {
  expect_floating(x, "lgamma");
  // float32 through float64: the shift and the series cancel ~20 to leave values near 1.
  if (x.dtype() != DType::float64) return cast(lgamma(cast(x, DType::float64)), x.dtype());
  Tensor positive = x > 0.0;
  Tensor safe_pos = where(positive, x, ones_like(x));
  Tensor reflected = where(positive, ones_like(x), 1.0 - x);  // 1 - x > 1 for x <= 0
  // lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x); inf at the poles (sin = 0).
  Tensor sin_term = abs(sin(x * kPi));
  Tensor negative_value = std::log(kPi) - log(sin_term) - lgamma_positive(reflected);
  Tensor pole = logical_and(logical_not(positive), equal(x, floor(x)));  // 0, -1, -2, ...: +inf, as TF's
  // Gamma(1) = Gamma(2) = 1 exactly (the series leaves a few ulp).
  Tensor exact_zero = logical_or(equal(x, ones_like(x)), equal(x, full_like(x, 2.0)));
  Tensor value = where(positive, lgamma_positive(safe_pos), where(pole, full_like(x, INFINITY), negative_value));
  return value - stop_gradient(where(exact_zero, value, zeros_like(x)));  // the gradient stays digamma's
}

Tensor digamma(const Tensor& x) {
  expect_floating(x, "digamma");
  if (x.dtype() != DType::float64) return cast(digamma(cast(x, DType::float64)), x.dtype());
  Tensor positive = x > 0.0;
  Tensor safe_pos = where(positive, x, ones_like(x));
  Tensor reflected = where(positive, ones_like(x), 1.0 - x);
  // psi(x) = psi(1 - x) - pi cot(pi x); NaN at the poles.
  Tensor negative_value = digamma_positive(reflected) - kPi * cos(x * kPi) / sin(x * kPi);
  Tensor pole = logical_and(logical_not(positive), equal(x, floor(x)));  // NaN, as TF's
  return where(positive, digamma_positive(safe_pos), where(pole, full_like(x, NAN), negative_value));
}

Tensor lbeta(const Tensor& x) {
  expect_floating(x, "lbeta");
  if (x.rank() < 1) fail("lbeta", "takes a tensor of rank >= 1 (the last axis holds the arguments)");
  return sum(lgamma(x), {-1}) - lgamma(sum(x, {-1}));
}

Tensor erfinv(const Tensor& y) {
  expect_floating(y, "erfinv");
  if (y.dtype() != DType::float64) return cast(erfinv(cast(y, DType::float64)), y.dtype());
  // Giles (2010): w = -log((1 - y)(1 + y)), a polynomial in w on each side of w = 5.
  Tensor inside = abs(y) < 1.0;
  Tensor ys = where(inside, y, zeros_like(y));
  Tensor w = -log((1.0 - ys) * (1.0 + ys));
  Tensor small = w < 5.0;
  Tensor ws = where(small, w, full_like(w, 5.0)) - 2.5;
  Tensor p_small = full_like(ws, 2.81022636e-08);
  for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727,
                   1.50140941})
    p_small = p_small * ws + c;
  Tensor wl = sqrt(where(small, full_like(w, 5.0), w)) - 3.0;
  Tensor p_large = full_like(wl, -0.000200214257);
  for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406,
                   2.83297682})
    p_large = p_large * wl + c;
  Tensor x = where(small, p_small, p_large) * ys;
  // Two Newton steps on erf(x) = y: exact to double precision from the single-precision start.
  for (int i = 0; i < 2; ++i) x = x - (erf(x) - ys) / (exp(-(x * x)) * (2.0 / std::sqrt(kPi)));
  Tensor edge = where(y > 0.0, full_like(y, INFINITY), full_like(y, -INFINITY));
  Tensor at_edge = abs(y) == 1.0;
  return where(inside, x, where(at_edge, edge, full_like(y, NAN)));
}

Tensor ndtri(const Tensor& p) {
  expect_floating(p, "ndtri");
  return erfinv(p * 2.0 - 1.0) * std::numbers::sqrt2;
}

Tensor erfcinv(const Tensor& y) {
  expect_floating(y, "erfcinv");
  return erfinv(1.0 - y);
}

}  // namespace ef::math
