// Reference loops written directly against SLEEF's AVX-512 functions, compiled for AVX-512:
// what "the vector library's own loop" and "one hand-written vector loop" mean in the
// elementwise benchmarks. Called only where the CPU has AVX-512.
#include <immintrin.h>
#include <sleef.h>

#include <cstdint>

#include "sleef_reference.h"

namespace ef_bench {

void sleef_unary_loop(ReferenceFn fn, const float* x, float* out, std::int64_t n) {
  for (std::int64_t i = 0; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i), r;
    switch (fn) {
      case ReferenceFn::exp: r = Sleef_expf16_u10avx512f(v); break;
      case ReferenceFn::log: r = Sleef_logf16_u10avx512f(v); break;
      case ReferenceFn::tanh: r = Sleef_tanhf16_u35avx512f(v); break;
      case ReferenceFn::erf: r = Sleef_erff16_u10avx512f(v); break;
      case ReferenceFn::sigmoid: {
        __m512 one = _mm512_set1_ps(1.0f);
        r = _mm512_div_ps(one, _mm512_add_ps(one, Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), v))));
        break;
      }
      case ReferenceFn::gelu: {
        // The same formula as ef::gelu: x * Phi(x) with Phi from erfc.
        __m512 e = Sleef_erfcf16_u15avx512f(_mm512_mul_ps(v, _mm512_set1_ps(-0.70710678f)));
        r = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v), e);
        break;
      }
    }
    _mm512_storeu_ps(out + i, r);
  }
}

// The 15-op chain of chain15 in elementwise_bench.cpp, one pass, one register at a time.
void chain15_loop(const float* x, const float* y, float* out, std::int64_t n) {
  const __m512 half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f), quarter = _mm512_set1_ps(0.25f),
               c15 = _mm512_set1_ps(1.5f);
  for (std::int64_t i = 0; i + 16 <= n; i += 16) {
    __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(y + i);
    __m512 t = _mm512_add_ps(_mm512_mul_ps(a, c15), b);
    t = Sleef_tanhf16_u35avx512f(t);
    t = _mm512_sub_ps(_mm512_mul_ps(t, a), b);
    t = Sleef_tanhf16_u35avx512f(t);
    t = _mm512_add_ps(_mm512_mul_ps(t, half), a);
    t = _mm512_max_ps(t, b);
    t = _mm512_sub_ps(_mm512_mul_ps(t, t), quarter);
    t = Sleef_tanhf16_u35avx512f(t);
    t = _mm512_add_ps(_mm512_mul_ps(t, b), one);
    t = _mm512_mul_ps(t, a);
    _mm512_storeu_ps(out + i, t);
  }
}

}  // namespace ef_bench
