// Max pooling's gradient in one pass over x, NHWC: each window's maxima found and dy routed to
// them in the same loop. oneDNN's backward needs a workspace from a forward pass, which
// training had to run a second time (x read, y and the workspace written, dx zeroed, then the
// backward): about twice the memory traffic.
#include <algorithm>
#include <cstring>
#include <vector>

#include "eagerflow/core/bfloat16.h"
#include "kernels/cpu/bfloat16_lanes.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/parallel.h"

#include <immintrin.h>

#include "kernels/cpu/vec_math.h"

namespace ef::cpu {
namespace {

__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 load16(const std::uint16_t* p) {
  return widen_bf16x16(p);
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 load16(const float* p) {
  return _mm512_loadu_ps(p);
}

// Sixteen channels of one window (float32, or bfloat16 widened): the window position (0, 1, ...
// in row-major order) of each channel's first maximum, as route_window's rule picks it; -1 with
// `relu_mask` where that maximum is not > 0.
template <class T>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512i first_maximum16(
    const T* x, std::int64_t row, std::int64_t step, std::int64_t h0, std::int64_t h1, std::int64_t w0,
    std::int64_t w1, bool relu_mask) {
  __m512 best = load16(x + h0 * row + w0 * step);
  __m512i at = _mm512_setzero_si512();
  std::int32_t k = 0;
  for (std::int64_t h = h0; h < h1; ++h)
    for (std::int64_t w = w0; w < w1; ++w, ++k) {
      const __m512 v = load16(x + h * row + w * step);
      const __mmask16 more = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ);
      best = _mm512_mask_mov_ps(best, more, v);
      at = _mm512_mask_mov_epi32(at, more, _mm512_set1_epi32(k));
    }
  if (relu_mask)
    at = _mm512_mask_mov_epi32(_mm512_set1_epi32(-1), _mm512_cmp_ps_mask(best, _mm512_setzero_ps(), _CMP_GT_OQ), at);
  return at;
}

// Channels from c0 of one window, sixteen at a time on AVX-512 (the rule of the SSE2 loop
// below, its selects on mask registers); returns the first channel not done.
__attribute__((target("avx512f,avx512bw,avx512vl"))) std::int64_t route_window_avx512(
    const PoolGeometry& g, const float* x, const float* dy, float* dx, std::int64_t h0, std::int64_t h1,
    std::int64_t w0, std::int64_t w1, std::int64_t c0, std::int64_t cn, bool accumulate, bool relu_mask) {
  const std::int64_t row = g.w * g.c;
  std::int64_t c = c0;
  for (; c + 16 <= cn; c += 16) {
    const __m512i at = first_maximum16(x + c, row, g.c, h0, h1, w0, w1, relu_mask);
    const __m512 grad = _mm512_loadu_ps(dy + c);
    std::int32_t k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k) {
        float* d = dx + h * row + w * g.c + c;
        const __mmask16 here = _mm512_cmpeq_epi32_mask(at, _mm512_set1_epi32(k));
        if (accumulate) _mm512_storeu_ps(d, _mm512_mask_add_ps(_mm512_loadu_ps(d), here, _mm512_loadu_ps(d), grad));
        else _mm512_storeu_ps(d, _mm512_maskz_mov_ps(here, grad));
      }
  }
  return c;
}

// Channels from c0 of one window, eight at a time on AVX2 (same rule and selects as the SSE2
// loop below, twice as wide); returns the first channel not done.
__attribute__((target("avx2"))) std::int64_t route_window_avx2(const PoolGeometry& g, const float* x, const float* dy,
                                                               float* dx, std::int64_t h0, std::int64_t h1,
                                                               std::int64_t w0, std::int64_t w1, std::int64_t c0,
                                                               std::int64_t cn, bool accumulate, bool relu_mask) {
  const std::int64_t row = g.w * g.c;
  std::int64_t c = c0;
  for (; c + 8 <= cn; c += 8) {
    __m256 best = _mm256_loadu_ps(x + h0 * row + w0 * g.c + c);
    __m256i at = _mm256_setzero_si256();
    std::int32_t k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k) {
        __m256 v = _mm256_loadu_ps(x + h * row + w * g.c + c);
        __m256 more = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, v, more);
        at = _mm256_blendv_epi8(at, _mm256_set1_epi32(k), _mm256_castps_si256(more));
      }
    if (relu_mask) {
      __m256 positive = _mm256_cmp_ps(best, _mm256_setzero_ps(), _CMP_GT_OQ);
      at = _mm256_blendv_epi8(_mm256_set1_epi32(-1), at, _mm256_castps_si256(positive));
    }
    __m256 grad = _mm256_loadu_ps(dy + c);
    k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k) {
        float* d = dx + h * row + w * g.c + c;
        __m256 routed = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(at, _mm256_set1_epi32(k))), grad);
        _mm256_storeu_ps(d, accumulate ? _mm256_add_ps(_mm256_loadu_ps(d), routed) : routed);
      }
  }
  return c;
}

