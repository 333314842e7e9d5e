#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <list>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/thread_budget.h"
#include "kernels/cpu/dnnl_engine.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"

namespace ef::cpu {
namespace {

// Rows of queries and keys per block: a block's scores (128 KiB backward, 512 KiB forward) stay
// in L2 and each oneDNN call has enough work that its fixed cost is small. Backward: 128 x 256
// (measured against 64..512 x 128..512, all within the noise at seq 4096). Forward: 256 x 512
// (seq 4096: 112 ms against 124 for 128 x 256, 1024: 6.9 against 7.6 ms; 512 x 512 and
// 256 x 1024 no better), half the calls and half the passes over each key block; causal
// attention keeps 128 x 256 (a 256-row diagonal block computes 4x the hidden scores: the
// transformer block of bench/transformer_bench.cpp, causal at seq 256, lost 1.5 ms a step).
constexpr std::int64_t kQueryBlock = 128;
constexpr std::int64_t kKeyBlock = 256;
constexpr std::int64_t kFwdQueryBlock = 256;
constexpr std::int64_t kFwdKeyBlock = 512;

// ---------------------------------------------------------------- block products
// C[m,n] (row stride ldc) = or += op(A)[m,k] op(B)[k,n]; A stored [m,k] with row stride lda,
// or [k,m] when transposed (likewise B). float32 on single-threaded oneDNN matmuls cached per
// geometry and thread (they run inside our parallel loops); float64 on plain loops.
using GemmKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool,
                           bool, bool>;

struct BlockGemm {
  dnnl::matmul matmul;
  dnnl::memory a, b, c;
  std::vector<dnnl_exec_arg_t> args;
};

BlockGemm make_block_gemm(const GemmKey& key) {
  auto [m, n, k, lda, ldb, ldc, ta, tb, acc] = key;
  using dt = dnnl::memory::data_type;
  dnnl::engine& eng = dnnl_engine();
  dnnl::memory::desc a_md({m, k}, dt::f32, ta ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
  dnnl::memory::desc b_md({k, n}, dt::f32, tb ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
  dnnl::memory::desc c_md({m, n}, dt::f32, dnnl::memory::dims{ldc, 1});
  dnnl::primitive_attr attr;
  if (acc) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, eng);
  void* none = DNNL_MEMORY_NONE;
  BlockGemm g{dnnl::matmul(pd), dnnl::memory(a_md, eng, none), dnnl::memory(b_md, eng, none),
              dnnl::memory(c_md, eng, none), {}};
  g.args = {{DNNL_ARG_SRC, g.a.get()}, {DNNL_ARG_WEIGHTS, g.b.get()}, {DNNL_ARG_DST, g.c.get()}};
  return g;
}

struct BlockGemmCache {
  std::list<std::pair<GemmKey, BlockGemm>> lru;
  std::map<GemmKey, std::list<std::pair<GemmKey, BlockGemm>>::iterator> index;
  BlockGemm& get(const GemmKey& key) {
    auto it = index.find(key);
    if (it != index.end()) {
      lru.splice(lru.begin(), lru, it->second);
      return it->second->second;
    }
    lru.emplace_front(key, make_block_gemm(key));
    index[key] = lru.begin();
    if (lru.size() > 48) {
      index.erase(lru.back().first);
      lru.pop_back();
    }
    return lru.front().second;
  }
};

void block_gemm(const float* a, std::int64_t lda, bool ta, const float* b, std::int64_t ldb, bool tb, float* c,
                std::int64_t ldc, std::int64_t m, std::int64_t n, std::int64_t k, bool acc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!acc)
      for (std::int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  thread_local BlockGemmCache cache;
  detail::sync_omp_threads(1);  // one thread per block product: the parallelism is ours
  BlockGemm& g = cache.get(GemmKey{m, n, k, lda, ldb, ldc, ta, tb, acc});
  g.a.set_data_handle(const_cast<float*>(a));
  g.b.set_data_handle(const_cast<float*>(b));
  g.c.set_data_handle(c);
  dnnl_execute(g.matmul, g.args, "scaled_dot_product_attention");
  dnnl_wait();
}

void block_gemm(const double* a, std::int64_t lda, bool ta, const double* b, std::int64_t ldb, bool tb, double* c,
                std::int64_t ldc, std::int64_t m, std::int64_t n, std::int64_t k, bool acc) {
  for (std::int64_t i = 0; i < m; ++i) {
    double* row = c + i * ldc;
    if (!acc) std::fill(row, row + n, 0.0);
    for (std::int64_t p = 0; p < k; ++p) {
      double av = ta ? a[p * lda + i] : a[i * lda + p];
      if (av == 0.0) continue;
      for (std::int64_t j = 0; j < n; ++j) row[j] += av * (tb ? b[j * ldb + p] : b[p * ldb + j]);
    }
  }
}

void exp_row(float* x, std::int64_t n) { vec::kernels().unary_f32(UnaryKind::exp, x, x, n); }
void exp_row(double* x, std::int64_t n) { vec::kernels().unary_f64(UnaryKind::exp, x, x, n); }

// ---------------------------------------------------------------- dropout
inline std::uint64_t mix(std::uint64_t z) {  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// Whether element `flat` ((bh * Sq + i) * Sk + j) survives dropout.
inline bool kept(const AttentionConfig& cfg, std::uint64_t flat) {
  std::uint64_t h = mix(cfg.seed * 0x9e3779b97f4a7c15ULL + mix(flat + 0x632be59bd9b4e019ULL));
  double u = static_cast<double>(h >> 11) * 0x1.0p-53;
  return u >= cfg.dropout;
}

// ---------------------------------------------------------------- block helpers
// Elementwise work on a block of `rows` x `cols` held with row stride `ld`, on ef's vector
// kernels (the library itself is compiled for baseline x86-64; these pick AVX2/AVX-512).
void binary_rows(BinaryKind k, float* a, std::int64_t ld, const float* b, std::int64_t b_ld, std::int64_t b_step,
                 std::int64_t rows, std::int64_t cols) {
  const auto& vk = vec::kernels();
  if (cols == ld && (b_step == 0 ? true : b_ld == ld)) {
    vk.binary_f32(k, a, cols, 1, b, b_ld, b_step, a, rows, cols);
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) vk.binary_f32(k, a + r * ld, 0, 1, b + r * b_ld, 0, b_step, a + r * ld, 1, cols);
}
void binary_rows(BinaryKind k, double* a, std::int64_t ld, const double* b, std::int64_t b_ld, std::int64_t b_step,
                 std::int64_t rows, std::int64_t cols) {
  const auto& vk = vec::kernels();
  for (std::int64_t r = 0; r < rows; ++r) vk.binary_f64(k, a + r * ld, 0, 1, b + r * b_ld, 0, b_step, a + r * ld, 1, cols);
}
template <class T>
void exp_rows(T* a, std::int64_t ld, std::int64_t rows, std::int64_t cols) {
  if (cols == ld) {
    exp_row(a, rows * cols);
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r) exp_row(a + r * ld, cols);
}
float row_max(const float* x, std::int64_t n) { return vec::kernels().max_f32(x, n); }
double row_max(const double* x, std::int64_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
// Compiled for AVX-512 and AVX2 beside the baseline, chosen at load time (the library itself is
// built for baseline x86-64). The choice is an ifunc, resolved by the dynamic loader before
// ThreadSanitizer's runtime starts, which crashes a TSan build at load: there, baseline only.
#if defined(__SANITIZE_THREAD__)
#define EF_ISA_CLONES
#else
#define EF_ISA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
// 32 partial sums, so the loop vectorizes without -ffast-math.
EF_ISA_CLONES float row_sum(const float* x, std::int64_t n) {
  float acc[32] = {};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int j = 0; j < 32; ++j) acc[j] += x[i + j];
  float s = 0;
  for (; i < n; ++i) s += x[i];
  for (int j = 0; j < 32; ++j) s += acc[j];
  return s;
}
double row_sum(const double* x, std::int64_t n) {
  double s = 0;
  for (std::int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

// ---------------------------------------------------------------- fused AVX-512 passes
// The softmax passes over a block of scores, fused: exp(s - m) with each row's sum in one pass
// (forward), exp(s - lse) in one pass (backward), instead of a subtraction, an exp and a sum
// each reading the block. The same SLEEF exp as ef's vector kernels (vec::kernels().unary_f32)
// and the same summation order as row_sum above, so the numbers are bit-identical to the
// unfused passes. Used where ef's kernels run AVX-512 (EF_ISA can cap that); elsewhere the
// unfused passes run. A target pragma, not target_clones: no ifunc, so ThreadSanitizer is fine.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EF_ATTENTION_AVX512 1
#pragma GCC push_options
#pragma GCC target("avx512f")
extern "C" __m512 Sleef_expf16_u10avx512f(__m512);

// s[r * ld + c] = exp(s[r * ld + c] - m[r]) for c < cols; sums[r] = the row's sum in row_sum's
// order (32 running lanes, the tail added first, then the lanes in order). A row with m[r] =
// -inf (nothing visible yet) becomes zeros with sum 0.
void exp_sub_sum_rows_avx512(float* s, std::int64_t ld, const float* m, std::int64_t rows, std::int64_t cols,
                             float* sums) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = s + r * ld;
    if (m[r] == -std::numeric_limits<float>::infinity()) {
      std::fill(row, row + cols, 0.0f);
      sums[r] = 0.0f;
      continue;
    }
    const __m512 mv = _mm512_set1_ps(m[r]);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    std::int64_t c = 0;
    for (; c + 32 <= cols; c += 32) {
      __m512 e0 = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_loadu_ps(row + c), mv));
      __m512 e1 = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_loadu_ps(row + c + 16), mv));
      _mm512_storeu_ps(row + c, e0);
      _mm512_storeu_ps(row + c + 16, e1);
      acc0 = _mm512_add_ps(acc0, e0);
      acc1 = _mm512_add_ps(acc1, e1);
    }
    float tail = 0.0f;
    for (; c < cols; c += 16) {
      const std::int64_t n = std::min<std::int64_t>(16, cols - c);
      const __mmask16 k = static_cast<__mmask16>((1u << n) - 1u);
      __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + c), mv));
      _mm512_mask_storeu_ps(row + c, k, e);
      for (std::int64_t i = 0; i < n; ++i) tail += row[c + i];
    }
    alignas(64) float lanes[32];
    _mm512_store_ps(lanes, acc0);
    _mm512_store_ps(lanes + 16, acc1);
    for (int j = 0; j < 32; ++j) tail += lanes[j];
    sums[r] = tail;
  }
}

