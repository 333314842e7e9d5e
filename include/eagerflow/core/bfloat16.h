#pragma once
// bfloat16: the upper 16 bits of an IEEE float32 (8 exponent bits, 7 mantissa bits). Stored
// as 16 bits; ef computes in float32 and rounds results to bfloat16 (round to nearest, ties
// to even; NaN stays NaN, quieted; values past the largest bfloat16 round to infinity, as
// float32 rounding does; denormals are kept).
#include <bit>
#include <cstdint>

namespace ef {

// The rounding rule, on the bits (usable in constexpr and in vectorized loops).
constexpr std::uint16_t bfloat16_bits_from_float(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);  // NaN: quiet
  u += 0x7fffu + ((u >> 16) & 1u);  // ties to even; the carry may reach the exponent (and Inf)
  return static_cast<std::uint16_t>(u >> 16);
}
// From float64 in one rounding (not twice through float32): the float32 in between is rounded
// to odd (truncated, its last bit set when inexact), which keeps the tie information.
constexpr std::uint16_t bfloat16_bits_from_double(double d) {
  if (d != d) return bfloat16_bits_from_float(static_cast<float>(d));
  float f = static_cast<float>(d);
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  double back = static_cast<double>(f);
  if ((back < 0 ? -back : back) > (d < 0 ? -d : d)) --u;  // toward zero (a magnitude step)
  if (static_cast<double>(std::bit_cast<float>(u)) != d) u |= 1u;
  return bfloat16_bits_from_float(std::bit_cast<float>(u));
}
constexpr float float_from_bfloat16_bits(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

struct bfloat16 {
  std::uint16_t bits = 0;
  constexpr bfloat16() = default;
  constexpr explicit bfloat16(float f) : bits(bfloat16_bits_from_float(f)) {}
  constexpr explicit bfloat16(double d) : bits(bfloat16_bits_from_double(d)) {}
  static constexpr bfloat16 from_bits(std::uint16_t b) {
    bfloat16 v;
    v.bits = b;
    return v;
  }
  constexpr operator float() const { return float_from_bfloat16_bits(bits); }  // exact
};
static_assert(sizeof(bfloat16) == 2);

}  // namespace ef
