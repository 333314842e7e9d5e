#pragma once
// Broadcast indexing: for an output position, the element offsets of each input.
#include <array>
#include <cstdint>
#include <vector>

#include "eagerflow/core/shape.h"
#include "kernels/cpu/parallel.h"

namespace ef::cpu {

// Strides of `in` (row-major) laid against `out`'s axes; 0 on broadcast axes.
inline std::vector<std::int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<std::int64_t> strides(static_cast<std::size_t>(out.rank()), 0);
  std::int64_t s = 1;
  for (int i = in.rank() - 1, o = out.rank() - 1; i >= 0; --i, --o) {
    strides[static_cast<std::size_t>(o)] = in[i] == 1 ? 0 : s;
    s *= in[i];
  }
  return strides;
}

// The output's axes with adjacent axes merged where every input walks them alike (all
// contiguous across them, or all broadcasting) and size-1 axes dropped: [60,28,32] + [32]
// becomes 1680 rows of 32. rank is at least 1, or -1 when more axes than kMaxCollapsedRank
// remain.
inline constexpr int kMaxCollapsedRank = 16;
template <std::size_t N>
struct CollapsedBroadcast {
  int rank = 0;
  std::int64_t dims[kMaxCollapsedRank];
  std::int64_t strides[N][kMaxCollapsedRank];
};

template <std::size_t N>
CollapsedBroadcast<N> collapse_broadcast(const Shape& out, const std::array<std::vector<std::int64_t>, N>& strides) {
  CollapsedBroadcast<N> c;
  int& r = c.rank;
  for (int a = 0; a < out.rank(); ++a) {
    if (out[a] == 1) continue;  // size-1 axes move nothing
    bool merge = r > 0;
    for (std::size_t k = 0; k < N && merge; ++k)
      merge = c.strides[k][r - 1] == strides[k][static_cast<std::size_t>(a)] * out[a];
    if (merge) {
      c.dims[r - 1] *= out[a];
      for (std::size_t k = 0; k < N; ++k) c.strides[k][r - 1] = strides[k][static_cast<std::size_t>(a)];
    } else {
      if (r == kMaxCollapsedRank) return CollapsedBroadcast<N>{-1, {}, {}};
      c.dims[r] = out[a];
      for (std::size_t k = 0; k < N; ++k) c.strides[k][r] = strides[k][static_cast<std::size_t>(a)];
      ++r;
    }
  }
  if (r == 0) {  // every axis of size 1 (or a scalar)
    c.dims[0] = 1;
    for (std::size_t k = 0; k < N; ++k) c.strides[k][0] = 0;
    r = 1;
  }
  return c;
}

// Calls fn(out_begin, count, offsets, inner_strides) for runs along the innermost axis.
// Axes are collapsed first (collapse_broadcast) and the row offsets advance like an odometer
// instead of being divided out of the row number.
template <std::size_t N, class Fn>
void for_each_broadcast_row(const Shape& out, const std::array<std::vector<std::int64_t>, N>& strides, Fn&& fn) {
  std::int64_t total = out.num_elements();
  if (total == 0) return;
  if (out.rank() == 0) {
    std::array<std::int64_t, N> off{}, inner{};
    fn(std::int64_t{0}, std::int64_t{1}, off, inner);
    return;
  }
  CollapsedBroadcast<N> c = collapse_broadcast<N>(out, strides);
  if (c.rank < 0) {  // more than kMaxCollapsedRank axes after merging: correct, not fast
    int rank = out.rank();
    parallel_for(total / out[rank - 1], out[rank - 1], [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        std::array<std::int64_t, N> off{}, inner{};
        std::int64_t rem = row;
        for (int a = rank - 2; a >= 0; --a) {
          std::int64_t idx = rem % out[a];
          rem /= out[a];
          for (std::size_t k = 0; k < N; ++k) off[k] += idx * strides[k][static_cast<std::size_t>(a)];
        }
        for (std::size_t k = 0; k < N; ++k) inner[k] = strides[k][static_cast<std::size_t>(rank - 1)];
        fn(row * out[rank - 1], out[rank - 1], off, inner);
      }
    });
    return;
  }
  const int r = c.rank;
  const auto& dims = c.dims;
  const auto& st = c.strides;
  std::int64_t inner_n = dims[r - 1];
  std::int64_t rows = total / inner_n;
  std::array<std::int64_t, N> inner{};
  for (std::size_t k = 0; k < N; ++k) inner[k] = st[k][r - 1];
  parallel_for(rows, inner_n, [&](std::int64_t begin, std::int64_t end) {
    std::int64_t idx[kMaxCollapsedRank] = {};
    std::array<std::int64_t, N> off{};
    std::int64_t rem = begin;
    for (int a = r - 2; a >= 0; --a) {
      idx[a] = rem % dims[a];
      rem /= dims[a];
      for (std::size_t k = 0; k < N; ++k) off[k] += idx[a] * st[k][a];
    }
    for (std::int64_t row = begin; row < end; ++row) {
      fn(row * inner_n, inner_n, off, inner);
      for (int a = r - 2; a >= 0; --a) {  // next row
        for (std::size_t k = 0; k < N; ++k) off[k] += st[k][a];
        if (++idx[a] < dims[a]) break;
        for (std::size_t k = 0; k < N; ++k) off[k] -= st[k][a] * dims[a];
        idx[a] = 0;
      }
    }
  });
}

// Copies src (viewed through `in_strides`, starting at `base`) into a contiguous dst of shape
// `out`. Serves transpose, slicing and broadcast_to.
template <class T>
void strided_copy(const T* src, std::int64_t base, const std::vector<std::int64_t>& in_strides,
                  const Shape& out, T* dst) {
  std::array<std::vector<std::int64_t>, 1> strides{in_strides};
  for_each_broadcast_row<1>(out, strides, [&](std::int64_t o, std::int64_t n, auto off, auto inner) {
    const T* s = src + base + off[0];
    if (inner[0] == 1) {
      for (std::int64_t i = 0; i < n; ++i) dst[o + i] = s[i];
    } else {
      for (std::int64_t i = 0; i < n; ++i) dst[o + i] = s[i * inner[0]];
    }
  });
}

}  // namespace ef::cpu
