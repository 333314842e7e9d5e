#pragma once
// float32 elementwise kernels over bfloat16 data, a block at a time: each block's inputs are
// widened into float32 buffers on the stack, the float32 kernel runs on them, and its results
// are rounded into the bfloat16 output. Every element goes through the same float32
// arithmetic as cast -> op -> cast (so the bits are those of the cast path), in one pass over
// 16-bit memory instead of three passes, two of them over 32-bit copies.
#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"

namespace ef::cpu {

inline constexpr std::int64_t kBfloat16Block = 1024;
inline constexpr int kFloat32Code = 0, kBfloat16Code = 5;  // vec::Kernels::cast's dtype codes

// out[i] = f(x[i]) for i < n; kernel(const float* x, float* y, m) is the float32 loop.
template <class Kernel>
void bfloat16_unary_blocks(const std::uint16_t* x, std::uint16_t* out, std::int64_t n, std::int64_t cost,
                           Kernel&& kernel) {
  const auto& vk = vec::kernels();
  parallel_for(n, cost, [&](std::int64_t begin, std::int64_t end) {
    alignas(64) float xs[kBfloat16Block], ys[kBfloat16Block];
    for (std::int64_t s = begin; s < end; s += kBfloat16Block) {
      const std::int64_t m = std::min(kBfloat16Block, end - s);
      vk.cast(kBfloat16Code, kFloat32Code, x + s, xs, m);
      kernel(static_cast<const float*>(xs), static_cast<float*>(ys), m);
      vk.cast(kFloat32Code, kBfloat16Code, ys, out + s, m);
    }
  });
}

// out[i] = f(a[i * a_step], b[i * b_step]) for i < n, steps 0 (a scalar) or 1;
// kernel(const float* a, a_step, const float* b, b_step, float* y, m) is the float32 loop.
template <class Kernel>
void bfloat16_binary_blocks(const std::uint16_t* a, std::int64_t a_step, const std::uint16_t* b, std::int64_t b_step,
                            std::uint16_t* out, std::int64_t n, std::int64_t cost, Kernel&& kernel) {
  const auto& vk = vec::kernels();
  parallel_for(n, cost, [&](std::int64_t begin, std::int64_t end) {
    alignas(64) float as[kBfloat16Block], bs[kBfloat16Block], ys[kBfloat16Block];
    for (std::int64_t s = begin; s < end; s += kBfloat16Block) {
      const std::int64_t m = std::min(kBfloat16Block, end - s);
      vk.cast(kBfloat16Code, kFloat32Code, a + s * a_step, as, a_step ? m : 1);
      vk.cast(kBfloat16Code, kFloat32Code, b + s * b_step, bs, b_step ? m : 1);
      kernel(static_cast<const float*>(as), a_step, static_cast<const float*>(bs), b_step, static_cast<float*>(ys), m);
      vk.cast(kFloat32Code, kBfloat16Code, ys, out + s, m);
    }
  });
}

}  // namespace ef::cpu