// st[c * ld + r] = exp(st[c * ld + r] - sub[r]) for c < cols, r < rows (a transposed block).
void exp_sub_cols_avx512(float* st, std::int64_t ld, const float* sub, std::int64_t cols, std::int64_t rows) {
  for (std::int64_t c = 0; c < cols; ++c) {
    float* row = st + c * ld;
    std::int64_t r = 0;
    for (; r + 16 <= rows; r += 16)
      _mm512_storeu_ps(row + r, Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_loadu_ps(row + r), _mm512_loadu_ps(sub + r))));
    if (r < rows) {
      const __mmask16 k = static_cast<__mmask16>((1u << (rows - r)) - 1u);
      __m512 x = _mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + r), _mm512_maskz_loadu_ps(k, sub + r));
      _mm512_mask_storeu_ps(row + r, k, Sleef_expf16_u10avx512f(x));
    }
  }
}
#pragma GCC pop_options
#endif

bool fused_avx512() {
#if defined(EF_ATTENTION_AVX512)
  static const bool on = vec::kernels().isa == vec::Isa::avx512;
  return on;
#else
  return false;
#endif
}

// Forward: s = exp(s - m) row by row, sums[r] = row_sum of the result (rows with m = -inf: 0).
void exp_sub_sum_rows(float* s, std::int64_t ld, const float* m, std::int64_t rows, std::int64_t cols, float* sums) {
#if defined(EF_ATTENTION_AVX512)
  if (fused_avx512()) return exp_sub_sum_rows_avx512(s, ld, m, rows, cols, sums);
#endif
  binary_rows(BinaryKind::sub, s, ld, m, 1, 0, rows, cols);
  exp_rows(s, ld, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = s + r * ld;
    if (m[r] == -std::numeric_limits<float>::infinity()) std::fill(row, row + cols, 0.0f);
    sums[r] = row_sum(row, cols);
  }
}
void exp_sub_sum_rows(double* s, std::int64_t ld, const double* m, std::int64_t rows, std::int64_t cols, double* sums) {
  binary_rows(BinaryKind::sub, s, ld, m, 1, 0, rows, cols);
  exp_rows(s, ld, rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    double* row = s + r * ld;
    if (m[r] == -std::numeric_limits<double>::infinity()) std::fill(row, row + cols, 0.0);
    sums[r] = row_sum(row, cols);
  }
}
// Backward, transposed blocks: st[c * ld + r] = exp(st[c * ld + r] - sub[r]).
void exp_sub_cols(float* st, std::int64_t ld, const float* sub, std::int64_t cols, std::int64_t rows) {
#if defined(EF_ATTENTION_AVX512)
  if (fused_avx512()) return exp_sub_cols_avx512(st, ld, sub, cols, rows);
#endif
  binary_rows(BinaryKind::sub, st, ld, sub, 0, 1, cols, rows);
  exp_rows(st, ld, cols, rows);
}
void exp_sub_cols(double* st, std::int64_t ld, const double* sub, std::int64_t cols, std::int64_t rows) {
  binary_rows(BinaryKind::sub, st, ld, sub, 0, 1, cols, rows);
  exp_rows(st, ld, cols, rows);
}
// dS^T = P^T (dP^T - D_i) over a transposed block, in place in dpt: D_i runs along each row.
EF_ISA_CLONES void softmax_grad_cols(
    float* dpt, const float* pt, std::int64_t ld, const float* di, std::int64_t cols, std::int64_t rows) {
  for (std::int64_t c = 0; c < cols; ++c) {
    float* d = dpt + c * ld;
    const float* p = pt + c * ld;
    for (std::int64_t r = 0; r < rows; ++r) d[r] = p[r] * (d[r] - di[r]);
  }
}
void softmax_grad_cols(double* dpt, const double* pt, std::int64_t ld, const double* di, std::int64_t cols,
                       std::int64_t rows) {
  for (std::int64_t c = 0; c < cols; ++c)
    for (std::int64_t r = 0; r < rows; ++r) dpt[c * ld + r] = pt[c * ld + r] * (dpt[c * ld + r] - di[r]);
}

