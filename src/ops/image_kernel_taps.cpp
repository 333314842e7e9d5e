// TF's scale_and_translate sampling kernels (image_taps.h): tf.image.resize with antialias, and
// its lanczos3, lanczos5, gaussian and mitchellcubic methods. float32 arithmetic, as TF's kernel.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "eagerflow/core/error.h"
#include "image_taps.h"

namespace ef::image::detail {
namespace {

struct Kernel {
  float radius;
  std::function<float(float)> at;  // of |distance|
};

float lanczos(float radius, float x) {
  constexpr auto pi = std::numbers::pi_v<float>;
  if (x > radius) return 0.0f;
  if (x <= 1e-3f) return 1.0f;  // sin(x) / x at its limit
  return radius * std::sin(pi * x) * std::sin(pi * x / radius) / (pi * pi * x * x);
}

Kernel kernel_named(const std::string& name) {
  if (name == "triangle") return {1.0f, [](float x) { return x < 1.0f ? 1.0f - x : 0.0f; }};
  if (name == "keyscubic")  // Keys' cubic, a = -0.5
    return {2.0f, [](float x) {
              if (x >= 2.0f) return 0.0f;
              if (x >= 1.0f) return ((-0.5f * x + 2.5f) * x - 4.0f) * x + 2.0f;
              return (1.5f * x - 2.5f) * x * x + 1.0f;
            }};
  if (name == "mitchellcubic")  // Mitchell-Netravali, B = C = 1/3
    return {2.0f, [](float x) {
              if (x >= 2.0f) return 0.0f;
              if (x >= 1.0f) return (((-7.0f / 18.0f) * x + 2.0f) * x - 10.0f / 3.0f) * x + 16.0f / 9.0f;
              return ((7.0f / 6.0f) * x - 2.0f) * x * x + 8.0f / 9.0f;
            }};
  if (name == "lanczos3") return {3.0f, [](float x) { return lanczos(3.0f, x); }};
  if (name == "lanczos5") return {5.0f, [](float x) { return lanczos(5.0f, x); }};
  if (name == "gaussian")  // sigma 0.5 over a radius of 1.5 (three sigmas)
    return {1.5f, [](float x) { return x >= 1.5f ? 0.0f : std::exp(-x * x / (2.0f * 0.25f)); }};
  fail("image.resize", "unknown sampling kernel '" + name + "'");
}

}  // namespace

Taps kernel_taps(const std::string& kernel_name, std::int64_t in, std::int64_t out, bool antialias) {
  const Kernel kernel = kernel_named(kernel_name);
  const float scale = static_cast<float>(out) / static_cast<float>(in);
  const float inv_scale = 1.0f / scale;
  // Downsampling with antialias widens the kernel so that every input pixel contributes.
  const float kernel_scale = antialias ? std::max(inv_scale, 1.0f) : 1.0f;
  const float reach = kernel.radius * kernel_scale;
  auto span = [&](std::int64_t o) {
    const float sample = (static_cast<float>(o) + 0.5f) * inv_scale;
    const auto first = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(sample - reach - 0.5f)), 0, in - 1);
    const auto last = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(sample + reach - 0.5f)), 0, in - 1);
    return std::tuple{sample, first, last + 1};
  };
  int count = 1;
  for (std::int64_t o = 0; o < out; ++o) {
    auto [sample, first, end] = span(o);
    count = std::max(count, static_cast<int>(end - first));
  }
  Taps t(out, count);  // unused taps keep index 0 and weight 0
  std::vector<float> weights;
  for (std::int64_t o = 0; o < out; ++o) {
    auto [sample, first, end] = span(o);
    weights.clear();
    float total = 0.0f;
    for (std::int64_t i = first; i < end; ++i) {
      const float w = kernel.at(std::abs((static_cast<float>(i) + 0.5f - sample) / kernel_scale));
      weights.push_back(w);
      total += w;
    }
    // A vanishing sum leaves the weights at zero, as TF's.
    if (std::abs(total) < 1000.0f * std::numeric_limits<float>::min()) continue;
    for (std::int64_t i = first; i < end; ++i)
      t.set(o, static_cast<int>(i - first), i, weights[static_cast<std::size_t>(i - first)] / total);
  }
  return t;
}

}  // namespace ef::image::detail
