#pragma once
// float16: IEEE binary16, TF's and NumPy's float16; a storage dtype as bfloat16 (ef computes in
// float32 and rounds to nearest even; NaN stays NaN; past 65504 is inf). Rules: src/core/float16.cpp.
#include <cstdint>

namespace ef {

std::uint16_t float16_bits_from_float(float f);
std::uint16_t float16_bits_from_double(double d);  // one rounding, not two
float float_from_float16_bits(std::uint16_t h);    // exact

struct float16 {
  std::uint16_t bits = 0;
  constexpr float16() = default;
  explicit float16(float f) : bits(float16_bits_from_float(f)) {}
  explicit float16(double d) : bits(float16_bits_from_double(d)) {}
  operator float() const { return float_from_float16_bits(bits); }  // exact
};

}  // namespace ef