bool use_avx2() {
  static const bool avx2 = vec::kernels().isa != vec::Isa::baseline;
  return avx2;
}

bool use_avx512() {
  static const bool avx512 = vec::kernels().isa == vec::Isa::avx512;
  return avx512;
}

// One window's cn channels: the first position holding the maximum (oneDNN's and
// TF's choice on ties; positions in row-major order, padding excluded) gets dy, the others 0.
// `accumulate`: overlapping windows add into dx (zeroed first); otherwise each position is
// written once. Sixteen channels at a time on AVX-512 and eight on AVX2 where the CPU has them,
// then four on SSE2 selects (branchless: a branch per element mispredicts on real data), the
// channels left over one at a time.
void route_window(const PoolGeometry& g, const float* x, const float* dy, float* dx, std::int64_t h0, std::int64_t h1,
                  std::int64_t w0, std::int64_t w1, std::int64_t cn, bool accumulate, bool relu_mask) {
  const std::int64_t row = g.w * g.c;
  std::int64_t c = use_avx512() ? route_window_avx512(g, x, dy, dx, h0, h1, w0, w1, 0, cn, accumulate, relu_mask) : 0;
  if (use_avx2()) c = route_window_avx2(g, x, dy, dx, h0, h1, w0, w1, c, cn, accumulate, relu_mask);
#if defined(__SSE2__)
  for (; c + 4 <= cn; c += 4) {
    __m128 best = _mm_loadu_ps(x + h0 * row + w0 * g.c + c);
    __m128i at = _mm_setzero_si128();
    std::int32_t k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k) {
        __m128 v = _mm_loadu_ps(x + h * row + w * g.c + c);
        __m128 more = _mm_cmpgt_ps(v, best);
        best = _mm_or_ps(_mm_and_ps(more, v), _mm_andnot_ps(more, best));
        __m128i m = _mm_castps_si128(more);
        at = _mm_or_si128(_mm_and_si128(m, _mm_set1_epi32(k)), _mm_andnot_si128(m, at));
      }
    if (relu_mask) {  // relu's gradient is 0 where its output, the maximum, is not > 0 (NaN too)
      __m128i positive = _mm_castps_si128(_mm_cmpgt_ps(best, _mm_setzero_ps()));
      at = _mm_or_si128(_mm_and_si128(positive, at), _mm_andnot_si128(positive, _mm_set1_epi32(-1)));
    }
    __m128 grad = _mm_loadu_ps(dy + c);
    k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k) {
        float* d = dx + h * row + w * g.c + c;
        __m128 routed = _mm_and_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(at, _mm_set1_epi32(k))), grad);
        _mm_storeu_ps(d, accumulate ? _mm_add_ps(_mm_loadu_ps(d), routed) : routed);
      }
  }
#endif
  for (; c < cn; ++c) {
    float best = x[h0 * row + w0 * g.c + c];
    std::int32_t at = 0, k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k)
        if (x[h * row + w * g.c + c] > best) {
          best = x[h * row + w * g.c + c];
          at = k;
        }
    if (relu_mask && !(best > 0.0f)) at = -1;
    k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k) {
        float* d = dx + h * row + w * g.c + c;
        float routed = at == k ? dy[c] : 0.0f;
        *d = accumulate ? *d + routed : routed;
      }
  }
}

// One bfloat16 window's channels [c0, cn) one at a time: route_window's rule on the widened
// values, dy's bits routed as they are (windows apart: each dx element written once).
void route_window_bf16_channels(const PoolGeometry& g, const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                                std::int64_t h0, std::int64_t h1, std::int64_t w0, std::int64_t w1, std::int64_t c0,
                                bool relu_mask) {
  const std::int64_t row = g.w * g.c;
  for (std::int64_t c = c0; c < g.c; ++c) {
    float best = float_from_bfloat16_bits(x[h0 * row + w0 * g.c + c]);
    std::int32_t at = 0, k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k)
        if (float_from_bfloat16_bits(x[h * row + w * g.c + c]) > best) {
          best = float_from_bfloat16_bits(x[h * row + w * g.c + c]);
          at = k;
        }
    if (relu_mask && !(best > 0.0f)) at = -1;
    k = 0;
    for (std::int64_t h = h0; h < h1; ++h)
      for (std::int64_t w = w0; w < w1; ++w, ++k) dx[h * row + w * g.c + c] = at == k ? dy[c] : std::uint16_t{0};
  }
}

