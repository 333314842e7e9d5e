// The vector kernels for AVX-512 (F, BW, DQ, VL): built with those flags, run only where the
// CPU has them.
#include <immintrin.h>
#define EF_VEC_NS avx512
#define EF_VEC_NAME "avx512"
#define EF_VEC_ISA Isa::avx512
#define EF_VEC_BYTES 64
#define EF_MF __m512
#define EF_MD __m512d
#define EF_SLEEF_F(fn, acc) Sleef_##fn##f16_##acc##avx512f
#define EF_SLEEF_D(fn, acc) Sleef_##fn##d8_##acc##avx512f
#define EF_STREAM_F(p, v) _mm512_stream_ps(p, v)
#define EF_STREAM_D(p, v) _mm512_stream_pd(p, v)
#define EF_SQRT_F(v) _mm512_sqrt_ps(v)
#define EF_SQRT_D(v) _mm512_sqrt_pd(v)
#include "kernels/cpu/vec/vec_kernels.inc"
