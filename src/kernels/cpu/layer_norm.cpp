// Layer normalization kernels: one pass over each row forward (mean, variance, normalize, scale,
// shift) and one backward (dx from two row sums; dgamma and dbeta from per-block partial sums
// added in block order, so the thread count never changes a bit).
#include "kernels/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/cpu/parallel.h"

namespace ef::cpu {
namespace {

// Rows per block of the backward's partial sums: fixed, so blocks (and sums) do not depend on
// the thread count.
constexpr std::int64_t kRowBlock = 32;

// Compiled for AVX-512 and AVX2 beside the baseline, chosen at load time (as the attention
// kernels); baseline only under ThreadSanitizer, whose runtime starts after ifuncs resolve.
#if defined(__SANITIZE_THREAD__)
#define EF_LN_CLONES
#else
#define EF_LN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#define EF_LN_INLINE [[gnu::always_inline]] inline

// 32 partial sums, so the loops vectorize without -ffast-math.
template <class T, class F>
EF_LN_INLINE T row_sum(std::int64_t n, F&& term) {
  T acc[32] = {};
  std::int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int j = 0; j < 32; ++j) acc[j] += term(i + j);
  T s = 0;
  for (; i < n; ++i) s += term(i);
  for (int j = 0; j < 32; ++j) s += acc[j];
  return s;
}

template <class T>
EF_LN_INLINE void forward_rows(const T* x, const T* gamma, const T* beta, T eps, std::int64_t r0, std::int64_t r1,
                               std::int64_t cols, T* y, T* mean, T* rstd) {
  const T n = static_cast<T>(cols);
  for (std::int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const T m = row_sum<T>(cols, [&](std::int64_t c) { return xr[c]; }) / n;
    const T v = row_sum<T>(cols, [&](std::int64_t c) { T d = xr[c] - m; return d * d; }) / n;
    const T rs = T(1) / std::sqrt(v + eps);
    for (std::int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - m) * rs * gamma[c] + beta[c];
    mean[r] = m;
    rstd[r] = rs;
  }
}

// Rows r0..r1 of dx; their dy xhat and dy summed over the rows into pg, pb (cols each).
template <class T>
EF_LN_INLINE void backward_rows(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy, std::int64_t r0,
                                std::int64_t r1, std::int64_t cols, T* dx, T* pg, T* pb) {
  const T n = static_cast<T>(cols);
  std::fill(pg, pg + cols, T(0));
  std::fill(pb, pb + cols, T(0));
  for (std::int64_t r = r0; r < r1; ++r) {
    const T* xr = x + r * cols;
    const T* dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    const T m = mean[r], rs = rstd[r];
    const T a = row_sum<T>(cols, [&](std::int64_t c) { return dyr[c] * gamma[c]; }) / n;
    const T b = row_sum<T>(cols, [&](std::int64_t c) { return dyr[c] * gamma[c] * ((xr[c] - m) * rs); }) / n;
    // dx, pg and pb are distinct buffers, never the inputs: said so, the loop vectorizes (GCC
    // kept it scalar for the aliasing it could not rule out; most of a transformer's LayerNorm
    // gradient). Each element's arithmetic is the same either way.
#pragma GCC ivdep
    for (std::int64_t c = 0; c < cols; ++c) {
      const T xhat = (xr[c] - m) * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - a - xhat * b);
      pg[c] += dyr[c] * xhat;
      pb[c] += dyr[c];
    }
  }
}