// One output row of bfloat16 windows (x and dx at the image, dy at the row), eight channels at
// a time on AVX2 with route_window's selects, the rest one at a time.
__attribute__((target("avx2"))) void route_row_bf16_avx2(const PoolGeometry& g, const std::uint16_t* x,
                                                         const std::uint16_t* dy, std::uint16_t* dx, std::int64_t h0,
                                                         std::int64_t h1, bool relu_mask) {
  const std::int64_t row = g.w * g.c, vec_c = g.c - g.c % 8;
  for (std::int64_t ow = 0; ow < g.ow; ++ow, dy += g.c) {
    const std::int64_t w0 = std::max<std::int64_t>(ow * g.sw - g.pl, 0), w1 = std::min(ow * g.sw - g.pl + g.kw, g.w);
    if (w1 <= w0) continue;
    for (std::int64_t c = 0; c < vec_c; c += 8) {
      __m256 best = widen_bf16x8(x + h0 * row + w0 * g.c + c);
      __m256i at = _mm256_setzero_si256();
      std::int32_t k = 0;
      for (std::int64_t h = h0; h < h1; ++h)
        for (std::int64_t w = w0; w < w1; ++w, ++k) {
          __m256 v = widen_bf16x8(x + h * row + w * g.c + c);
          __m256 more = _mm256_cmp_ps(v, best, _CMP_GT_OQ);
          best = _mm256_blendv_ps(best, v, more);
          at = _mm256_blendv_epi8(at, _mm256_set1_epi32(k), _mm256_castps_si256(more));
        }
      if (relu_mask) {
        __m256 positive = _mm256_cmp_ps(best, _mm256_setzero_ps(), _CMP_GT_OQ);
        at = _mm256_blendv_epi8(_mm256_set1_epi32(-1), at, _mm256_castps_si256(positive));
      }
      __m256i grad = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dy + c)));
      k = 0;
      for (std::int64_t h = h0; h < h1; ++h)
        for (std::int64_t w = w0; w < w1; ++w, ++k) {
          __m256i routed = _mm256_and_si256(_mm256_cmpeq_epi32(at, _mm256_set1_epi32(k)), grad);
          // 32-bit lanes holding 16-bit values back to 16 bits: pack, then the two halves together.
          __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(routed, routed), 0x08);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dx + h * row + w * g.c + c), _mm256_castsi256_si128(packed));
        }
    }
    if (vec_c < g.c) route_window_bf16_channels(g, x, dy, dx, h0, h1, w0, w1, vec_c, relu_mask);
  }
}

// The same, sixteen channels at a time on AVX-512 (channels a multiple of 16): the selects on
// mask registers, and dy's bits routed by a masked move (AVX2's packs them back from 32 bits).
__attribute__((target("avx512f,avx512bw,avx512vl"))) void route_row_bf16_avx512(
    const PoolGeometry& g, const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx, std::int64_t h0,
    std::int64_t h1, bool relu_mask) {
  const std::int64_t row = g.w * g.c;
  for (std::int64_t ow = 0; ow < g.ow; ++ow, dy += g.c) {
    const std::int64_t w0 = std::max<std::int64_t>(ow * g.sw - g.pl, 0), w1 = std::min(ow * g.sw - g.pl + g.kw, g.w);
    if (w1 <= w0) continue;
    for (std::int64_t c = 0; c < g.c; c += 16) {
      const __m512i at = first_maximum16(x + c, row, g.c, h0, h1, w0, w1, relu_mask);
      const __m256i grad = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(dy + c));
      std::int32_t k = 0;
      for (std::int64_t h = h0; h < h1; ++h)
        for (std::int64_t w = w0; w < w1; ++w, ++k)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dx + h * row + w * g.c + c),
                              _mm256_maskz_mov_epi16(_mm512_cmpeq_epi32_mask(at, _mm512_set1_epi32(k)), grad));
    }
  }
}

void route_row_bf16(const PoolGeometry& g, const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                    std::int64_t h0, std::int64_t h1, bool relu_mask) {
  if (use_avx512() && g.c % 16 == 0) return route_row_bf16_avx512(g, x, dy, dx, h0, h1, relu_mask);
  if (use_avx2()) return route_row_bf16_avx2(g, x, dy, dx, h0, h1, relu_mask);
  for (std::int64_t ow = 0; ow < g.ow; ++ow, dy += g.c) {
    const std::int64_t w0 = std::max<std::int64_t>(ow * g.sw - g.pl, 0), w1 = std::min(ow * g.sw - g.pl + g.kw, g.w);
    if (w1 > w0) route_window_bf16_channels(g, x, dy, dx, h0, h1, w0, w1, 0, relu_mask);
  }
}