// Hides keys in s[r * ld + c] (the scores of queries i0 + r and keys j0 + c) with -inf where
// the mask or causality hides them: a hidden key gets probability 0, and a row that sees no key
// gets zeros (Keras 3's masked softmax zeroes masked positions, so such a row outputs 0).
template <class T>
void hide_keys(T* s, std::int64_t ld, std::int64_t rows, std::int64_t cols, std::int64_t bh, std::int64_t heads,
               std::int64_t i0, std::int64_t j0, const AttentionMask& mask, const AttentionConfig& cfg) {
  const T hidden = -std::numeric_limits<T>::infinity();
  const bool* mrow0 = nullptr;
  if (mask.data) mrow0 = mask.data + (bh / heads) * mask.stride[0] + (bh % heads) * mask.stride[1];
  for (std::int64_t r = 0; r < rows; ++r) {
    T* row = s + r * ld;
    std::int64_t i = i0 + r;
    if (mrow0) {
      const bool* m = mrow0 + i * mask.stride[2] + j0 * mask.stride[3];
      for (std::int64_t c = 0; c < cols; ++c)
        if (!m[c * mask.stride[3]]) row[c] = hidden;
    }
    if (cfg.causal)
      for (std::int64_t c = std::max<std::int64_t>(0, i + 1 - j0); c < cols; ++c) row[c] = hidden;
  }
}

