// ef::image's HSV conversions and the adjustments built on them (saturation, hue), gamma, and the
// random adjustments (one scalar factor drawn per call, as TF's). Everything is elementwise over
// the three channels of the last axis, so it differentiates where TF's kernels do not.
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/ops.h"
#include "image_util.h"

namespace ef::image {
namespace {

struct Channels {
  Tensor a, b, c;
};

// The three channels of the last axis (each keeping the axis, size 1).
Channels split3(const Tensor& x, const char* op) {
  if (!x.defined()) fail(op, "got an undefined tensor");
  if (x.rank() < 1 || x.shape()[x.rank() - 1] != 3)
    fail(ErrorCode::invalid_argument, op, "expects 3 channels in the last axis, got " + x.spec().str());
  const int last = x.rank() - 1;
  return {detail::slice_axis(x, last, 0, 1), detail::slice_axis(x, last, 1, 2), detail::slice_axis(x, last, 2, 3)};
}

Tensor join3(const Channels& ch) { return concat({ch.a, ch.b, ch.c}, ch.a.rank() - 1); }

void expect_floating(const Tensor& x, const char* op) {
  if (x.defined() && !is_floating(x.dtype()))
    fail(kWrongType, op, "expects a floating image, got " + x.spec().str());
}

Tensor float32_of(const Tensor& image) { return convert_image_dtype(image, DType::float32); }

// Hue in [0, 1) from the channel holding the maximum: each sixth of the circle is a linear ramp
// between two primaries. Divisions are made safe where range is 0 (grey: hue 0, no NaN gradient).
Channels hsv_of(const Channels& rgb) {
  const Tensor& r = rgb.a;
  const Tensor& g = rgb.b;
  const Tensor& b = rgb.c;
  Tensor v = maximum(maximum(r, g), b);
  Tensor range = v - minimum(minimum(r, g), b);
  Tensor s = where(v > 0, range / where(v > 0, v, ones_like(v)), zeros_like(v));
  Tensor grey = less_equal(range, zeros_like(range));
  Tensor norm = 1.0 / (where(grey, ones_like(range), range) * 6.0);
  Tensor h = where(equal(r, v), norm * (g - b),
                   where(equal(g, v), norm * (b - r) + 2.0 / 6.0, norm * (r - g) + 4.0 / 6.0));
  h = where(grey, zeros_like(h), h);
  h = where(h < 0, h + 1.0, h);
  return {h, s, v};
}

// Each channel ramps in and out over the hue circle; saturation mixes it with white, value scales.
Channels rgb_of(const Channels& hsv) {
  Tensor dh = hsv.a * 6.0;
  auto ramp = [&](double center, bool rising_outside) {
    Tensor d = abs(dh - center);
    return rising_outside ? clip(d - 1.0, 0.0, 1.0) : clip(2.0 - d, 0.0, 1.0);
  };
  Tensor one_minus_s = 1.0 - hsv.b;
  auto mix = [&](const Tensor& primary) { return (one_minus_s + hsv.b * primary) * hsv.c; };
  return {mix(ramp(3.0, true)), mix(ramp(2.0, false)), mix(ramp(4.0, false))};
}

}  // namespace

Tensor rgb_to_hsv(const Tensor& images) {
  expect_floating(images, "image.rgb_to_hsv");
  return join3(hsv_of(split3(images, "image.rgb_to_hsv")));
}

Tensor hsv_to_rgb(const Tensor& images) {
  expect_floating(images, "image.hsv_to_rgb");
  return join3(rgb_of(split3(images, "image.hsv_to_rgb")));
}

Tensor detail::saturation_by(const Tensor& image, const Tensor& saturation_factor) {
  Channels hsv = hsv_of(split3(float32_of(image), "image.adjust_saturation"));
  hsv.b = clip(hsv.b * saturation_factor, 0.0, 1.0);
  return convert_image_dtype(join3(rgb_of(hsv)), image.dtype());
}

Tensor detail::hue_by(const Tensor& image, const Tensor& delta) {
  Channels hsv = hsv_of(split3(float32_of(image), "image.adjust_hue"));
  // Rotated and wrapped back into [0, 1).
  Tensor h = hsv.a + delta;
  hsv.a = h - floor(h);
  return convert_image_dtype(join3(rgb_of(hsv)), image.dtype());
}

Tensor adjust_saturation(const Tensor& image, double saturation_factor) {
  return detail::saturation_by(image, scalar(static_cast<float>(saturation_factor)));
}

Tensor adjust_hue(const Tensor& image, double delta) {
  return detail::hue_by(image, scalar(static_cast<float>(delta)));
}

Tensor adjust_gamma(const Tensor& image, double gamma, double gain) {
  const char* op = "image.adjust_gamma";
  if (!image.defined()) fail(op, "got an undefined tensor");
  if (!(gamma >= 0)) fail(ErrorCode::invalid_argument, op, "gamma should be a non-negative real number, got " + std::to_string(gamma));
  Tensor x = float32_of(image);
  return convert_image_dtype(pow(x, scalar_like(x, gamma)) * gain, image.dtype(), /*saturate=*/true);
}

Tensor detail::random_brightness(const Tensor& image, double max_delta, const Draw& draw) {
  if (!(max_delta >= 0)) fail(ErrorCode::invalid_argument, "image.random_brightness", "max_delta must be non-negative");
  return brightness_by(image, draw.uniform(Shape{}, -max_delta, max_delta));
}

Tensor detail::random_contrast(const Tensor& image, double lower, double upper, const Draw& draw) {
  if (!(upper > lower)) fail(ErrorCode::invalid_argument, "image.random_contrast", "upper must be > lower");
  if (!(lower >= 0)) fail(ErrorCode::invalid_argument, "image.random_contrast", "lower must be non-negative");
  return contrast_by(image, draw.uniform(Shape{}, lower, upper));
}

Tensor detail::random_saturation(const Tensor& image, double lower, double upper, const Draw& draw) {
  if (!(upper > lower)) fail(ErrorCode::invalid_argument, "image.random_saturation", "upper must be > lower");
  if (!(lower >= 0)) fail(ErrorCode::invalid_argument, "image.random_saturation", "lower must be non-negative");
  return saturation_by(image, draw.uniform(Shape{}, lower, upper));
}

Tensor detail::random_hue(const Tensor& image, double max_delta, const Draw& draw) {
  if (!(max_delta >= 0 && max_delta <= 0.5))
    fail(ErrorCode::invalid_argument, "image.random_hue", "max_delta must be in [0, 0.5], got " + std::to_string(max_delta));
  return hue_by(image, draw.uniform(Shape{}, -max_delta, max_delta));
}

Tensor random_brightness(const Tensor& image, double max_delta, std::optional<std::uint64_t> seed) {
  return detail::random_brightness(image, max_delta, detail::Draw::stateful(seed));
}
Tensor random_contrast(const Tensor& image, double lower, double upper, std::optional<std::uint64_t> seed) {
  return detail::random_contrast(image, lower, upper, detail::Draw::stateful(seed));
}
Tensor random_saturation(const Tensor& image, double lower, double upper, std::optional<std::uint64_t> seed) {
  return detail::random_saturation(image, lower, upper, detail::Draw::stateful(seed));
}
Tensor random_hue(const Tensor& image, double max_delta, std::optional<std::uint64_t> seed) {
  return detail::random_hue(image, max_delta, detail::Draw::stateful(seed));
}

}  // namespace ef::image
