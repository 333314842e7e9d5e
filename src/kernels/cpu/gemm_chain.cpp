// The blocked FMA-chain GEMM (see gemm_chain.h): Goto-style packing of A and B into
// micro-panels and a register tile per instruction set (6x16 on AVX2+FMA, 12x32 on AVX-512).
// The library is compiled for baseline x86-64; only these kernels use the wider instructions,
// and they run only where the CPU has them.
#include "kernels/cpu/gemm_chain.h"

#include <algorithm>
#include <array>
#include <immintrin.h>
#include <utility>
#include <vector>

#include "kernels/cpu/packed_b_cache.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/transpose8.h"
#include "kernels/cpu/vec_math.h"

namespace ef::cpu {
namespace {

// Each instruction set has its own register tile; the packing and the blocking below are
// written for any tile of `mr` rows by `nr` columns (nr a multiple of 8).
// AVX2: 6x16, 12 accumulators of 8 lanes. AVX-512: 12x32, 24 accumulators of 16 lanes
// (about 200 GFLOPS of one Xeon core's 240 on packed operands). The per-element chain is the
// same on both, so they give the same bits (an FMA rounds once, whatever the vector width).
// k per block: a packed B micro-panel (kKc x nr floats, 16 KB for AVX2's 16 columns, 32 KB for
// AVX-512's) stays in L1 while the A micro-panels stream past it from L2. Only the caches
// depend on it, never the bits.
constexpr std::int64_t kKc = 256;
constexpr std::int64_t kMc = 144;  // rows of A packed at a time (144 KB, L2); a multiple of 6 and 12
constexpr std::int64_t kNc = 512;  // columns of B one task packs (512 KB, L2)

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// c[6,16] = (first ? 0 : c) + the chain over this block's kc values of k, then + bias on the
// block that ends K.
// - pa: kc groups of 6 (one per row), packed; or, `DirectA`, the rows of a stored A `lda`
//   apart (no packing pass; a partial tile of rows is packed, zero-padded). Kernel tables
//   say whether a tile takes A in place (Tile::direct_a): AVX2's does not, as measured on an
//   AVX-512 Xeon; its variants stay so that an AVX2 CPU can be measured by flipping the flag.
// - pb: kc groups of 16 (one per column), packed; or, `InPlace`, rows of the stored B `ldb`
//   apart, each also stored into `pack` (when not null): the first tile of a panel packs B for
//   the others on the way, for two stores per k (a separate packing pass read all of B once
//   more, from L3 for a model's weights).
template <bool First, bool Last, bool InPlace, bool DirectA>
struct TileAvx2 {
  __attribute__((target("avx2,fma"))) static void run(std::int64_t kc, const float* pa, std::int64_t lda,
                                                      const float* pb, std::int64_t ldb, float* c, std::int64_t ldc,
                                                      const float* bias, float* pack);
};
template <bool First, bool Last, bool InPlace, bool DirectA>
void TileAvx2<First, Last, InPlace, DirectA>::run(std::int64_t kc, const float* pa, std::int64_t lda, const float* pb,
                                                  std::int64_t ldb, float* c, std::int64_t ldc, const float* bias,
                                                  float* pack) {
  constexpr int kMr = 6;
  __m256 lo[kMr], hi[kMr];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    lo[r] = First ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc);
    hi[r] = First ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8);
  }
  for (std::int64_t k = 0; k < kc; ++k) {
    const float* row = InPlace ? pb + k * ldb : pb + k * 16;
    const __m256 b0 = _mm256_loadu_ps(row), b1 = _mm256_loadu_ps(row + 8);
    if (InPlace && pack) {
      _mm256_store_ps(pack + k * 16, b0);
      _mm256_store_ps(pack + k * 16 + 8, b1);
    }
#pragma GCC unroll 6
    for (int r = 0; r < kMr; ++r) {
      const __m256 x = _mm256_broadcast_ss(DirectA ? pa + r * lda + k : pa + k * kMr + r);
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

// c[Mr, 16 * Vecs], as tile_avx2 with 16-lane vectors: 12x32 (24 accumulators, 12
// broadcasts and 2 loads per k), or 6x64 (24 accumulators, 6 broadcasts and 4 loads per k),
// which products of a multiple of 64 columns run: 5-20% faster on an AVX-512 Xeon (fewer load
// slots per FMA, and half as many rows of a direct A streaming through L1 at once).
// pa: kc groups of `PackedMr` (the tile's rows), pb: kc groups of 16 * Vecs.
// Packed operands come from L1 and L2 without software prefetches (they cost load slots: the
// tile ran 4% faster without them); the in-place B rows, 2 KB apart for a 512-wide layer, are
// prefetched 4 rows ahead.
// `Rows` (PackedMr, or fewer for the last rows of a product: 8 or 4 after 12-row tiles, 4 or 2
// after 6-row tiles) computes and stores only that many rows of C; packed A keeps PackedMr per k.
// `Vecs` 16-lane vectors per row: 2 (32 columns), 4 (64), or 1 for the narrow tile (16
// columns), which a product of at most 16 columns runs (a classifier's Dense(10) computed 32
// columns for 10).
template <int Rows, int Vecs, int PackedMr, bool First, bool Last, bool InPlace, bool DirectA>
struct TileAvx512Rows {
  __attribute__((target("avx512f"))) static void run(std::int64_t kc, const float* pa, std::int64_t lda,
                                                     const float* pb, std::int64_t ldb, float* c, std::int64_t ldc,
                                                     const float* bias, float* pack);
};
// The tiles by rows computed, 16-lane vectors per row and rows per packed group of A.
template <int Rows, int Vecs, int PackedMr>
struct Avx512 {
  template <bool First, bool Last, bool InPlace, bool DirectA>
  using T = TileAvx512Rows<Rows, Vecs, PackedMr, First, Last, InPlace, DirectA>;
};

template <int Rows, int Vecs, int PackedMr, bool First, bool Last, bool InPlace, bool DirectA>
void TileAvx512Rows<Rows, Vecs, PackedMr, First, Last, InPlace, DirectA>::run(std::int64_t kc, const float* pa,
                                                                    std::int64_t lda, const float* pb,
                                                                    std::int64_t ldb, float* c, std::int64_t ldc,
                                                                    const float* bias, float* pack) {
  constexpr int kMr = Rows, kPackedMr = PackedMr, kNr = 16 * Vecs;
  __m512 acc[kMr][Vecs];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < Vecs; ++v) acc[r][v] = First ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16 * v);
#pragma GCC unroll 4
  for (std::int64_t k = 0; k < kc; ++k) {
    const float* row = InPlace ? pb + k * ldb : pb + k * kNr;
    __m512 b[Vecs];
#pragma GCC unroll 4
    for (int v = 0; v < Vecs; ++v) b[v] = _mm512_loadu_ps(row + 16 * v);
    if (InPlace) {
#pragma GCC unroll 4
      for (int v = 0; v < Vecs; ++v) {
        if (pack) _mm512_store_ps(pack + k * kNr + 16 * v, b[v]);
        _mm_prefetch(reinterpret_cast<const char*>(row + 4 * ldb + 16 * v), _MM_HINT_T0);
      }
    }
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      const __m512 x = _mm512_set1_ps(DirectA ? pa[r * lda + k] : pa[k * kPackedMr + r]);
#pragma GCC unroll 4
      for (int v = 0; v < Vecs; ++v) acc[r][v] = _mm512_fmadd_ps(x, b[v], acc[r][v]);
    }
  }
  if (Last && bias) {
#pragma GCC unroll 4
    for (int v = 0; v < Vecs; ++v) {
      const __m512 bv = _mm512_loadu_ps(bias + 16 * v);
#pragma GCC unroll 12
      for (int r = 0; r < kMr; ++r) acc[r][v] = _mm512_add_ps(acc[r][v], bv);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < Vecs; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

using TileFn = void (*)(std::int64_t, const float*, std::int64_t, const float*, std::int64_t, float*, std::int64_t,
                       const float*, float*);
using TileFns = std::array<TileFn, 16>;
std::size_t variant(bool first, bool last, bool b_in_place, bool a_direct) {
  return (first ? 8 : 0) + (last ? 4 : 0) + (b_in_place ? 2 : 0) + (a_direct ? 1 : 0);
}
template <template <bool, bool, bool, bool> class T, std::size_t... I>
constexpr TileFns variants(std::index_sequence<I...>) {
  return {&T<(I & 8) != 0, (I & 4) != 0, (I & 2) != 0, (I & 1) != 0>::run...};
}

// One instruction set's register tile: its size, its sixteen variants (first and last K
// block, B in place, A direct), variants that compute only a tile's last few rows (a batch of
// 2^k rows leaves 8 or 4 after 12-row tiles, 4 or 2 after 6-row tiles), and whether it reads
// an A stored [M,K] in place. Measured on an AVX-512 Xeon: reading A in place ran AVX-512's
// tile 2-4% faster (no packing pass, and at 2 threads no pass per thread), and AVX2's 3-6%
// slower (1024^3 and 128x512x784 products).
struct Tile {
  struct Rows {
    std::int64_t rows;
    TileFns fn;
  };
  std::int64_t mr, nr;
  TileFns fn;  // by variant()
  bool direct_a;
  std::array<Rows, 2> fewer{};  // null where it has none

  // The variant for a tile of `rows` rows, or null (the caller pads).
  TileFn for_rows(std::int64_t rows, std::size_t v) const {
    if (rows == mr) return fn[v];
    for (const Rows& f : fewer)
      if (f.rows == rows) return f.fn[v];
    return nullptr;
  }
};
template <template <bool, bool, bool, bool> class T>
constexpr TileFns all_variants() {
  return variants<T>(std::make_index_sequence<16>());
}
constexpr Tile kTileAvx2{6, 16, all_variants<TileAvx2>(), false};
constexpr Tile kTileAvx512{12, 32, all_variants<Avx512<12, 2, 12>::T>(), true,
                           {{{8, all_variants<Avx512<8, 2, 12>::T>()}, {4, all_variants<Avx512<4, 2, 12>::T>()}}}};
constexpr Tile kTileAvx512Wide{6, 64, all_variants<Avx512<6, 4, 6>::T>(), true,
                               {{{4, all_variants<Avx512<4, 4, 6>::T>()}, {2, all_variants<Avx512<2, 4, 6>::T>()}}}};
constexpr Tile kTileAvx512Narrow{12, 16, all_variants<Avx512<12, 1, 12>::T>(), true,
                                 {{{8, all_variants<Avx512<8, 1, 12>::T>()}, {4, all_variants<Avx512<4, 1, 12>::T>()}}}};
constexpr std::int64_t kMaxTile = 12 * 32, kMaxNr = 64;
static_assert(kTileAvx512.mr * kTileAvx512.nr <= kMaxTile && kTileAvx512Wide.mr * kTileAvx512Wide.nr <= kMaxTile &&
              kTileAvx512Wide.nr <= kMaxNr);

// A partial tile (rows < mr or cols < nr) runs the same kernel on a padded copy.
void edge_tile(const Tile& tl, TileFn fn, bool first, std::int64_t kc, const float* pa, std::int64_t lda,
               const float* pb, std::int64_t ldb, float* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols,
               const float* bias, float* pack) {
  alignas(64) float t[kMaxTile] = {};
  alignas(64) float bt[kMaxNr] = {};
  if (!first)
    for (std::int64_t r = 0; r < rows; ++r) std::copy(c + r * ldc, c + r * ldc + cols, t + r * tl.nr);
  if (bias) std::copy(bias, bias + cols, bt);
  fn(kc, pa, lda, pb, ldb, t, tl.nr, bias ? bt : nullptr, pack);
  for (std::int64_t r = 0; r < rows; ++r) std::copy(t + r * tl.nr, t + r * tl.nr + cols, c + r * ldc);
}

struct Operand {
  const float* p;
  std::int64_t ld;  // elements between consecutive rows of the stored matrix
  bool transposed;
};

// Rows [i0, i0+mc) and k in [p0, p0+kc) of op(A) into panels of mr rows, k-major, zero-padded.
__attribute__((target("avx2,fma"))) void pack_a(const Operand& a, std::int64_t mr, std::int64_t i0, std::int64_t mc,
                                                std::int64_t p0, std::int64_t kc, float* out) {
  if (a.transposed) {
    // An A stored [K,M] holds each k's values of the block's rows side by side: one row of
    // K is read once, front to back, into every panel (a panel at a time re-read the same
    // cache lines for each panel, and a 12-float std::copy was a memmove call).
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* src = a.p + (p0 + p) * a.ld + i0;
      float* dst = out + p * mr;
      std::int64_t ir = 0;
      for (; ir + mr <= mc; ir += mr, src += mr, dst += kc * mr) {
        std::int64_t g = 0;
        for (; g + 8 <= mr; g += 8) _mm256_storeu_ps(dst + g, _mm256_loadu_ps(src + g));
        for (; g + 4 <= mr; g += 4) _mm_storeu_ps(dst + g, _mm_loadu_ps(src + g));
        for (; g < mr; ++g) dst[g] = src[g];
      }
      if (ir < mc) {
        const std::int64_t rows = mc - ir;
        for (std::int64_t r = 0; r < mr; ++r) dst[r] = r < rows ? src[r] : 0.0f;
      }
    }
    return;
  }
  // An A stored [M,K] is read 8 values of k from each of 8 rows at a time and transposed in
  // registers (a scalar gather of 12 strided rows cost a tenth of the transformer's GEMM time).
  for (std::int64_t ir = 0; ir < mc; ir += mr, out += kc * mr) {
    const std::int64_t rows = std::min(mr, mc - ir), i = i0 + ir;
    std::int64_t p = 0;
    for (; p + 8 <= kc; p += 8)
      for (std::int64_t g = 0; g < mr; g += 8) {
        const std::int64_t n = std::clamp<std::int64_t>(rows - g, 0, std::min<std::int64_t>(8, mr - g));
        __m256 t[8];
        for (int r = 0; r < 8; ++r) t[r] = r < n ? _mm256_loadu_ps(a.p + (i + g + r) * a.ld + p0 + p) : _mm256_setzero_ps();
        transpose8(t);
        const std::int64_t width = std::min<std::int64_t>(8, mr - g);
        const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(width)),
                                                _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (int q = 0; q < 8; ++q) _mm256_maskstore_ps(out + (p + q) * mr + g, mask, t[q]);
      }
    for (; p < kc; ++p) {
      float* dst = out + p * mr;
      for (std::int64_t r = 0; r < rows; ++r) dst[r] = a.p[(i + r) * a.ld + p0 + p];
      std::fill(dst + rows, dst + mr, 0.0f);
    }
  }
}

