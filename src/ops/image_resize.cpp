// ef::image::resize: TF2's tf.image.resize as two separable resamplings, each a few gathers
// along one axis weighted and summed, so it differentiates (the gathers' gradients scatter
// back), traces and vmaps as those ops do. The taps (input index and weight per output position)
// are computed here in float32 with TF's kernels' formulas, so the results agree with TF's to
// float rounding.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/ops.h"
#include "image_taps.h"
#include "image_util.h"
#include "ops/image_resample_op.h"

namespace ef::image {
namespace {

using detail::height_axis;
using detail::Taps;
using detail::width_axis;

float scale_of(std::int64_t in, std::int64_t out) { return static_cast<float>(in) / static_cast<float>(out); }

// Half-pixel centers: output pixel o's center (o + 0.5) lands on input coordinate
// (o + 0.5) * scale; the input pixel i is centered on i + 0.5.
Taps bilinear_taps(std::int64_t in, std::int64_t out) {
  const float scale = scale_of(in, out);
  Taps t(out, 2);
  for (std::int64_t o = 0; o < out; ++o) {
    const float x = (static_cast<float>(o) + 0.5f) * scale - 0.5f;
    const float x0 = std::floor(x);
    const float lerp = x - x0;
    t.set(o, 0, std::max<std::int64_t>(static_cast<std::int64_t>(x0), 0), 1.0f - lerp);
    t.set(o, 1, std::min<std::int64_t>(static_cast<std::int64_t>(std::ceil(x)), in - 1), lerp);
  }
  return t;
}

Taps nearest_taps(std::int64_t in, std::int64_t out) {
  const float scale = scale_of(in, out);
  Taps t(out, 1);
  for (std::int64_t o = 0; o < out; ++o) {
    const auto i = static_cast<std::int64_t>(std::floor((static_cast<float>(o) + 0.5f) * scale));
    t.set(o, 0, std::clamp<std::int64_t>(i, 0, in - 1), 1.0f);
  }
  return t;
}

// Keys' cubic convolution kernel with a = -0.5, at distance d from the sample.
float keys_cubic(float d) {
  constexpr float a = -0.5f;
  d = std::abs(d);
  if (d <= 1.0f) return ((a + 2.0f) * d - (a + 3.0f)) * d * d + 1.0f;
  if (d < 2.0f) return ((a * d - 5.0f * a) * d + 8.0f * a) * d - 4.0f * a;
  return 0.0f;
}

// TF's bicubic: the fractional position is rounded to 1/1024 (its kernels read a table of that
// resolution), taps outside the image get no weight and the rest are renormalized.
Taps bicubic_taps(std::int64_t in, std::int64_t out) {
  constexpr int kTableSize = 1024;
  const float scale = scale_of(in, out);
  Taps t(out, 4);
  for (std::int64_t o = 0; o < out; ++o) {
    const float x = (static_cast<float>(o) + 0.5f) * scale - 0.5f;
    const auto base = static_cast<std::int64_t>(std::floor(x));
    const float frac = static_cast<float>(std::lrint((x - std::floor(x)) * kTableSize)) / kTableSize;
    float w[4], total = 0.0f;
    for (int k = 0; k < 4; ++k) {
      const std::int64_t i = base - 1 + k;
      w[k] = (i >= 0 && i < in) ? keys_cubic(static_cast<float>(k - 1) - frac) : 0.0f;
      total += w[k];
    }
    for (int k = 0; k < 4; ++k) {
      const std::int64_t i = std::clamp<std::int64_t>(base - 1 + k, 0, in - 1);
      t.set(o, k, i, std::abs(total) > 0.0f ? w[k] / total : w[k]);
    }
  }
  return t;
}

// TF's area resize (no half-pixel offset): output pixel o covers input [o * scale, (o + 1) *
// scale); each input pixel weighs the length it overlaps, divided by scale.
Taps area_taps(std::int64_t in, std::int64_t out) {
  const float scale = scale_of(in, out);
  auto span = [&](std::int64_t o) {
    const float lo = static_cast<float>(o) * scale, hi = static_cast<float>(o + 1) * scale;
    return std::pair{lo, hi};
  };
  int count = 1;
  for (std::int64_t o = 0; o < out; ++o) {
    auto [lo, hi] = span(o);
    count = std::max(count, static_cast<int>(std::ceil(hi) - std::floor(lo)));
  }
  Taps t(out, count);  // unused taps keep index 0 and weight 0
  for (std::int64_t o = 0; o < out; ++o) {
    auto [lo, hi] = span(o);
    const auto first = static_cast<std::int64_t>(std::floor(lo)), last = static_cast<std::int64_t>(std::ceil(hi));
    for (std::int64_t i = first; i < last; ++i) {
      const float fi = static_cast<float>(i);
      const float covered = std::min(fi + 1.0f, hi) - std::max(fi, lo);
      t.set(o, static_cast<int>(i - first), std::clamp<std::int64_t>(i, 0, in - 1), covered / scale);
    }
  }
  return t;
}

// sum over k of x gathered at taps k along `axis`, times their weights (broadcast over the
// axes after it). `weighted` false: the single tap is the result (nearest keeps its dtype).
Tensor resample(const Tensor& x, int axis, const Taps& taps, bool weighted) {
  if (weighted && x.dtype() == DType::float32) {  // one op: src/ops/image_resample_op.cpp
    std::vector<std::int64_t> index(taps.index.size());
    std::vector<float> weight(taps.weight.size());
    for (std::int64_t o = 0; o < taps.out; ++o)
      for (int k = 0; k < taps.count; ++k) {
        index[static_cast<std::size_t>(k * taps.out + o)] = taps.index[static_cast<std::size_t>(o * taps.count + k)];
        weight[static_cast<std::size_t>(k * taps.out + o)] = taps.weight[static_cast<std::size_t>(o * taps.count + k)];
      }
    Shape tap_shape{taps.count, taps.out};
    return dispatch1(ImageResample(axis), {x, tensor(index, tap_shape), tensor(weight, tap_shape)});
  }
  Tensor total;
  std::vector<std::int64_t> weight_dims(static_cast<std::size_t>(x.rank() - axis), 1);
  weight_dims[0] = taps.out;
  for (int k = 0; k < taps.count; ++k) {
    std::vector<std::int64_t> index(static_cast<std::size_t>(taps.out));
    std::vector<float> weight(index.size());
    for (std::int64_t o = 0; o < taps.out; ++o) {
      index[static_cast<std::size_t>(o)] = taps.index[static_cast<std::size_t>(o * taps.count + k)];
      weight[static_cast<std::size_t>(o)] = taps.weight[static_cast<std::size_t>(o * taps.count + k)];
    }
    Tensor gathered = gather(x, tensor(index), axis);
    if (!weighted) return gathered;
    Tensor term = gathered * tensor(weight, Shape(weight_dims));
    total = total.defined() ? total + term : term;
  }
  return total;
}

bool is_kernel_method(const std::string& method) {
  return method == "lanczos3" || method == "lanczos5" || method == "gaussian" || method == "mitchellcubic";
}

// antialias (and the methods TF only has in that form) go through TF's scale_and_translate
// sampling: bilinear as the triangle kernel, bicubic as Keys' cubic.
Taps taps_for(const std::string& method, std::int64_t in, std::int64_t out, bool antialias) {
  if (is_kernel_method(method)) return detail::kernel_taps(method, in, out, antialias);
  if (antialias && method == "bilinear") return detail::kernel_taps("triangle", in, out, true);
  if (antialias && method == "bicubic") return detail::kernel_taps("keyscubic", in, out, true);
  if (method == "bilinear") return bilinear_taps(in, out);
  if (method == "nearest") return nearest_taps(in, out);
  if (method == "bicubic") return bicubic_taps(in, out);
  return area_taps(in, out);
}

}  // namespace

Tensor resize(const Tensor& images, std::int64_t new_height, std::int64_t new_width, const std::string& method,
              bool preserve_aspect_ratio, bool antialias) {
  const char* op = "image.resize";
  detail::expect_image(images, op);
  if (method != "bilinear" && method != "nearest" && method != "bicubic" && method != "area" && !is_kernel_method(method))
    fail(ErrorCode::invalid_argument, op,
         "method '" + method + "' is not one of 'bilinear', 'nearest', 'bicubic', 'area', 'lanczos3', 'lanczos5', "
         "'gaussian', 'mitchellcubic'");
  if (new_height <= 0 || new_width <= 0)
    fail(ErrorCode::invalid_argument, op,
         "size must be positive, got [" + std::to_string(new_height) + ", " + std::to_string(new_width) + "] for images " +
             images.spec().str());
  if (images.shape()[height_axis(images)] == kDynamic || images.shape()[width_axis(images)] == kDynamic)
    return resize_unknown_size(images, new_height, new_width, method, preserve_aspect_ratio, antialias);
  const std::int64_t h = images.dim(height_axis(images)), w = images.dim(width_axis(images));
  if (h <= 0 || w <= 0) fail(ErrorCode::invalid_argument, op, "needs a non-empty image, got " + images.spec().str());
  if (preserve_aspect_ratio) {
    // TF's float32 arithmetic: the smaller of the two scales, sizes rounded half to even.
    const float fh = static_cast<float>(h), fw = static_cast<float>(w);
    const float scale = std::min(static_cast<float>(new_height) / fh, static_cast<float>(new_width) / fw);
    new_height = static_cast<std::int64_t>(std::nearbyint(scale * fh));
    new_width = static_cast<std::int64_t>(std::nearbyint(scale * fw));
  }
  const bool nearest = method == "nearest";
  Tensor x = nearest || images.dtype() == DType::float32 ? images : cast(images, DType::float32);
  x = resample(x, height_axis(images), taps_for(method, h, new_height, antialias), !nearest);
  return resample(x, width_axis(images), taps_for(method, w, new_width, antialias), !nearest);
}

}  // namespace ef::image

