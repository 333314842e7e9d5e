#include "kernels/cpu/random_samplers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace ef::kernels {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Rejection loops end here at the latest: every method below accepts far more often than
// once in this many tries, so only NaN parameters (which no draw satisfies) get this far.
constexpr int kMaxTries = 1 << 20;

// digamma for x > 0: the recurrence up to x >= 6, then the asymptotic series.
double digamma(double x) {
  double shift = 0;
  for (; x < 6; x += 1) shift -= 1 / x;
  double r = 1 / (x * x);
  return shift + std::log(x) - 0.5 / x -
         r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132)))));
}

// A value and its derivative with respect to alpha, for the continued fraction's derivative.
struct Dual {
  double v, d;
};
Dual operator+(Dual a, Dual b) { return {a.v + b.v, a.d + b.d}; }
Dual operator*(Dual a, Dual b) { return {a.v * b.v, a.d * b.v + a.v * b.d}; }
Dual operator/(Dual a, Dual b) { return {a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)}; }

}  // namespace

double Stream::normal() {
  double u1 = uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double sample_gamma(double alpha, Stream& s) {
  if (std::isnan(alpha) || alpha < 0) return kNaN;
  if (alpha == 0 || std::isinf(alpha)) return alpha;
  double a = alpha < 1 ? alpha + 1 : alpha;
  double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  double x = d;
  for (int i = 0; i < kMaxTries; ++i) {
    double z = s.normal(), v = 1.0 + c * z;
    if (v <= 0) continue;
    v = v * v * v;
    double u = s.uniform();
    if (u < 1.0 - 0.0331 * z * z * z * z || std::log(u) < 0.5 * z * z + d * (1.0 - v + std::log(v))) {
      x = d * v;
      break;
    }
  }
  if (alpha < 1) x = std::exp(std::log(x) + std::log(s.uniform()) / alpha);
  return x;
}

double gamma_sample_grad(double alpha, double x) {
  if (std::isnan(alpha) || std::isnan(x) || alpha <= 0) return kNaN;
  if (x <= 0) return 0;
  if (std::isinf(x) || std::isinf(alpha)) return kNaN;
  double lx = std::log(x);
  if (x <= 1 || x < alpha) {
    // P = x^a e^-x / Gamma(a+1) * r, r = sum_n prod_{k<=n} x / (a+k); so dP/da / p(x) is
    // (x/a) (r (log x - digamma(a+1)) + dr/da), with no Gamma function to overflow.
    double t = 1, dt = 0, r = 1, dr = 0;
    for (int n = 1; n < kMaxTries; ++n) {
      double f = x / (alpha + n);
      dt = dt * f - t * f / (alpha + n);
      t *= f;
      r += t;
      dr += dt;
      if (t <= r * 1e-17 && std::abs(dt) <= std::abs(dr) * 1e-17) break;
    }
    return -(x / alpha) * (r * (lx - digamma(alpha + 1)) + dr);
  }
  // 1 - P = x^a e^-x / Gamma(a) * h, h Legendre's continued fraction (modified Lentz), so
  // d(1-P)/da / p(x) is x (h (log x - digamma(a)) + dh/da).
  constexpr double kTiny = 1e-300;
  Dual b{x + 1 - alpha, -1}, c{1 / kTiny, 0}, d = Dual{1, 0} / b, h = d;
  for (int i = 1; i < kMaxTries; ++i) {
    Dual an{-i * (i - alpha), static_cast<double>(i)};
    b.v += 2;
    d = an * d + b;
    if (std::abs(d.v) < kTiny) d = {kTiny, 0};
    c = b + an / c;
    if (std::abs(c.v) < kTiny) c = {kTiny, 0};
    d = Dual{1, 0} / d;
    Dual del = d * c;
    h = h * del;
    if (std::abs(del.v - 1) < 1e-16 && std::abs(del.d * h.v) <= 1e-16 * std::abs(h.d) + 1e-300) break;
  }
  return x * (h.v * (lx - digamma(alpha)) + h.d);
}

double sample_poisson(double lam, Stream& s) {
  if (std::isnan(lam)) return kNaN;
  if (lam <= 0) return 0;
  if (std::isinf(lam)) return lam;
  if (lam < 10) {
    double u = s.uniform(), p = std::exp(-lam), cdf = p, k = 0;
    while (u > cdf && k < 200) {
      k += 1;
      p *= lam / k;
      cdf += p;
    }
    return k;
  }
  double slam = std::sqrt(lam), loglam = std::log(lam);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
  for (int i = 0; i < kMaxTries; ++i) {
    double u = s.uniform() - 0.5, v = s.uniform(), us = 0.5 - std::abs(u);
    double k = std::floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <= -lam + k * loglam - std::lgamma(k + 1))
      return k;
  }
  return std::floor(lam);
}