// k in [p0, p0+kc) and columns [j0, j0+nc) of op(B) into panels of nr columns, k-major,
// zero-padded. A B stored [N,K] is transposed 8x8 at a time on the way.
__attribute__((target("avx2,fma"))) void pack_b(const Operand& b, std::int64_t nr, std::int64_t p0, std::int64_t kc,
                                                std::int64_t j0, std::int64_t nc, float* out) {
  for (std::int64_t jp = 0; jp < nc; jp += nr, out += kc * nr) {
    const std::int64_t cols = std::min(nr, nc - jp), j = j0 + jp;
    if (!b.transposed) {
      for (std::int64_t p = 0; p < kc; ++p) {
        const float* src = b.p + (p0 + p) * b.ld + j;
        float* dst = out + p * nr;
        if (cols == nr) {
          for (std::int64_t g = 0; g < nr; g += 8) _mm256_store_ps(dst + g, _mm256_loadu_ps(src + g));
        } else {
          std::copy(src, src + cols, dst);
          std::fill(dst + cols, dst + nr, 0.0f);
        }
      }
      continue;
    }
    std::int64_t p = 0;
    if (cols == nr)
      for (; p + 8 <= kc; p += 8)
        for (std::int64_t g = 0; g < nr; g += 8) {
          __m256 t[8];
          for (int i = 0; i < 8; ++i) t[i] = _mm256_loadu_ps(b.p + (j + g + i) * b.ld + p0 + p);
          transpose8(t);
          for (int i = 0; i < 8; ++i) _mm256_store_ps(out + (p + i) * nr + g, t[i]);
        }
    for (; p < kc; ++p) {
      float* dst = out + p * nr;
      for (std::int64_t c = 0; c < cols; ++c) dst[c] = b.p[(j + c) * b.ld + p0 + p];
      std::fill(dst + cols, dst + nr, 0.0f);
    }
  }
}

