// The blocked FMA-chain GEMM (see gemm_chain.h): Goto-style packing of A and B into
// micro-panels and a 6x16 register tile. The library is compiled for baseline x86-64; only
// these kernels use AVX2+FMA, and they run only where the CPU has them.
#include "kernels/cpu/gemm_chain.h"

#include <algorithm>
#include <immintrin.h>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/transpose8.h"
#include "kernels/cpu/vec_math.h"

namespace ef::cpu {
namespace {

constexpr std::int64_t kMr = 6, kNr = 16;  // the register tile: 12 accumulators of 8 lanes
// k per block: a packed B micro-panel (kKc x 16 floats, 16 KB) stays in L1 while the A
// micro-panels stream past it from L2. Only the caches depend on it, never the bits.
constexpr std::int64_t kKc = 256;
constexpr std::int64_t kMc = 144;  // rows of A packed at a time (144 KB, L2)
constexpr std::int64_t kNc = 512;  // columns of B one task packs (512 KB, L2)

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// c[6,16] = (first ? 0 : c) + the chain over this block's kc values of k, then + bias on the
// block that ends K. pa: kc groups of 6 (one per row), pb: kc groups of 16 (one per column).
template <bool First, bool Last>
__attribute__((target("avx2,fma"))) void tile(std::int64_t kc, const float* pa, const float* pb, float* c,
                                              std::int64_t ldc, const float* bias) {
  __m256 lo[kMr], hi[kMr];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    lo[r] = First ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc);
    hi[r] = First ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8);
  }
  for (std::int64_t k = 0; k < kc; ++k, pa += kMr, pb += kNr) {
    const __m256 b0 = _mm256_load_ps(pb), b1 = _mm256_load_ps(pb + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 x = _mm256_broadcast_ss(pa + r);
      lo[r] = _mm256_fmadd_ps(x, b0, lo[r]);
      hi[r] = _mm256_fmadd_ps(x, b1, hi[r]);
    }
  }
  if (Last && bias) {
    const __m256 v0 = _mm256_loadu_ps(bias), v1 = _mm256_loadu_ps(bias + 8);
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      lo[r] = _mm256_add_ps(lo[r], v0);
      hi[r] = _mm256_add_ps(hi[r], v1);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_ps(c + r * ldc, lo[r]);
    _mm256_storeu_ps(c + r * ldc + 8, hi[r]);
  }
}

using TileFn = void (*)(std::int64_t, const float*, const float*, float*, std::int64_t, const float*);
constexpr TileFn kTiles[2][2] = {{tile<false, false>, tile<false, true>}, {tile<true, false>, tile<true, true>}};

// A partial tile (rows < 6 or cols < 16) runs the same kernel on a padded copy.
void edge_tile(TileFn fn, bool first, std::int64_t kc, const float* pa, const float* pb, float* c, std::int64_t ldc,
               std::int64_t rows, std::int64_t cols, const float* bias) {
  alignas(32) float t[kMr * kNr] = {};
  alignas(32) float bt[kNr] = {};
  if (!first)
    for (std::int64_t r = 0; r < rows; ++r) std::copy(c + r * ldc, c + r * ldc + cols, t + r * kNr);
  if (bias) std::copy(bias, bias + cols, bt);
  fn(kc, pa, pb, t, kNr, bias ? bt : nullptr);
  for (std::int64_t r = 0; r < rows; ++r) std::copy(t + r * kNr, t + r * kNr + cols, c + r * ldc);
}

struct Operand {
  const float* p;
  std::int64_t ld;  // elements between consecutive rows of the stored matrix
  bool transposed;
};

// Rows [i0, i0+mc) and k in [p0, p0+kc) of op(A) into panels of 6 rows, k-major, zero-padded.
void pack_a(const Operand& a, std::int64_t i0, std::int64_t mc, std::int64_t p0, std::int64_t kc, float* out) {
  for (std::int64_t ir = 0; ir < mc; ir += kMr) {
    const std::int64_t rows = std::min(kMr, mc - ir);
    for (std::int64_t p = 0; p < kc; ++p, out += kMr) {
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t i = i0 + ir + r, q = p0 + p;
        out[r] = a.transposed ? a.p[q * a.ld + i] : a.p[i * a.ld + q];
      }
      for (std::int64_t r = rows; r < kMr; ++r) out[r] = 0.0f;
    }
  }
}

// k in [p0, p0+kc) and columns [j0, j0+nc) of op(B) into panels of 16 columns, k-major,
// zero-padded. A B stored [N,K] is transposed 8x8 at a time on the way.
__attribute__((target("avx2,fma"))) void pack_b(const Operand& b, std::int64_t p0, std::int64_t kc, std::int64_t j0,
                                                std::int64_t nc, float* out) {
  for (std::int64_t jp = 0; jp < nc; jp += kNr, out += kc * kNr) {
    const std::int64_t cols = std::min(kNr, nc - jp), j = j0 + jp;
    if (!b.transposed) {
      for (std::int64_t p = 0; p < kc; ++p) {
        const float* src = b.p + (p0 + p) * b.ld + j;
        float* dst = out + p * kNr;
        if (cols == kNr) {
          _mm256_store_ps(dst, _mm256_loadu_ps(src));
          _mm256_store_ps(dst + 8, _mm256_loadu_ps(src + 8));
        } else {
          std::copy(src, src + cols, dst);
          std::fill(dst + cols, dst + kNr, 0.0f);
        }
      }
      continue;
    }
    std::int64_t p = 0;
    if (cols == kNr)
      for (; p + 8 <= kc; p += 8)
        for (int g = 0; g < 2; ++g) {
          __m256 t[8];
          for (int i = 0; i < 8; ++i) t[i] = _mm256_loadu_ps(b.p + (j + 8 * g + i) * b.ld + p0 + p);
          transpose8(t);
          for (int i = 0; i < 8; ++i) _mm256_store_ps(out + (p + i) * kNr + 8 * g, t[i]);
        }
    for (; p < kc; ++p) {
      float* dst = out + p * kNr;
      for (std::int64_t c = 0; c < cols; ++c) dst[c] = b.p[(j + c) * b.ld + p0 + p];
      std::fill(dst + cols, dst + kNr, 0.0f);
    }
  }
}

