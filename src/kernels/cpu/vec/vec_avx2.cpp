// The vector kernels for AVX2 with FMA: built with those flags, run only where the CPU has them.
#include <immintrin.h>
#define EF_VEC_NS avx2
#define EF_VEC_NAME "avx2"
#define EF_VEC_ISA Isa::avx2
#define EF_VEC_BYTES 32
#define EF_MF __m256
#define EF_MD __m256d
#define EF_SLEEF_F(fn, acc) Sleef_##fn##f8_##acc##avx2
#define EF_SLEEF_D(fn, acc) Sleef_##fn##d4_##acc##avx2
#define EF_STREAM_F(p, v) _mm256_stream_ps(p, v)
#define EF_STREAM_D(p, v) _mm256_stream_pd(p, v)
#define EF_SQRT_F(v) _mm256_sqrt_ps(v)
#define EF_SQRT_D(v) _mm256_sqrt_pd(v)
#define EF_FMA_F(a, b, c) _mm256_fmadd_ps(a, b, c)
#include "kernels/cpu/vec/vec_kernels.inc"