// hide_keys on a transposed block: st[c * ld + r] holds the score of query i0 + r and key j0 + c.
template <class T>
void hide_keys_t(T* st, std::int64_t ld, std::int64_t cols, std::int64_t rows, std::int64_t bh, std::int64_t heads,
                 std::int64_t i0, std::int64_t j0, const AttentionMask& mask, const AttentionConfig& cfg) {
  const T hidden = -std::numeric_limits<T>::infinity();
  const bool* m0 = nullptr;
  if (mask.data) m0 = mask.data + (bh / heads) * mask.stride[0] + (bh % heads) * mask.stride[1];
  for (std::int64_t c = 0; c < cols; ++c) {
    T* row = st + c * ld;
    std::int64_t j = j0 + c;
    if (m0) {
      const bool* m = m0 + i0 * mask.stride[2] + j * mask.stride[3];
      for (std::int64_t r = 0; r < rows; ++r)
        if (!m[r * mask.stride[2]]) row[r] = hidden;
    }
    if (cfg.causal)  // query i0 + r sees key j only when j <= i0 + r
      for (std::int64_t r = 0; r < std::min(rows, j - i0); ++r) row[r] = hidden;
  }
}

template <class T>
struct Scratch {
  std::vector<T> s, p, acc, m, l, alpha, dvec, qs;
};
template <class T>
Scratch<T>& scratch() {
  thread_local Scratch<T> sc;
  return sc;
}