namespace ef::image {

Tensor resize_with_pad(const Tensor& image, std::int64_t target_height, std::int64_t target_width,
                       const std::string& method, bool antialias) {
  const char* op = "image.resize_with_pad";
  detail::expect_image(image, op);
  if (target_height <= 0 || target_width <= 0)
    fail(ErrorCode::invalid_argument, op,
         "target sizes must be > 0, got (" + std::to_string(target_height) + ", " + std::to_string(target_width) + ")");
  // TF's float32 arithmetic: scale by the larger of the two ratios, sizes and the leading
  // padding floored.
  const float fh = static_cast<float>(image.dim(height_axis(image))), fw = static_cast<float>(image.dim(width_axis(image)));
  const float fth = static_cast<float>(target_height), ftw = static_cast<float>(target_width);
  const float ratio = std::max(fw / ftw, fh / fth);
  const float rh = fh / ratio, rw = fw / ratio;
  const auto pad_top = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor((fth - rh) / 2)));
  const auto pad_left = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor((ftw - rw) / 2)));
  Tensor resized = resize(image, static_cast<std::int64_t>(std::floor(rh)), static_cast<std::int64_t>(std::floor(rw)),
                          method, false, antialias);
  return pad_to_bounding_box(resized, pad_top, pad_left, target_height, target_width);
}

}  // namespace ef::image