EF_LN_CLONES void forward_rows_f32(const float* x, const float* gamma, const float* beta, float eps, std::int64_t r0,
                                   std::int64_t r1, std::int64_t cols, float* y, float* mean, float* rstd) {
  forward_rows<float>(x, gamma, beta, eps, r0, r1, cols, y, mean, rstd);
}
EF_LN_CLONES void backward_rows_f32(const float* x, const float* gamma, const float* mean, const float* rstd,
                                    const float* dy, std::int64_t r0, std::int64_t r1, std::int64_t cols, float* dx,
                                    float* pg, float* pb) {
  backward_rows<float>(x, gamma, mean, rstd, dy, r0, r1, cols, dx, pg, pb);
}
void forward_rows_any(const float* x, const float* g, const float* b, double eps, std::int64_t r0, std::int64_t r1,
                      std::int64_t cols, float* y, float* m, float* rs) {
  forward_rows_f32(x, g, b, static_cast<float>(eps), r0, r1, cols, y, m, rs);
}
void forward_rows_any(const double* x, const double* g, const double* b, double eps, std::int64_t r0, std::int64_t r1,
                      std::int64_t cols, double* y, double* m, double* rs) {
  forward_rows<double>(x, g, b, eps, r0, r1, cols, y, m, rs);
}
void backward_rows_any(const float* x, const float* g, const float* m, const float* rs, const float* dy,
                       std::int64_t r0, std::int64_t r1, std::int64_t cols, float* dx, float* pg, float* pb) {
  backward_rows_f32(x, g, m, rs, dy, r0, r1, cols, dx, pg, pb);
}
void backward_rows_any(const double* x, const double* g, const double* m, const double* rs, const double* dy,
                       std::int64_t r0, std::int64_t r1, std::int64_t cols, double* dx, double* pg, double* pb) {
  backward_rows<double>(x, g, m, rs, dy, r0, r1, cols, dx, pg, pb);
}

template <class T>
void forward(const T* x, const T* gamma, const T* beta, double eps, std::int64_t rows, std::int64_t cols, T* y,
             T* mean, T* rstd) {
  parallel_for(rows, std::max<std::int64_t>(cols, 1) * 6, [&](std::int64_t r0, std::int64_t r1) {
    forward_rows_any(x, gamma, beta, eps, r0, r1, cols, y, mean, rstd);
  });
}

template <class T>
void backward(const T* x, const T* gamma, const T* mean, const T* rstd, const T* dy, std::int64_t rows,
              std::int64_t cols, T* dx, T* dgamma, T* dbeta) {
  std::int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
  // Per-block partial sums in a buffer kept per calling thread: a replay allocates nothing.
  thread_local std::vector<T> partial;
  std::size_t need = static_cast<std::size_t>(blocks) * static_cast<std::size_t>(cols) * 2;
  if (partial.size() < need) partial.resize(need);
  T* pg = partial.data();
  T* pb = partial.data() + blocks * cols;
  parallel_for(blocks, kRowBlock * std::max<std::int64_t>(cols, 1) * 10, [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t blk = b0; blk < b1; ++blk)
      backward_rows_any(x, gamma, mean, rstd, dy, blk * kRowBlock, std::min(rows, (blk + 1) * kRowBlock), cols, dx,
                        pg + blk * cols, pb + blk * cols);
  });
  // The blocks' sums in block order, in double.
  for (std::int64_t c = 0; c < cols; ++c) {
    double g = 0, b = 0;
    for (std::int64_t blk = 0; blk < blocks; ++blk) {
      g += static_cast<double>(pg[blk * cols + c]);
      b += static_cast<double>(pb[blk * cols + c]);
    }
    dgamma[c] = static_cast<T>(g);
    dbeta[c] = static_cast<T>(b);
  }
}

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, double epsilon, std::int64_t rows,
                        std::int64_t cols, float* y, float* mean, float* rstd) {
  forward(x, gamma, beta, epsilon, rows, cols, y, mean, rstd);
}
void layer_norm_forward(const double* x, const double* gamma, const double* beta, double epsilon, std::int64_t rows,
                        std::int64_t cols, double* y, double* mean, double* rstd) {
  forward(x, gamma, beta, epsilon, rows, cols, y, mean, rstd);
}
void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                         std::int64_t rows, std::int64_t cols, float* dx, float* dgamma, float* dbeta) {
  backward(x, gamma, mean, rstd, dy, rows, cols, dx, dgamma, dbeta);
}
void layer_norm_backward(const double* x, const double* gamma, const double* mean, const double* rstd,
                         const double* dy, std::int64_t rows, std::int64_t cols, double* dx, double* dgamma,
                         double* dbeta) {
  backward(x, gamma, mean, rstd, dy, rows, cols, dx, dgamma, dbeta);
}

}  // namespace ef::cpu
