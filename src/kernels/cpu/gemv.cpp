// The few-rows product (see gemv.h). The library is compiled for baseline x86-64; only the
// kernels below use AVX2+FMA, and they run only where the CPU has them (gemv_applicable).
#include "kernels/cpu/gemv.h"

#include <algorithm>
#include <immintrin.h>
#include <vector>

#include "kernels/cpu/gemm_chain.h"
#include "kernels/cpu/packed_b_cache.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/transpose8.h"
#include "kernels/cpu/vec_math.h"

namespace ef::cpu {
namespace {

// Multiply-adds below which the product stays on the calling thread. A product of this size
// reads about 1 MB of weights (~15 us on one core); waking a second thread pays from there on.
constexpr std::int64_t kGemvParallelGrain = 1 << 18;

// Columns of C kept hot while the weights stream past: M rows x kBlockFloats / M floats, 16 KB.
constexpr std::int64_t kBlockFloats = 4096;

// Lanes [0, r) on, for 0 < r <= 8.
__attribute__((target("avx2,fma"))) inline __m256i tail_mask(std::int64_t r) {
  alignas(32) static const std::int32_t bits[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + 8 - r));
}

// c[m, j0:j1] = sum over k in order of x[m, k] * b[k, j0:j1], for the M rows of x (row-major,
// row stride ldx), with c's row stride ldc. The weights stream once, U rows at a time; the
// columns of c being summed stay in L1.
template <int M, int U>
__attribute__((target("avx2,fma"))) void sweep_block(const float* x, std::int64_t ldx, const float* b, std::int64_t ldb,
                                                     float* c, std::int64_t ldc, std::int64_t K, std::int64_t j0,
                                                     std::int64_t j1) {
  const std::int64_t full_end = j0 + (j1 - j0) / 8 * 8;
  const std::int64_t rest = j1 - full_end;
  const __m256i mask = tail_mask(rest > 0 ? rest : 8);
  for (int m = 0; m < M; ++m)
    for (std::int64_t j = j0; j < j1; ++j) c[m * ldc + j] = 0.0f;
  std::int64_t k = 0;
  for (; k + U <= K; k += U) {
    __m256 xs[M][U];
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m)
#pragma GCC unroll 8
      for (int u = 0; u < U; ++u) xs[m][u] = _mm256_set1_ps(x[m * ldx + k + u]);
    const float* rows = b + k * ldb;
    for (std::int64_t j = j0; j < full_end; j += 8) {
      __m256 w[U];
#pragma GCC unroll 8
      for (int u = 0; u < U; ++u) w[u] = _mm256_loadu_ps(rows + u * ldb + j);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        __m256 acc = _mm256_loadu_ps(c + m * ldc + j);
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u) acc = _mm256_fmadd_ps(xs[m][u], w[u], acc);
        _mm256_storeu_ps(c + m * ldc + j, acc);
      }
    }
    if (rest) {
      __m256 w[U];
#pragma GCC unroll 8
      for (int u = 0; u < U; ++u) w[u] = _mm256_maskload_ps(rows + u * ldb + full_end, mask);
#pragma GCC unroll 8
      for (int m = 0; m < M; ++m) {
        __m256 acc = _mm256_maskload_ps(c + m * ldc + full_end, mask);
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u) acc = _mm256_fmadd_ps(xs[m][u], w[u], acc);
        _mm256_maskstore_ps(c + m * ldc + full_end, mask, acc);
      }
    }
  }
  for (; k < K; ++k) {  // the last K % U rows, one at a time: the same chain of multiply-adds
    __m256 xs[M];
    for (int m = 0; m < M; ++m) xs[m] = _mm256_set1_ps(x[m * ldx + k]);
    const float* row = b + k * ldb;
    for (std::int64_t j = j0; j < full_end; j += 8) {
      __m256 w = _mm256_loadu_ps(row + j);
      for (int m = 0; m < M; ++m)
        _mm256_storeu_ps(c + m * ldc + j, _mm256_fmadd_ps(xs[m], w, _mm256_loadu_ps(c + m * ldc + j)));
    }
    if (rest) {
      __m256 w = _mm256_maskload_ps(row + full_end, mask);
      for (int m = 0; m < M; ++m)
        _mm256_maskstore_ps(c + m * ldc + full_end, mask,
                            _mm256_fmadd_ps(xs[m], w, _mm256_maskload_ps(c + m * ldc + full_end, mask)));
    }
  }
}

// B stored [K,N]: columns [n0, n1) of C, in blocks that keep C's part in L1.
template <int M>
__attribute__((target("avx2,fma"))) void sweep(const float* x, std::int64_t ldx, const float* b, std::int64_t ldb,
                                               float* c, std::int64_t ldc, std::int64_t K, std::int64_t n0,
                                               std::int64_t n1) {
  constexpr std::int64_t block = std::max<std::int64_t>(kBlockFloats / M / 8 * 8, 64);
  constexpr int U = M == 1 ? 8 : 4;
  for (std::int64_t j = n0; j < n1; j += block) sweep_block<M, U>(x, ldx, b, ldb, c, ldc, K, j, std::min(j + block, n1));
}