// The last key (exclusive) that rows [i0, i0 + rows) may see: causality skips whole blocks.
std::int64_t key_end(const AttentionConfig& cfg, std::int64_t i0, std::int64_t rows, std::int64_t k_len) {
  return cfg.causal ? std::min(k_len, i0 + rows) : k_len;
}

// q rows scaled (as Keras scales the query before the product), gathered contiguous:
// dst[r * dim + e] = scale * src[r * stride + e].
template <class T>
void scale_rows(const T* src, std::int64_t stride, T* dst, std::int64_t rows, std::int64_t dim, T scale) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t e = 0; e < dim; ++e) dst[r * dim + e] = src[r * stride + e] * scale;
}

}  // namespace

template <class T>
void attention_forward(const T* q, const T* k, const T* v, const AttentionMask& mask, const AttentionConfig& cfg,
                       const AttentionDims& d, T* out, T* lse) {
  const std::int64_t BH = d.batch * d.heads, D = d.head_dim, Dv = d.value_dim;
  // Causal: the smaller blocks, whose diagonal blocks compute fewer hidden scores.
  const std::int64_t qb = cfg.causal ? kQueryBlock : kFwdQueryBlock, kb = cfg.causal ? kKeyBlock : kFwdKeyBlock;
  const std::int64_t q_blocks = (d.q_len + qb - 1) / qb;
  const std::int64_t units = BH * q_blocks;
  const T inv_keep = cfg.dropout > 0 ? static_cast<T>(1.0 / (1.0 - cfg.dropout)) : T(1);
  const T scale = static_cast<T>(cfg.scale);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const std::int64_t cost = std::max<std::int64_t>(1, qb * d.k_len * (D + Dv));
  const std::int64_t qst = d.row_stride(D), kst = d.row_stride(D), vst = d.row_stride(Dv);  // out rows: vst too
  parallel_for(units, cost, [&](std::int64_t ub, std::int64_t ue) {
    Scratch<T>& sc = scratch<T>();
    sc.s.resize(static_cast<std::size_t>(qb * kb));
    sc.acc.resize(static_cast<std::size_t>(qb * std::max<std::int64_t>(Dv, 1)));
    sc.qs.resize(static_cast<std::size_t>(qb * std::max<std::int64_t>(D, 1)));
    sc.m.resize(qb);
    sc.l.resize(qb);
    sc.alpha.resize(qb);
    sc.dvec.resize(qb);
    T* s = sc.s.data();
    T* sums = sc.dvec.data();
    T* acc = sc.acc.data();
    T* m = sc.m.data();
    T* l = sc.l.data();
    T* alpha = sc.alpha.data();
    for (std::int64_t u = ub; u < ue; ++u) {
      std::int64_t bh = u / q_blocks, i0 = (u % q_blocks) * qb;
      std::int64_t rows = std::min(qb, d.q_len - i0);
      scale_rows(q + d.head_offset(bh, d.q_len, D) + i0 * qst, qst, sc.qs.data(), rows, D, scale);
      const T* kh = k + d.head_offset(bh, d.k_len, D);
      const T* vh = v + d.head_offset(bh, d.k_len, Dv);
      std::fill(m, m + rows, neg_inf);
      std::fill(l, l + rows, T(0));
      std::fill(acc, acc + rows * Dv, T(0));
      std::int64_t kend = key_end(cfg, i0, rows, d.k_len);
      for (std::int64_t j0 = 0; j0 < kend; j0 += kb) {
        std::int64_t cols = std::min(kb, kend - j0);
        block_gemm(sc.qs.data(), D, false, kh + j0 * kst, kst, true, s, kb, rows, cols, D, false);
        bool hides = mask.data || (cfg.causal && j0 + cols > i0 + 1);
        if (hides) hide_keys(s, kb, rows, cols, bh, d.heads, i0, j0, mask, cfg);
        // Online softmax: the new running max, the factor that rescales what came before.
        bool rescale = false;
        for (std::int64_t r = 0; r < rows; ++r) {
          T mx = std::max(m[r], row_max(s + r * kb, cols));
          if (mx == neg_inf) {  // nothing visible yet in this row: its probabilities stay 0
            alpha[r] = T(1);
            continue;
          }
          alpha[r] = std::exp(m[r] - mx);
          rescale |= alpha[r] != T(1);
          m[r] = mx;
        }
        // exp(s - max) and each row's sum, in one pass (a row that sees nothing yet: zeros).
        exp_sub_sum_rows(s, kb, m, rows, cols, sums);
        for (std::int64_t r = 0; r < rows; ++r) {
          T* row = s + r * kb;
          l[r] = l[r] * alpha[r] + sums[r];
          if (cfg.dropout > 0) {
            std::uint64_t base = static_cast<std::uint64_t>((bh * d.q_len + i0 + r) * d.k_len + j0);
            for (std::int64_t c = 0; c < cols; ++c)
              row[c] = kept(cfg, base + static_cast<std::uint64_t>(c)) ? row[c] * inv_keep : T(0);
          }
        }
        if (rescale) binary_rows(BinaryKind::mul, acc, Dv, alpha, 1, 0, rows, Dv);
        block_gemm(s, kb, false, vh + j0 * vst, vst, false, acc, Dv, rows, Dv, cols, true);
      }
      for (std::int64_t r = 0; r < rows; ++r) {
        T* o = out + d.head_offset(bh, d.q_len, Dv) + (i0 + r) * vst;
        T inv = l[r] > T(0) ? T(1) / l[r] : T(0);
        for (std::int64_t e = 0; e < Dv; ++e) o[e] = acc[r * Dv + e] * inv;
        lse[bh * d.q_len + i0 + r] = l[r] > T(0) ? m[r] + std::log(l[r]) : neg_inf;
      }
    }
  });
}

