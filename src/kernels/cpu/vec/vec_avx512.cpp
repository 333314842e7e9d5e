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
// The masked form with every lane selected is the same vsqrtps/pd: GCC 12's unmasked
// intrinsics pass an "undefined" vector that warns -Wmaybe-uninitialized at every use.
#define EF_SQRT_F(v) _mm512_mask_sqrt_ps((v), static_cast<__mmask16>(0xFFFF), (v))
#define EF_SQRT_D(v) _mm512_mask_sqrt_pd((v), static_cast<__mmask8>(0xFF), (v))
#define EF_FMA_F(a, b, c) _mm512_fmadd_ps(a, b, c)
#include "kernels/cpu/vec/vec_kernels.inc"
