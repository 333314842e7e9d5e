// The fused optimizer updates for AVX2 (built with -mavx2 -mfma -ffp-contract=off, run only
// where the CPU has them: optimizer_update.cpp chooses).
#include <immintrin.h>
#define EF_UPDATE_NS avx2
#define EF_UPDATE_BYTES 32
#define EF_MF __m256
#define EF_MD __m256d
#define EF_SQRT_F(v) _mm256_sqrt_ps(v)
#define EF_SQRT_D(v) _mm256_sqrt_pd(v)
#include "kernels/cpu/optimizer_update.inc"