float* aligned(std::vector<float>& buf, std::int64_t floats) {
  buf.resize(static_cast<std::size_t>(floats + 8));
  auto addr = reinterpret_cast<std::uintptr_t>(buf.data());
  return reinterpret_cast<float*>((addr + 31) & ~std::uintptr_t{31});
}

// C rows [m0, m1) and columns [n0, n1) of one matrix of the batch.
void product_part(const Operand& a, const Operand& b, float* c, std::int64_t ldc, std::int64_t k, std::int64_t m0,
                  std::int64_t m1, std::int64_t n0, std::int64_t n1, const float* bias) {
  thread_local std::vector<float> a_buf, b_buf;
  const std::int64_t nc = n1 - n0;
  float* pb = aligned(b_buf, std::min(kKc, k) * ceil_div(nc, kNr) * kNr);
  float* pa = aligned(a_buf, std::min(kKc, k) * ceil_div(std::min(kMc, m1 - m0), kMr) * kMr);
  for (std::int64_t p0 = 0; p0 < k; p0 += kKc) {
    const std::int64_t kc = std::min(kKc, k - p0);
    const bool first = p0 == 0, last = p0 + kc == k;
    const TileFn fn = kTiles[first][last];
    pack_b(b, p0, kc, n0, nc, pb);
    for (std::int64_t i0 = m0; i0 < m1; i0 += kMc) {
      const std::int64_t mc = std::min(kMc, m1 - i0);
      pack_a(a, i0, mc, p0, kc, pa);
      for (std::int64_t jp = 0; jp < nc; jp += kNr) {
        const std::int64_t cols = std::min(kNr, nc - jp);
        const float* panel_b = pb + jp * kc;
        const float* tile_bias = bias && last ? bias + n0 + jp : nullptr;
        for (std::int64_t ip = 0; ip < mc; ip += kMr) {
          const std::int64_t rows = std::min(kMr, mc - ip);
          float* tc = c + (i0 + ip) * ldc + n0 + jp;
          const float* panel_a = pa + ip * kc;
          if (rows == kMr && cols == kNr) fn(kc, panel_a, panel_b, tc, ldc, tile_bias);
          else edge_tile(fn, first, kc, panel_a, panel_b, tc, ldc, rows, cols, tile_bias);
        }
      }
    }
  }
}

bool cpu_has_avx2_fma() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && vec::kernels().isa != vec::Isa::baseline;
  }();
  return ok;
}

}  // namespace

bool gemm_chain_applicable() { return cpu_has_avx2_fma(); }

void gemm_chain_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                    std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias, bool a_transposed,
                    bool b_transposed) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum: +0, then the bias
    for (std::int64_t i = 0; i < batch * m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * n + j] = bias ? 0.0f + bias[j] : 0.0f;
    return;
  }
  // Tasks are (matrix, rows, columns) parts, never a split of K: the threads change no bit.
  // Parts are cut only until every thread has one; each task packs its own operands.
  const int threads = threads_for_work(work_of({batch, m, k, n}), kGemmParallelGrain);
  std::int64_t m_parts = 1, n_parts = ceil_div(n, kNc);
  while (batch * m_parts * n_parts < threads) {
    const std::int64_t rows = ceil_div(m, m_parts), cols = ceil_div(n, n_parts);
    if (cols >= 4 * kNr && cols >= rows) ++n_parts;
    else if (rows >= 4 * kMr) ++m_parts;
    else break;
  }
  const std::int64_t rows_per = ceil_div(ceil_div(m, m_parts), kMr) * kMr;
  const std::int64_t cols_per = ceil_div(ceil_div(n, n_parts), kNr) * kNr;
  m_parts = ceil_div(m, rows_per);
  n_parts = ceil_div(n, cols_per);
  const std::int64_t tasks = batch * m_parts * n_parts;
  auto run = [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t i = t / (m_parts * n_parts), part = t % (m_parts * n_parts);
      const std::int64_t mp = part / n_parts, np = part % n_parts;
      const Operand oa{a + (a_broadcast ? 0 : i * m * k), a_transposed ? m : k, a_transposed};
      const Operand ob{b + (b_broadcast ? 0 : i * k * n), b_transposed ? k : n, b_transposed};
      product_part(oa, ob, c + i * m * n, n, k, mp * rows_per, std::min(m, (mp + 1) * rows_per), np * cols_per,
                   std::min(n, (np + 1) * cols_per), bias);
    }
  };
  parallel_for(tasks, std::max<std::int64_t>(work_of({batch, m, k, n}) / tasks, 1), run, kGemmParallelGrain);
}

}  // namespace ef::cpu