// Windows apart: each dx row belongs to one output row (the rows from its windows' first to
// the next output row's first; the first and last output rows also take the rows before and
// after them), which zeroes it unless the windows tile the input exactly and then writes
// every element of its windows once. route(image offset, dy row offset, h0, h1) does one row.
template <class E, class Route>
void route_windows_apart(const PoolGeometry& g, E* dx, Route&& route) {
  const std::int64_t image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.c;
  const bool tiles = g.kh == g.sh && g.kw == g.sw && g.pt == 0 && g.pl == 0 && g.oh * g.kh == g.h && g.ow * g.kw == g.w;
  std::int64_t window_cost = g.ow * g.kh * g.kw * g.c * 2;
  parallel_for(g.n * g.oh, window_cost, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      std::int64_t n = r / g.oh, oh = r % g.oh;
      if (!tiles) {
        auto clamp = [&](std::int64_t h) { return std::min(std::max<std::int64_t>(h, 0), g.h); };
        std::int64_t z0 = oh == 0 ? 0 : clamp(oh * g.sh - g.pt), z1 = oh + 1 == g.oh ? g.h : clamp((oh + 1) * g.sh - g.pt);
        if (z1 > z0)
          std::memset(dx + n * image + z0 * g.w * g.c, 0, static_cast<std::size_t>((z1 - z0) * g.w * g.c) * sizeof(E));
      }
      std::int64_t h0 = std::max<std::int64_t>(oh * g.sh - g.pt, 0), h1 = std::min(oh * g.sh - g.pt + g.kh, g.h);
      if (h1 > h0) route(n * image, n * out_image + oh * g.ow * g.c, h0, h1);
    }
  });
}

}  // namespace

bool max_pool2d_backward_bf16(const PoolGeometry& g, const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                              bool relu_mask) {
  if (g.kh > g.sh || g.kw > g.sw) return false;  // overlapping windows add up: in float32
  route_windows_apart(g, dx, [&](std::int64_t at, std::int64_t dy_at, std::int64_t h0, std::int64_t h1) {
    route_row_bf16(g, x + at, dy + dy_at, dx + at, h0, h1, relu_mask);
  });
  return true;
}

void max_pool2d_backward(const PoolGeometry& g, const float* x, const float* dy, float* dx, bool relu_mask) {
  const std::int64_t image = g.h * g.w * g.c, out_image = g.oh * g.ow * g.c;
  const bool overlap = g.kh > g.sh || g.kw > g.sw;
  // The windows of output row `oh` of image `n`; dx already zeroed where needed.
  auto route_row = [&](std::int64_t n, std::int64_t oh) {
    std::int64_t h0 = std::max<std::int64_t>(oh * g.sh - g.pt, 0), h1 = std::min(oh * g.sh - g.pt + g.kh, g.h);
    if (h1 <= h0) return;
    for (std::int64_t ow = 0; ow < g.ow; ++ow) {
      std::int64_t w0 = std::max<std::int64_t>(ow * g.sw - g.pl, 0), w1 = std::min(ow * g.sw - g.pl + g.kw, g.w);
      if (w1 <= w0) continue;
      const float* dyo = dy + n * out_image + (oh * g.ow + ow) * g.c;
      route_window(g, x + n * image, dyo, dx + n * image, h0, h1, w0, w1, g.c, overlap, relu_mask);
    }
  };
  std::int64_t window_cost = g.ow * g.kh * g.kw * g.c * 2;
  if (overlap) {  // windows share rows: dx accumulates, one image per task
    parallel_for(g.n, g.oh * window_cost, [&](std::int64_t n0, std::int64_t n1) {
      for (std::int64_t n = n0; n < n1; ++n) {
        std::memset(dx + n * image, 0, static_cast<std::size_t>(image) * sizeof(float));
        for (std::int64_t oh = 0; oh < g.oh; ++oh) route_row(n, oh);
      }
    });
    return;
  }
  route_windows_apart(g, dx, [&](std::int64_t at, std::int64_t dy_at, std::int64_t h0, std::int64_t h1) {
    for (std::int64_t ow = 0; ow < g.ow; ++ow) {
      std::int64_t w0 = std::max<std::int64_t>(ow * g.sw - g.pl, 0), w1 = std::min(ow * g.sw - g.pl + g.kw, g.w);
      if (w1 > w0) route_window(g, x + at, dy + dy_at + ow * g.c, dx + at, h0, h1, w0, w1, g.c, false, relu_mask);
    }
  });
}

}  // namespace ef::cpu
