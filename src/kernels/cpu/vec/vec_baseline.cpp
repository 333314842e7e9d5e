// The vector kernels for baseline x86-64 (SSE2): what every x86-64 CPU runs.
#include <immintrin.h>
#define EF_VEC_NS baseline
#define EF_VEC_NAME "baseline (sse2)"
#define EF_VEC_ISA Isa::baseline
#define EF_VEC_BYTES 16
#define EF_MF __m128
#define EF_MD __m128d
#define EF_SLEEF_F(fn, acc) Sleef_##fn##f4_##acc##sse2
#define EF_SLEEF_D(fn, acc) Sleef_##fn##d2_##acc##sse2
#define EF_STREAM_F(p, v) _mm_stream_ps(p, v)
#define EF_STREAM_D(p, v) _mm_stream_pd(p, v)
#define EF_SQRT_F(v) _mm_sqrt_ps(v)
#define EF_SQRT_D(v) _mm_sqrt_pd(v)
#include "kernels/cpu/vec/vec_kernels.inc"
