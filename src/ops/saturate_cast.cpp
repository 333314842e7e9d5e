// tf.dtypes.saturate_cast as a composition (clamps by where, then ef::cast): it traces and
// vmaps as its parts do, and like any conversion to an integer it has no gradient.
#include <cmath>
#include <limits>

#include "eagerflow/ops/ops.h"

namespace ef {
namespace {

// `bound` as a value of floating dtype `t` that does not pass it: float32(4294967295) rounds up
// to 2^32, so uint32's upper bound in float32 is 4294967040, as TF's. `past`: the double
// `bound` is already beyond the limit (int64's and uint64's largest round up to 2^63, 2^64).
double float_bound(double bound, DType t, bool upper, bool past) {
  if (t == DType::float64) return past ? std::nextafter(bound, 0.0) : bound;
  float f = static_cast<float>(bound);
  if (upper && (past || static_cast<double>(f) > bound)) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  if (!upper && static_cast<double>(f) < bound) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  if (t == DType::float32) return f;
  // bfloat16 and float16 round the float32 bound again: step inward until it stays inside.
  double r = cast(full(Shape{}, f, t), DType::float64).item<double>();
  while (std::isfinite(r) && (upper ? r > f : r < f)) {
    f = std::nextafter(static_cast<float>(r), upper ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
    r = cast(full(Shape{}, f, t), DType::float64).item<double>();
  }
  return std::isinf(r) ? static_cast<double>(f) : r;
}

}  // namespace

Tensor saturate_cast(const Tensor& x, DType dtype) {
  if (!x.defined()) fail("saturate_cast", "got an undefined tensor");
  const DType from = x.dtype();
  if (from == dtype) return x;
  if (is_floating(dtype) || from == DType::bool_ || dtype == DType::bool_) return cast(x, dtype);  // nothing to clamp
  double lo = min_of(dtype), hi = max_of(dtype);
  Tensor y = x;
  if (from == DType::uint64) {
    // uint64 computes as int64, where values from 2^63 are negative: they saturate to int64's
    // largest first, and the rest clamps from int64.
    y = cast(y, DType::int64);
    y = where(y < full(Shape{}, 0.0, DType::int64), full(Shape{}, 9223372036854775807.0, DType::int64), y);
    return saturate_cast(y, dtype);
  }
  if (is_floating(from)) {
    // x < lo and x > hi are false for NaN, which stays NaN and casts to 0.
    bool past = dtype == DType::int64 || dtype == DType::uint64;
    double flo = float_bound(lo, from, false, false), fhi = float_bound(hi, from, true, past);
    y = where(y < full(Shape{}, flo, from), full(Shape{}, flo, from), y);
    y = where(y > full(Shape{}, fhi, from), full(Shape{}, fhi, from), y);
  } else {
    // Clamp only where x's dtype reaches past the target's (its bound then fits x's dtype).
    if (min_of(from) < lo) y = where(y < full(Shape{}, lo, from), full(Shape{}, lo, from), y);
    if (max_of(from) > hi) y = where(y > full(Shape{}, hi, from), full(Shape{}, hi, from), y);
  }
  return cast(y, dtype);
}

}  // namespace ef
