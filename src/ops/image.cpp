// ef::image (eagerflow/ops/image.h): flips, rotations, crops and pads, and the color and value
// adjustments, as slices, pads and elementwise ops. Resizing is in image_resize.cpp, the quality
// measures in image_quality.cpp, HSV in image_color.cpp, random flips and crops in image_random.cpp.
#include "eagerflow/ops/image.h"

#include <algorithm>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "image_util.h"

namespace ef::image {
namespace detail {

Tensor slice_axis(const Tensor& x, int axis, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> b(static_cast<std::size_t>(axis + 1), 0), e(b.size(), kToEnd);
  b.back() = begin;
  e.back() = end;
  return slice(x, b, e);
}

Tensor reverse_axis(const Tensor& x, int axis) {
  // Python's x[::-1]: from the last element down past the first (an end below -n means "past
  // the start" in slice's rules).
  std::vector<std::int64_t> b(static_cast<std::size_t>(axis + 1), 0), e(b.size(), kToEnd), s(b.size(), 1);
  b.back() = -1;
  e.back() = std::numeric_limits<std::int64_t>::min();
  s.back() = -1;
  return slice(x, b, e, s);
}

}  // namespace detail

using namespace detail;

namespace {

// height and width swapped, the other axes in place.
Tensor swap_height_width(const Tensor& image) {
  std::vector<int> perm(static_cast<std::size_t>(image.rank()));
  for (int i = 0; i < image.rank(); ++i) perm[static_cast<std::size_t>(i)] = i;
  std::swap(perm[static_cast<std::size_t>(height_axis(image))], perm[static_cast<std::size_t>(width_axis(image))]);
  return ef::transpose(image, perm);
}

std::string box_str(std::int64_t oh, std::int64_t ow, std::int64_t th, std::int64_t tw) {
  return "offset (" + std::to_string(oh) + ", " + std::to_string(ow) + "), target (" + std::to_string(th) + ", " +
         std::to_string(tw) + ")";
}

// TF's convert_image_dtype round trip: compute in float32, give back the image's dtype.
Tensor as_float32(const Tensor& image) { return convert_image_dtype(image, DType::float32); }
Tensor back_to(const Tensor& result, DType dtype) { return convert_image_dtype(result, dtype, /*saturate=*/true); }

}  // namespace

Tensor flip_left_right(const Tensor& image) {
  expect_image(image, "image.flip_left_right");
  return reverse_axis(image, width_axis(image));
}

Tensor flip_up_down(const Tensor& image) {
  expect_image(image, "image.flip_up_down");
  return reverse_axis(image, height_axis(image));
}

Tensor rot90(const Tensor& image, int k) {
  expect_image(image, "image.rot90");
  switch (((k % 4) + 4) % 4) {
    case 1: return swap_height_width(reverse_axis(image, width_axis(image)));
    case 2: return reverse_axis(reverse_axis(image, height_axis(image)), width_axis(image));
    case 3: return reverse_axis(swap_height_width(image), width_axis(image));
    default: return identity(image);
  }
}

Tensor transpose(const Tensor& image) {
  expect_image(image, "image.transpose");
  return swap_height_width(image);
}

Tensor crop_to_bounding_box(const Tensor& image, std::int64_t offset_height, std::int64_t offset_width,
                            std::int64_t target_height, std::int64_t target_width) {
  const char* op = "image.crop_to_bounding_box";
  expect_image(image, op);
  const std::int64_t h = image.dim(height_axis(image)), w = image.dim(width_axis(image));
  auto refuse = [&](const std::string& why) {
    fail(ErrorCode::invalid_argument, op,
         why + ": " + box_str(offset_height, offset_width, target_height, target_width) + " for image " +
             image.spec().str());
  };
  if (offset_height < 0 || offset_width < 0) refuse("offsets must be >= 0");
  if (target_height <= 0 || target_width <= 0) refuse("target sizes must be > 0");
  if (h < offset_height + target_height) refuse("height must be >= target + offset");
  if (w < offset_width + target_width) refuse("width must be >= target + offset");
  Tensor rows = slice_axis(image, height_axis(image), offset_height, offset_height + target_height);
  return slice_axis(rows, width_axis(image), offset_width, offset_width + target_width);
}

Tensor pad_to_bounding_box(const Tensor& image, std::int64_t offset_height, std::int64_t offset_width,
                           std::int64_t target_height, std::int64_t target_width) {
  const char* op = "image.pad_to_bounding_box";
  expect_image(image, op);
  const std::int64_t h = image.dim(height_axis(image)), w = image.dim(width_axis(image));
  auto refuse = [&](const std::string& why) {
    fail(ErrorCode::invalid_argument, op,
         why + ": " + box_str(offset_height, offset_width, target_height, target_width) + " for image " +
             image.spec().str());
  };
  if (offset_height < 0 || offset_width < 0) refuse("offsets must be >= 0");
  const std::int64_t after_h = target_height - offset_height - h, after_w = target_width - offset_width - w;
  if (after_h < 0) refuse("height must be <= target - offset");
  if (after_w < 0) refuse("width must be <= target - offset");
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings(static_cast<std::size_t>(image.rank()), {0, 0});
  paddings[static_cast<std::size_t>(height_axis(image))] = {offset_height, after_h};
  paddings[static_cast<std::size_t>(width_axis(image))] = {offset_width, after_w};
  return pad(image, paddings);
}

Tensor central_crop(const Tensor& image, double central_fraction) {
  const char* op = "image.central_crop";
  if (!(central_fraction > 0.0 && central_fraction <= 1.0))
    fail(ErrorCode::invalid_argument, op, "central_fraction must be within (0, 1], got " + std::to_string(central_fraction));
  expect_image(image, op);
  if (central_fraction == 1.0) return image;
  const std::int64_t h = image.dim(height_axis(image)), w = image.dim(width_axis(image));
  // TF's rounding: the margin is (size - size * fraction) / 2 truncated, and the kept size what
  // the two margins leave.
  auto margin = [&](std::int64_t n) {
    const auto d = static_cast<double>(n);
    return static_cast<std::int64_t>((d - d * central_fraction) / 2);
  };
  const std::int64_t top = margin(h), left = margin(w);
  Tensor rows = slice_axis(image, height_axis(image), top, h - top);
  return slice_axis(rows, width_axis(image), left, w - left);
}

Tensor resize_with_crop_or_pad(const Tensor& image, std::int64_t target_height, std::int64_t target_width) {
  const char* op = "image.resize_with_crop_or_pad";
  expect_image(image, op);
  if (target_height <= 0 || target_width <= 0)
    fail(ErrorCode::invalid_argument, op,
         "target sizes must be > 0, got (" + std::to_string(target_height) + ", " + std::to_string(target_width) + ")");
  const std::int64_t h = image.dim(height_axis(image)), w = image.dim(width_axis(image));
  // Centered: an odd surplus leaves the extra row or column at the bottom / right.
  const std::int64_t dh = target_height - h, dw = target_width - w;
  Tensor cropped = crop_to_bounding_box(image, std::max<std::int64_t>(-dh / 2, 0), std::max<std::int64_t>(-dw / 2, 0),
                                        std::min(target_height, h), std::min(target_width, w));
  return pad_to_bounding_box(cropped, std::max<std::int64_t>(dh / 2, 0), std::max<std::int64_t>(dw / 2, 0),
                             target_height, target_width);
}

Tensor rgb_to_grayscale(const Tensor& images) {
  const char* op = "image.rgb_to_grayscale";
  if (!images.defined()) fail(op, "got an undefined tensor");
  if (images.rank() < 1 || images.shape()[images.rank() - 1] != 3)
    fail(ErrorCode::invalid_argument, op, "expects 3 channels in the last axis, got " + images.spec().str());
  Tensor rgb = as_float32(images);
  Tensor weights = tensor<float>({0.2989f, 0.5870f, 0.1140f});
  return back_to(sum(rgb * weights, {-1}, /*keepdims=*/true), images.dtype());
}

Tensor grayscale_to_rgb(const Tensor& images) {
  const char* op = "image.grayscale_to_rgb";
  if (!images.defined()) fail(op, "got an undefined tensor");
  if (images.rank() < 2 || images.shape()[images.rank() - 1] != 1)
    fail(ErrorCode::invalid_argument, op,
         "expects at least 2 dimensions and a last dimension of size 1, got " + images.spec().str());
  std::vector<std::int64_t> multiples(static_cast<std::size_t>(images.rank()), 1);
  multiples.back() = 3;
  return tile(images, multiples);
}

Tensor detail::brightness_by(const Tensor& image, const Tensor& delta) {
  if (!image.defined()) fail("image.adjust_brightness", "got an undefined tensor");
  return back_to(as_float32(image) + delta, image.dtype());
}

Tensor detail::contrast_by(const Tensor& images, const Tensor& contrast_factor) {
  const char* op = "image.adjust_contrast";
  if (!images.defined()) fail(op, "got an undefined tensor");
  if (images.rank() < 3) fail(ErrorCode::invalid_argument, op, "expects at least 3 dimensions, got " + images.spec().str());
  Tensor x = as_float32(images);
  Tensor m = mean(x, {-3, -2}, /*keepdims=*/true);
  return back_to((x - m) * contrast_factor + m, images.dtype());
}

Tensor adjust_brightness(const Tensor& image, double delta) {
  return brightness_by(image, scalar(static_cast<float>(delta)));
}
Tensor adjust_contrast(const Tensor& images, double contrast_factor) {
  return contrast_by(images, scalar(static_cast<float>(contrast_factor)));
}

Tensor per_image_standardization(const Tensor& image) {
  const char* op = "image.per_image_standardization";
  if (!image.defined()) fail(op, "got an undefined tensor");
  if (image.rank() < 3) fail(ErrorCode::invalid_argument, op, "expects at least 3 dimensions, got " + image.spec().str());
  Tensor x = cast(image, DType::float32);
  const std::vector<int> axes{-3, -2, -1};
  Tensor m = mean(x, axes, true);
  Tensor centered = x - m;
  Tensor stddev = sqrt(mean(square(centered), axes, true));
  // The floor, 1 / sqrt(elements per image), from the runtime shape: a dynamic batch works.
  const auto batch_axes = static_cast<std::size_t>(x.rank() - 3);
  Tensor one_image = slice(x, std::vector<std::int64_t>(batch_axes, 0), std::vector<std::int64_t>(batch_axes, 1));
  Tensor per_image = cast(size(one_image), DType::float32);
  return centered / maximum(stddev, rsqrt(per_image));
}

Tensor convert_image_dtype(const Tensor& image, DType dtype, bool saturate) {
  const char* op = "image.convert_image_dtype";
  if (!image.defined()) fail(op, "got an undefined tensor");
  const DType from = image.dtype();
  if (from == dtype) return identity(image);
  auto supported = [](DType d) { return is_floating(d) || is_integer(d); };
  if (!supported(from) || !supported(dtype))
    fail(kWrongType, op,
         "converts between floating and integer dtypes, got " + std::string(name_of(from)) + " to " +
             std::string(name_of(dtype)));
  auto to_int = [&](const Tensor& t) { return saturate ? saturate_cast(t, dtype) : cast(t, dtype); };
  if (is_floating(from) && is_floating(dtype)) return cast(image, dtype);
  if (is_integer(from) && is_integer(dtype)) {
    // TF's: integers map [0, max] onto [0, max'] by a power of two (uint8 255 -> int32
    // 255 * 2^23; int32 -> uint8 divides by 2^23, flooring).
    double in = max_of(from) + 1.0, out = max_of(dtype) + 1.0;  // powers of two, exact
    if (in > out) {
      Tensor q = floor(cast(image, DType::float64) * (out / in));  // exact: a power-of-two scale
      return to_int(q);
    }
    Tensor widened = to_int(image);
    return widened * scalar_like(widened, out / in);
  }
  if (is_integer(from)) return cast(image, dtype) * (1.0 / max_of(from));  // [0, max] -> [0, 1]
  // [0, 1] -> [0, max]; the half keeps 1.0 from rounding below max. saturate clamps to the
  // dtype's range first (tf.dtypes.saturate_cast); without it the cast wraps as tf.cast does
  // (int32 and int64 saturate in ef's cast, where TF's wraps 1.0f around to INT32_MIN).
  return to_int(image * (max_of(dtype) + 0.5));
}

}  // namespace ef::image