float* aligned(std::vector<float>& buf, std::int64_t floats) {
  buf.resize(static_cast<std::size_t>(floats + 16));
  auto addr = reinterpret_cast<std::uintptr_t>(buf.data());
  return reinterpret_cast<float*>((addr + 63) & ~std::uintptr_t{63});
}

// K in blocks of equal size (a multiple of 8, at most kKc): 784 is 200+200+200+184, not
// 256+256+256+16, whose last block would reload and store all of C for 16 products.
std::int64_t k_block(std::int64_t k) { return std::min(k, ceil_div(ceil_div(k, ceil_div(k, kKc)), 8) * 8); }

// All of op(B) in the packed-B cache's layout (packed_b_cache.h); with block = k_block(k) and the
// tile's nr, as product_part packs it.
void pack_all_of_b(const Operand& b, std::int64_t nr, std::int64_t block, std::int64_t k, std::int64_t n, float* out) {
  const std::int64_t width = ceil_div(n, nr) * nr;
  for (std::int64_t p0 = 0; p0 < k; p0 += block) pack_b(b, nr, p0, std::min(block, k - p0), 0, n, out + p0 * width);
}

// C rows [m0, m1) and columns [n0, n1) of one matrix of the batch. `packed`: all of B packed
// by pack_all_of_b (`packed_width` columns), or null.
void product_part(const Tile& tl, const Operand& a, const Operand& b, float* c, std::int64_t ldc, std::int64_t k,
                  std::int64_t m0, std::int64_t m1, std::int64_t n0, std::int64_t n1, const float* bias,
                  const float* packed, std::int64_t packed_width) {
  thread_local std::vector<float> a_buf, b_buf;
  const std::int64_t nc = n1 - n0, mr = tl.mr, nr = tl.nr;
  const std::int64_t block = k_block(k);
  float* pb = packed ? nullptr : aligned(b_buf, block * ceil_div(nc, nr) * nr);
  float* pa = aligned(a_buf, block * ceil_div(std::min(kMc, m1 - m0), mr) * mr);
  // The full panels of a B stored [K,N] are read in place by the first tile that needs them,
  // which packs them for the rest (see TileAvx2). A B stored [N,K] is transposed into panels
  // first, and so is a partial last panel of columns, zero-padded. An A stored [M,K] is read in
  // place (where the tile does) but for a partial last tile of rows; an A stored [K,M] is packed.
  const std::int64_t full = b.transposed || packed ? 0 : nc / nr * nr;
  const bool a_direct = tl.direct_a && !a.transposed;
  for (std::int64_t p0 = 0; p0 < k; p0 += block) {
    const std::int64_t kc = std::min(block, k - p0);
    const bool first = p0 == 0, last = p0 + kc == k;
    // This part's panels: packed before (its columns start at panel n0 / nr), or packed here.
    const float* panels = packed ? packed + p0 * packed_width + n0 * kc : pb;
    if (!packed) pack_b(b, nr, p0, kc, n0 + full, nc - full, pb + full * kc);
    for (std::int64_t i0 = m0; i0 < m1; i0 += kMc) {
      const std::int64_t mc = std::min(kMc, m1 - i0);
      const std::int64_t direct_rows = a_direct ? mc / mr * mr : 0;
      if (direct_rows < mc) pack_a(a, mr, i0 + direct_rows, mc - direct_rows, p0, kc, pa + direct_rows * kc);
      for (std::int64_t jp = 0; jp < nc; jp += nr) {
        const std::int64_t cols = std::min(nr, nc - jp);
        const float* tile_bias = bias && last ? bias + n0 + jp : nullptr;
        for (std::int64_t ip = 0; ip < mc; ip += mr) {
          const bool b_in_place = jp < full && i0 == m0 && ip == 0, a_in_place = ip < direct_rows;
          const float* panel_b = b_in_place ? b.p + p0 * b.ld + n0 + jp : panels + jp * kc;
          const std::int64_t ldb = b_in_place ? b.ld : nr;
          float* pack = b_in_place ? pb + jp * kc : nullptr;
          const float* panel_a = a_in_place ? a.p + (i0 + ip) * a.ld + p0 : pa + ip * kc;
          const std::int64_t rows = std::min(mr, mc - ip);
          float* tc = c + (i0 + ip) * ldc + n0 + jp;
          const std::size_t v = variant(first, last, b_in_place, a_in_place);
          const TileFn exact = cols == nr ? tl.for_rows(rows, v) : nullptr;
          if (exact) exact(kc, panel_a, a.ld, panel_b, ldb, tc, ldc, tile_bias, pack);
          else edge_tile(tl, tl.fn[v], first, kc, panel_a, a.ld, panel_b, ldb, tc, ldc, rows, cols, tile_bias, pack);
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

// The widest tile the CPU runs and EF_ISA allows (EF_ISA=avx2 keeps AVX2's on an AVX-512 CPU).
const Tile& best_tile() {
  static const Tile& t = [] () -> const Tile& {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && vec::kernels().isa == vec::Isa::avx512 ? kTileAvx512 : kTileAvx2;
  }();
  return t;
}

void gemm_chain_with(const Tile& tl, const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                     std::int64_t k, std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias,
                     bool a_transposed, bool b_transposed, const PackedB* packed) {
  const std::int64_t mr = tl.mr, nr = tl.nr;
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
    if (cols >= 4 * nr && cols >= rows) ++n_parts;
    else if (rows >= 4 * mr) ++m_parts;
    else break;
  }
  const std::int64_t rows_per = ceil_div(ceil_div(m, m_parts), mr) * mr;
  const std::int64_t cols_per = ceil_div(ceil_div(n, n_parts), nr) * nr;
  m_parts = ceil_div(m, rows_per);
  n_parts = ceil_div(n, cols_per);
  const std::int64_t tasks = batch * m_parts * n_parts;
  // `packed`: all of B in this tile's layout, kept (one B for every matrix), or null.
  const std::int64_t width = ceil_div(n, nr) * nr;
  const float* panels = packed ? packed->panels : nullptr;
  auto run = [&](std::int64_t t0, std::int64_t t1) {
    for (std::int64_t t = t0; t < t1; ++t) {
      const std::int64_t i = t / (m_parts * n_parts), part = t % (m_parts * n_parts);
      const std::int64_t mp = part / n_parts, np = part % n_parts;
      const Operand oa{a + (a_broadcast ? 0 : i * m * k), a_transposed ? m : k, a_transposed};
      const Operand ob{b + (b_broadcast ? 0 : i * k * n), b_transposed ? k : n, b_transposed};
      product_part(tl, oa, ob, c + i * m * n, n, k, mp * rows_per, std::min(m, (mp + 1) * rows_per), np * cols_per,
                   std::min(n, (np + 1) * cols_per), bias, panels, width);
    }
  };
  parallel_for(tasks, std::max<std::int64_t>(work_of({batch, m, k, n}) / tasks, 1), run, kGemmParallelGrain);
}

}  // namespace

bool gemm_chain_applicable() { return cpu_has_avx2_fma(); }

std::shared_ptr<const PackedB> cached_panels(const std::shared_ptr<Storage>& owner, const float* b, std::int64_t k,
                                             std::int64_t n, std::int64_t nr, std::int64_t block, bool transposed) {
  struct Args {
    Operand b;
    std::int64_t nr, block, k, n;
  } args{{b, transposed ? k : n, transposed}, nr, block, k, n};
  auto pack = [](const void* context, float* out) {
    const auto& a = *static_cast<const Args*>(context);
    pack_all_of_b(a.b, a.nr, a.block, a.k, a.n, out);
  };
  return packed_b(owner, {b, k, n, nr, block, transposed}, k * ceil_div(n, nr) * nr, pack, &args);
}

bool gemm_chain_has_avx512() { return cpu_has_avx2_fma() && &best_tile() == &kTileAvx512; }

namespace {
// AVX-512: 16 columns for at most 16, 64 for a multiple of 64 (a partial 64-column panel
// would compute up to 48 padded columns), else 32.
const Tile& tile_for(std::int64_t n) {
  const Tile& best = best_tile();
  return &best != &kTileAvx512 ? best : n <= 16 ? kTileAvx512Narrow : n % 64 == 0 ? kTileAvx512Wide : best;
}

// B's panels in `tile`'s layout from the packed-B cache, where B is one tensor's (one matrix,
// or one shared by the batch) and there is something to multiply; null otherwise.
std::shared_ptr<const PackedB> kept_panels(const Tile& tile, const float* b, std::int64_t batch, std::int64_t m,
                                           std::int64_t k, std::int64_t n, bool b_broadcast, bool b_transposed,
                                           const std::shared_ptr<Storage>* b_owner) {
  if (!b_owner || !*b_owner || !(batch == 1 || b_broadcast) || batch <= 0 || m <= 0 || k <= 0 || n <= 0) return {};
  return cached_panels(*b_owner, b, k, n, tile.nr, k_block(k), b_transposed);
}
}  // namespace

void gemm_chain_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                    std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias, bool a_transposed,
                    bool b_transposed, const std::shared_ptr<Storage>* b_owner) {
  const Tile& tile = tile_for(n);
  const auto packed = kept_panels(tile, b, batch, m, k, n, b_broadcast, b_transposed, b_owner);
  gemm_chain_with(tile, a, b, c, batch, m, k, n, a_broadcast, b_broadcast, bias, a_transposed, b_transposed,
                  packed.get());
}

bool gemm_chain_f32_few_rows(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                             std::int64_t k, std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias,
                             bool a_transposed, bool b_transposed, const std::shared_ptr<Storage>* b_owner) {
  if (m < 2 || !cpu_has_avx2_fma()) return false;
  const Tile& tile = tile_for(n);
  if (&tile != &kTileAvx512Wide) return false;  // 12-row tiles would compute padded rows
  const auto packed = kept_panels(tile, b, batch, m, k, n, b_broadcast, b_transposed, b_owner);
  if (!packed) return false;
  gemm_chain_with(tile, a, b, c, batch, m, k, n, a_broadcast, b_broadcast, bias, a_transposed, b_transposed,
                  packed.get());
  return true;
}

void gemm_chain_f32_avx2(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                         std::int64_t k, std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias,
                         bool a_transposed, bool b_transposed) {
  gemm_chain_with(kTileAvx2, a, b, c, batch, m, k, n, a_broadcast, b_broadcast, bias, a_transposed, b_transposed,
                  nullptr);
}

}  // namespace ef::cpu
