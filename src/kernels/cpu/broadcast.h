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

// Calls fn(out_begin, count, offsets, inner_strides) for runs along the innermost axis.
template <std::size_t N, class Fn>
void for_each_broadcast_row(const Shape& out, const std::array<std::vector<std::int64_t>, N>& strides, Fn&& fn) {
  int r = out.rank();
  std::int64_t total = out.num_elements();
  if (total == 0) return;
  if (r == 0) {
    std::array<std::int64_t, N> off{}, inner{};
    fn(std::int64_t{0}, std::int64_t{1}, off, inner);
    return;
  }
  std::int64_t inner_n = out[r - 1];
  std::int64_t rows = total / inner_n;
  std::array<std::int64_t, N> inner{};
  for (std::size_t k = 0; k < N; ++k) inner[k] = strides[k][static_cast<std::size_t>(r - 1)];
  parallel_for(rows, inner_n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      std::array<std::int64_t, N> off{};
      std::int64_t rem = row;
      for (int a = r - 2; a >= 0; --a) {
        std::int64_t idx = rem % out[a];
        rem /= out[a];
        for (std::size_t k = 0; k < N; ++k) off[k] += idx * strides[k][static_cast<std::size_t>(a)];
      }
      fn(row * inner_n, inner_n, off, inner);
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
