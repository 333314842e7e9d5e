#pragma once
// Resampling taps for ef::image::resize (image_resize.cpp): which input pixels each output
// pixel of one axis reads, and with what weights.
#include <cstdint>
#include <string>
#include <vector>

namespace ef::image::detail {

// For each of `out` output positions, `count` (input index, weight) pairs, row-major.
struct Taps {
  std::int64_t out = 0;
  int count = 0;
  std::vector<std::int64_t> index;
  std::vector<float> weight;
  Taps(std::int64_t out_size, int taps)
      : out(out_size), count(taps), index(static_cast<std::size_t>(out_size * taps), 0),
        weight(static_cast<std::size_t>(out_size * taps), 0.0f) {}
  void set(std::int64_t o, int k, std::int64_t i, float w) {
    const auto at = static_cast<std::size_t>(o * count + k);
    index[at] = i;
    weight[at] = w;
  }
};

// TF's scale_and_translate sampling (no translation): output pixel o samples at (o + 0.5) /
// scale; every input pixel within the kernel's radius (widened by 1 / scale when downsampling
// with antialias) weighs kernel(distance), the weights normalized to sum 1. kernel: "triangle",
// "keyscubic", "lanczos3", "lanczos5", "gaussian" or "mitchellcubic".
Taps kernel_taps(const std::string& kernel, std::int64_t in, std::int64_t out, bool antialias);

}  // namespace ef::image::detail
