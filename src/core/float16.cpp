// float16's rounding rules on the bits (include/eagerflow/core/float16.h).
#include "eagerflow/core/float16.h"

#include <bit>

namespace ef {

std::uint16_t float16_bits_from_float(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  std::uint32_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((u >> 13) & 0x3ffu));  // NaN: quiet
  if (u >= 0x47800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65536 (and inf): inf
  if (u < 0x38800000u) {  // below float16's smallest normal: a subnormal (or zero), rounded
    if (u < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half the smallest subnormal
    std::uint32_t mantissa = (u & 0x7fffffu) | 0x800000u;
    int shift = 126 - static_cast<int>(u >> 23);  // 14..24
    std::uint32_t half = mantissa >> shift;
    std::uint32_t rest = mantissa & ((1u << shift) - 1u), midpoint = 1u << (shift - 1);
    if (rest > midpoint || (rest == midpoint && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even (the carry may reach
  // the exponent, and 65520 and up become inf).
  std::uint32_t v = u - 0x38000000u;
  v += 0xfffu + ((v >> 13) & 1u);
  if (v >= 0x0f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
  return static_cast<std::uint16_t>(sign | (v >> 13));
}

// From float64 in one rounding: the float32 in between is rounded to odd (float32 has more than
// twice float16's precision, so the second rounding is then exact).
std::uint16_t float16_bits_from_double(double d) {
  if (d != d) return float16_bits_from_float(static_cast<float>(d));
  float f = static_cast<float>(d);
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  double back = static_cast<double>(f);
  if ((back < 0 ? -back : back) > (d < 0 ? -d : d)) --u;
  if (static_cast<double>(std::bit_cast<float>(u)) != d) u |= 1u;
  return float16_bits_from_float(std::bit_cast<float>(u));
}

float float_from_float16_bits(std::uint16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float32
    float m = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return sign ? -m : m;
  }
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace ef