// sweep<1> on AVX-512: 16 columns per vector, the same chain per element (an FMA rounds once
// whatever the width), half the loads and stores of C per row of weights. Batch-1 inference
// streams its weights from L2 at two threads, where the AVX2 loop's per-vector overhead showed.
__attribute__((target("avx512f"))) void sweep1_avx512(const float* x, std::int64_t, const float* b,
                                                      std::int64_t ldb, float* c, std::int64_t, std::int64_t K,
                                                      std::int64_t n0, std::int64_t n1) {
  constexpr int U = 8;
  constexpr std::int64_t block = kBlockFloats;
  for (std::int64_t j0 = n0; j0 < n1; j0 += block) {
    const std::int64_t j1 = std::min(j0 + block, n1);
    const std::int64_t full_end = j0 + (j1 - j0) / 16 * 16;
    const __mmask16 mask = static_cast<__mmask16>((1u << (j1 - full_end)) - 1u);
    for (std::int64_t j = j0; j < j1; ++j) c[j] = 0.0f;
    std::int64_t k = 0;
    for (; k + U <= K; k += U) {
      __m512 xs[U];
#pragma GCC unroll 8
      for (int u = 0; u < U; ++u) xs[u] = _mm512_set1_ps(x[k + u]);
      const float* rows = b + k * ldb;
      for (std::int64_t j = j0; j < full_end; j += 16) {
        __m512 acc = _mm512_loadu_ps(c + j);
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u) acc = _mm512_fmadd_ps(xs[u], _mm512_loadu_ps(rows + u * ldb + j), acc);
        _mm512_storeu_ps(c + j, acc);
      }
      if (mask) {
        __m512 acc = _mm512_maskz_loadu_ps(mask, c + full_end);
#pragma GCC unroll 8
        for (int u = 0; u < U; ++u)
          acc = _mm512_fmadd_ps(xs[u], _mm512_maskz_loadu_ps(mask, rows + u * ldb + full_end), acc);
        _mm512_mask_storeu_ps(c + full_end, mask, acc);
      }
    }
    for (; k < K; ++k) {
      const __m512 xk = _mm512_set1_ps(x[k]);
      const float* row = b + k * ldb;
      for (std::int64_t j = j0; j < full_end; j += 16)
        _mm512_storeu_ps(c + j, _mm512_fmadd_ps(xk, _mm512_loadu_ps(row + j), _mm512_loadu_ps(c + j)));
      if (mask)
        _mm512_mask_storeu_ps(c + full_end, mask,
                              _mm512_fmadd_ps(xk, _mm512_maskz_loadu_ps(mask, row + full_end),
                                              _mm512_maskz_loadu_ps(mask, c + full_end)));
    }
  }
}

// B stored [N,K]: c[m, n] for n in [n0, n1) by the same chain as sweep, k in order. Eight
// rows of B are read 8 floats at a time and transposed in registers, so the lanes are 8
// columns of C and each of them sees x[m, k] * b[n, k] for k = 0, 1, ... in turn.
template <int M>
__attribute__((target("avx2,fma"))) void dots(const float* x, std::int64_t ldx, const float* b, std::int64_t K,
                                              float* c, std::int64_t ldc, std::int64_t n0, std::int64_t n1) {
  for (std::int64_t n = n0; n < n1; n += 8) {
    const std::int64_t cols = std::min<std::int64_t>(8, n1 - n);
    const float* rows[8];
    for (std::int64_t i = 0; i < 8; ++i) rows[i] = b + (n + std::min(i, cols - 1)) * K;  // repeats are not stored
    __m256 acc[M];
    for (int m = 0; m < M; ++m) acc[m] = _mm256_setzero_ps();
    std::int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
      __m256 t[8];
      for (int i = 0; i < 8; ++i) t[i] = _mm256_loadu_ps(rows[i] + k);
      transpose8(t);
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u)
#pragma GCC unroll 8
        for (int m = 0; m < M; ++m) acc[m] = _mm256_fmadd_ps(_mm256_set1_ps(x[m * ldx + k + u]), t[u], acc[m]);
    }
    if (k < K) {
      const __m256i mask = tail_mask(K - k);
      __m256 t[8];
      for (int i = 0; i < 8; ++i) t[i] = _mm256_maskload_ps(rows[i] + k, mask);
      transpose8(t);
      for (std::int64_t u = 0; u < K - k; ++u)
        for (int m = 0; m < M; ++m) acc[m] = _mm256_fmadd_ps(_mm256_set1_ps(x[m * ldx + k + u]), t[u], acc[m]);
    }
    const __m256i out = tail_mask(cols);
    for (int m = 0; m < M; ++m) _mm256_maskstore_ps(c + m * ldc + n, out, acc[m]);
  }
}

using SweepFn = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*, std::int64_t, std::int64_t,
                         std::int64_t, std::int64_t);
constexpr std::int64_t kSweepRows = 8;
constexpr SweepFn kSweeps[kSweepRows] = {sweep<1>, sweep<2>, sweep<3>, sweep<4>,
                                           sweep<5>, sweep<6>, sweep<7>, sweep<8>};