double sample_binomial(double n, double p, Stream& s) {
  if (std::isnan(n) || std::isnan(p) || std::isinf(n)) return kNaN;
  n = std::floor(n);
  p = std::clamp(p, 0.0, 1.0);
  if (n <= 0 || p == 0) return 0;
  if (p == 1) return n;
  if (p > 0.5) return n - sample_binomial(n, 1 - p, s);
  double q = 1 - p;
  if (n * p < 10) {
    // Inversion: P(k+1) = P(k) (n-k)/(k+1) p/q, from P(0) = q^n (at least e^-10 here).
    double r = p / q, g = r * (n + 1), f = std::exp(n * std::log1p(-p)), u = s.uniform(), k = 0;
    while (u > f && k < n) {
      u -= f;
      k += 1;
      f *= g / k - r;
    }
    return k;
  }
  double spq = std::sqrt(n * p * q), b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p;
  double c = n * p + 0.5, vr = 0.92 - 4.2 / b, alpha = (2.83 + 5.1 / b) * spq, lpq = std::log(p / q);
  double m = std::floor((n + 1) * p), h = std::lgamma(m + 1) + std::lgamma(n - m + 1);
  for (int i = 0; i < kMaxTries; ++i) {
    double u = s.uniform() - 0.5, v = s.uniform(), us = 0.5 - std::abs(u);
    double k = std::floor((2 * a / us + b) * u + c);
    if (k < 0 || k > n) continue;
    if (us >= 0.07 && v <= vr) return k;
    v = std::log(v * alpha / (a / (us * us) + b));
    if (v <= h - std::lgamma(k + 1) - std::lgamma(n - k + 1) + (k - m) * lpq) return k;
  }
  return m;
}

double sample_truncated_normal(double mean, double stddev, double lo, double hi, Stream& s) {
  double a = (lo - mean) / stddev, b = (hi - mean) / stddev;
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  double z = std::clamp(0.0, a, b);
  if (a <= 0 && b >= 0) {
    // Around the mode: plain normal draws when [a, b] holds enough mass (b - a >= 2 keeps at
    // least 47% of it), else uniform draws accepted with the density's ratio to its peak.
    bool wide = b - a >= 2;
    for (int i = 0; i < kMaxTries; ++i) {
      if (wide) {
        double x = s.normal();
        if (x >= a && x <= b) {
          z = x;
          break;
        }
      } else {
        double x = a + (b - a) * s.uniform();
        if (s.uniform() <= std::exp(-0.5 * x * x)) {
          z = x;
          break;
        }
      }
    }
  } else {
    bool flip = b < 0;  // the left tail is the mirror of the right one
    if (flip) std::swap(a, b), a = -a, b = -b;
    z = a;
    if (b * b - a * a <= 2) {
      // A short interval: uniform draws accepted with exp((a^2 - x^2)/2) >= e^-1.
      for (int i = 0; i < kMaxTries; ++i) {
        double x = a + (b - a) * s.uniform();
        if (s.uniform() <= std::exp(0.5 * (a * a - x * x))) {
          z = x;
          break;
        }
      }
    } else {
      // Robert (1995): exponential proposals shifted to a, rate the optimal alpha*.
      double rate = 0.5 * (a + std::sqrt(a * a + 4));
      for (int i = 0; i < kMaxTries; ++i) {
        double x = a - std::log(s.uniform()) / rate;
        if (x > b) continue;
        if (s.uniform() <= std::exp(-0.5 * (x - rate) * (x - rate))) {
          z = x;
          break;
        }
      }
    }
    if (flip) z = -z;
  }
  return std::clamp(mean + stddev * z, lo, hi);
}

}  // namespace ef::kernels