template <class T>
void attention_backward(const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout, const T* dlse,
                        const AttentionMask& mask, const AttentionConfig& cfg, const AttentionDims& d, T* dq, T* dk,
                        T* dv) {
  const std::int64_t BH = d.batch * d.heads, D = d.head_dim, Dv = d.value_dim;
  const T inv_keep = cfg.dropout > 0 ? static_cast<T>(1.0 / (1.0 - cfg.dropout)) : T(1);
  const T scale = static_cast<T>(cfg.scale);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  const std::int64_t cost = std::max<std::int64_t>(1, d.q_len * d.k_len * (2 * D + 3 * Dv));
  const std::int64_t kst = d.row_stride(D), vst = d.row_stride(Dv);  // q, k, dq, dk: kst; v, out, dout, dv: vst
  const std::int64_t ldt = kQueryBlock;  // row length of the transposed blocks: one key per row
  // One head per unit: dq of a head gathers over all key blocks, dk/dv over all query blocks,
  // so a head is one thread's and nothing is shared.
  //
  // The blocks are held transposed, a key per row ([keys, queries]): S^T = K (scale Q)^T, P^T,
  // dP^T = V dO^T and dS^T. Then dV += P^T dO and dK += dS^T (scale Q) read their left operand
  // row-major, and dQ^T += K^T dS^T gathers dq transposed (written out once per head). oneDNN's
  // matmul with a transposed left operand (what P^T dO and dS^T Q are in the [queries, keys]
  // form) ran at ~145 GFLOPS against ~185 for the row-major one on this machine's AVX-512
  // (128 x 256 x 64 blocks); the transposed form has no such product.
  parallel_for(BH, cost, [&](std::int64_t hb, std::int64_t he) {
    Scratch<T>& sc = scratch<T>();
    sc.s.resize(static_cast<std::size_t>(kKeyBlock * ldt));
    sc.p.resize(static_cast<std::size_t>(kKeyBlock * ldt));
    sc.dvec.resize(static_cast<std::size_t>(std::max<std::int64_t>(d.q_len, 1)));
    sc.qs.resize(static_cast<std::size_t>(std::max<std::int64_t>(d.q_len * D, 1)));
    sc.acc.resize(static_cast<std::size_t>(std::max<std::int64_t>(d.q_len * D, 1)));
    sc.m.resize(static_cast<std::size_t>(std::max<std::int64_t>(d.q_len, 1)));
    T* st = sc.s.data();   // probabilities P^T
    T* dpt = sc.p.data();  // dropped probabilities, then dP^T, then dS^T
    T* qs = sc.qs.data();  // the head's queries, scaled
    T* dqt = sc.acc.data();  // the head's dq, transposed [D, q_len], unscaled
    T* lsafe = sc.m.data();  // lse, with 0 where a row sees no key (its probabilities are 0 anyway)
    for (std::int64_t bh = hb; bh < he; ++bh) {
      const T* kh = k + d.head_offset(bh, d.k_len, D);
      const T* vh = v + d.head_offset(bh, d.k_len, Dv);
      const T* oh = out + d.head_offset(bh, d.q_len, Dv);
      const T* doh = dout + d.head_offset(bh, d.q_len, Dv);
      const T* lh = lse + bh * d.q_len;
      T* dqh = dq + d.head_offset(bh, d.q_len, D);
      T* dkh = dk + d.head_offset(bh, d.k_len, D);
      T* dvh = dv + d.head_offset(bh, d.k_len, Dv);
      scale_rows(q + d.head_offset(bh, d.q_len, D), kst, qs, d.q_len, D, scale);
      std::fill(dqt, dqt + d.q_len * D, T(0));
      for (std::int64_t j = 0; j < d.k_len; ++j) {
        std::fill(dkh + j * kst, dkh + j * kst + D, T(0));
        std::fill(dvh + j * vst, dvh + j * vst + Dv, T(0));
      }
      // D_i = dO_i . O_i - dlse_i: the row term of softmax's gradient (with the logsumexp's own).
      for (std::int64_t i = 0; i < d.q_len; ++i) {
        T acc = 0;
        for (std::int64_t e = 0; e < Dv; ++e) acc += doh[i * vst + e] * oh[i * vst + e];
        sc.dvec[i] = acc - (dlse ? dlse[bh * d.q_len + i] : T(0));
        lsafe[i] = lh[i] == neg_inf ? T(0) : lh[i];
      }
      for (std::int64_t j0 = 0; j0 < d.k_len; j0 += kKeyBlock) {
        std::int64_t cols = std::min(kKeyBlock, d.k_len - j0);  // keys: the rows of the transposed blocks
        std::int64_t first_row = cfg.causal ? j0 : 0;  // earlier queries see none of these keys
        for (std::int64_t i0 = first_row; i0 < d.q_len; i0 += kQueryBlock) {
          std::int64_t rows = std::min(kQueryBlock, d.q_len - i0);  // queries: the columns
          // S^T = K (scale Q)^T
          block_gemm(kh + j0 * kst, kst, false, qs + i0 * D, D, true, st, ldt, cols, rows, D, false);
          if (mask.data || (cfg.causal && j0 + cols > i0 + 1))
            hide_keys_t(st, ldt, cols, rows, bh, d.heads, i0, j0, mask, cfg);
          // P^T = exp(S^T - lse): the forward's probabilities, recomputed.
          exp_sub_cols(st, ldt, lsafe + i0, cols, rows);
          const T* pd = st;  // the probabilities that multiplied V
          if (cfg.dropout > 0) {
            for (std::int64_t c = 0; c < cols; ++c)
              for (std::int64_t r = 0; r < rows; ++r) {
                std::uint64_t flat = static_cast<std::uint64_t>((bh * d.q_len + i0 + r) * d.k_len + j0 + c);
                dpt[c * ldt + r] = kept(cfg, flat) ? st[c * ldt + r] * inv_keep : T(0);
              }
            pd = dpt;
          }
          // dV += Pd^T dO
          block_gemm(pd, ldt, false, doh + i0 * vst, vst, false, dvh + j0 * vst, vst, cols, Dv, rows, true);
          // dP^T = V dO^T (dropout: through the kept mask), then dS^T = P^T (dP^T - D_i)
          block_gemm(vh + j0 * vst, vst, false, doh + i0 * vst, vst, true, dpt, ldt, cols, rows, Dv, false);
          if (cfg.dropout > 0)
            for (std::int64_t c = 0; c < cols; ++c)
              for (std::int64_t r = 0; r < rows; ++r) {
                std::uint64_t flat = static_cast<std::uint64_t>((bh * d.q_len + i0 + r) * d.k_len + j0 + c);
                dpt[c * ldt + r] = kept(cfg, flat) ? dpt[c * ldt + r] * inv_keep : T(0);
              }
          softmax_grad_cols(dpt, st, ldt, sc.dvec.data() + i0, cols, rows);
          // dK += dS^T (scale Q);  dQ^T += K^T dS^T (scaled once at the end)
          block_gemm(dpt, ldt, false, qs + i0 * D, D, false, dkh + j0 * kst, kst, cols, D, rows, true);
          block_gemm(kh + j0 * kst, kst, true, dpt, ldt, false, dqt + i0, d.q_len, D, rows, cols, true);
        }
      }
      for (std::int64_t i = 0; i < d.q_len; ++i)
        for (std::int64_t e = 0; e < D; ++e) dqh[i * kst + e] = dqt[e * d.q_len + i] * scale;
    }
  });
}

template void attention_forward<float>(const float*, const float*, const float*, const AttentionMask&,
                                       const AttentionConfig&, const AttentionDims&, float*, float*);
template void attention_forward<double>(const double*, const double*, const double*, const AttentionMask&,
                                        const AttentionConfig&, const AttentionDims&, double*, double*);
template void attention_backward<float>(const float*, const float*, const float*, const float*, const float*,
                                        const float*, const float*, const AttentionMask&, const AttentionConfig&,
                                        const AttentionDims&, float*, float*, float*);
template void attention_backward<double>(const double*, const double*, const double*, const double*, const double*,
                                         const double*, const double*, const AttentionMask&, const AttentionConfig&,
                                         const AttentionDims&, double*, double*, double*);

}  // namespace ef::cpu