using DotsFn = void (*)(const float*, std::int64_t, const float*, std::int64_t, float*, std::int64_t, std::int64_t,
                        std::int64_t);
constexpr DotsFn kDots[kSweepRows] = {dots<1>, dots<2>, dots<3>, dots<4>, dots<5>, dots<6>, dots<7>, dots<8>};

// The one-row sweep: AVX-512's where the CPU has it and EF_ISA allows it.
SweepFn sweep_one_row() {
  static const SweepFn fn = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && vec::kernels().isa == vec::Isa::avx512 ? SweepFn{sweep1_avx512}
                                                                                       : SweepFn{sweep<1>};
  }();
  return fn;
}

bool cpu_has_avx2_fma() {
  static const bool ok = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           vec::kernels().isa != vec::Isa::baseline;  // EF_ISA=baseline: oneDNN's GEMM, as before
  }();
  return ok;
}

}  // namespace

bool gemv_applicable(std::int64_t m) { return m >= 1 && m <= kGemvMaxRows && cpu_has_avx2_fma(); }

void gemv_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
              std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias, bool a_transposed,
              bool b_transposed, const std::shared_ptr<Storage>* b_owner) {
  if (batch <= 0 || m <= 0 || n <= 0) return;
  // A transposed operand (stored [K,M]) is copied to rows first: M*K floats, small beside B.
  thread_local std::vector<float> packed;
  std::int64_t a_matrices = a_broadcast ? 1 : batch;
  if (a_transposed) {
    packed.resize(static_cast<std::size_t>(a_matrices * m * k));
    for (std::int64_t i = 0; i < a_matrices; ++i)
      for (std::int64_t r = 0; r < m; ++r)
        for (std::int64_t p = 0; p < k; ++p) packed[static_cast<std::size_t>((i * m + r) * k + p)] = a[(i * k + p) * m + r];
    a = packed.data();
  }
  // Work is split over (batch, 8-column group) pairs; each thread takes a contiguous run.
  const std::int64_t groups = (n + 7) / 8, total = batch * groups;
  // The grain counts multiply-adds: batch * m * k * n over the `total` groups.
  const std::int64_t per_group = std::max<std::int64_t>(work_of({batch, m, k, n}) / std::max<std::int64_t>(total, 1), 1);
  // Each thread streams its own columns: of a B stored [K,N], a part of every row, whose
  // neighbours the prefetchers pull in too, so no core's L2 keeps its share of a model's weights
  // from one call to the next (batch-1 inference at 2 threads ran 1.5-1.8x onnxruntime's time).
  // A B multiplied again unchanged is read from a copy stored part by part, [K, part_cols]
  // each (the packed-B cache), one part per thread; the same floats in the same order.
  std::shared_ptr<const PackedB> parts;
  std::int64_t part_cols = 0;
  if (b_owner && !b_transposed && (batch == 1 || b_broadcast)) {
    const int threads = total < 2 ? 1 : threads_for_work(work_of({total, per_group}), kGemvParallelGrain);
    if (threads > 1) {
      part_cols = (groups + threads - 1) / threads * 8;
      parts = cached_panels(*b_owner, b, k, n, part_cols, k, false);
    }
  }
  const auto sweep_rows = [&](std::int64_t rows, const float* x, const float* bi, float* ci, std::int64_t n0,
                              std::int64_t n1) {
    const SweepFn sweep = rows == 1 ? sweep_one_row() : kSweeps[rows - 1];
    if (!parts) return sweep(x, k, bi, n, ci, n, k, n0, n1);
    for (std::int64_t p = n0 / part_cols * part_cols; p < n1; p += part_cols)
      sweep(x, k, parts->panels + p * k, part_cols, ci + p, n, k, std::max(n0, p) - p, std::min(n1, p + part_cols) - p);
  };
  auto run = [&](std::int64_t g0, std::int64_t g1) {
    for (std::int64_t g = g0; g < g1;) {
      std::int64_t i = g / groups, first = g % groups, last = std::min(groups, first + (g1 - g));
      const float* ai = a + (a_broadcast ? 0 : i * m * k);
      const float* bi = b + (b_broadcast ? 0 : i * k * n);
      float* ci = c + i * m * n;
      std::int64_t n0 = first * 8, n1 = std::min(n, last * 8);
      for (std::int64_t r = 0; r < m; r += kSweepRows) {  // blocks of up to 8 rows, each a full pass over B
        std::int64_t rows = std::min(kSweepRows, m - r);
        if (b_transposed) kDots[rows - 1](ai + r * k, k, bi, k, ci + r * n, n, n0, n1);
        else sweep_rows(rows, ai + r * k, bi, ci + r * n, n0, n1);
      }
      if (bias)
        for (std::int64_t r = 0; r < m; ++r)
          for (std::int64_t j = n0; j < n1; ++j) ci[r * n + j] += bias[j];
      g += last - first;
    }
  };
  parallel_for(total, per_group, run, kGemvParallelGrain);
}

}  // namespace ef::cpu
