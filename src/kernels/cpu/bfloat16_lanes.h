#pragma once
// bfloat16 values widened to float32, exactly (a bfloat16 is a float32's upper 16 bits), 8 or
// 16 at a time, for the kernels that work on 16-bit memory (max pooling and its gradient); one
// value at a time is float_from_bfloat16_bits (eagerflow/core/bfloat16.h). Each form runs only
// where its caller checked the CPU.
#include <cstdint>
#include <immintrin.h>

namespace ef::cpu {

__attribute__((target("avx2"))) inline __m256 widen_bf16x8(const std::uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 widen_bf16x16(const std::uint16_t* p) {
  // The zero-masked forms: GCC 12 warns of the plain ones' undefined source under a target attribute.
  const __m512i wide = _mm512_maskz_cvtepu16_epi32(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xffff, wide, 16));
}

}  // namespace ef::cpu
