#pragma once
// An 8x8 transpose of float lanes in registers, for the kernels compiled with AVX2 (gemv.cpp,
// gemm_chain.cpp): afterwards t[j] lane i holds what t[i] lane j held.
#include <immintrin.h>

namespace ef::cpu {

__attribute__((target("avx2,fma"))) inline void transpose8(__m256 (&t)[8]) {
  __m256 u[8], v[8];
  for (int i = 0; i < 4; ++i) {
    u[2 * i] = _mm256_unpacklo_ps(t[2 * i], t[2 * i + 1]);
    u[2 * i + 1] = _mm256_unpackhi_ps(t[2 * i], t[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    v[4 * i] = _mm256_shuffle_ps(u[4 * i], u[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    v[4 * i + 1] = _mm256_shuffle_ps(u[4 * i], u[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    v[4 * i + 2] = _mm256_shuffle_ps(u[4 * i + 1], u[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    v[4 * i + 3] = _mm256_shuffle_ps(u[4 * i + 1], u[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    t[i] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x20);
    t[i + 4] = _mm256_permute2f128_ps(v[i], v[i + 4], 0x31);
  }
}

}  // namespace ef::cpu
