// ef::image::crop_and_resize (TF's tf.image.crop_and_resize): boxes given as tensors, so the
// sampling positions are computed with ops at run time and the pixels fetched with gather_nd;
// the result differentiates in the image and (through the interpolation weights) in the boxes.
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/scatter_nd.h"
#include "image_util.h"

namespace ef::image {
namespace {

// Sampling positions along one axis of `size` pixels: [boxes, crop] from the box's normalized
// ends lo, hi ([boxes, 1]); a single sample takes the box's middle, as TF's.
Tensor sample_positions(const Tensor& lo, const Tensor& hi, std::int64_t size, std::int64_t crop) {
  const double last = static_cast<double>(size - 1);
  if (crop == 1) return (lo + hi) * (0.5 * last);
  Tensor steps = reshape(arange(0.0, static_cast<double>(crop), 1.0, DType::float32), Shape{1, crop});
  // TF's float32 order of operations, so that positions landing on .5 round as TF's do.
  Tensor step = (hi - lo) * last / static_cast<double>(crop - 1);
  return lo * last + steps * step;
}

Tensor inside(const Tensor& pos, std::int64_t size) {
  return logical_and(pos >= 0.0, pos <= static_cast<double>(size - 1));
}

// Clamped integer pixel indices (the clamped ones only feed samples that are replaced anyway).
Tensor index_of(const Tensor& pos, std::int64_t size) {
  return cast(clip(pos, 0.0, static_cast<double>(size - 1)), DType::int64);
}

}  // namespace

Tensor crop_and_resize(const Tensor& image, const Tensor& boxes, const Tensor& box_indices, std::int64_t crop_height,
                       std::int64_t crop_width, const std::string& method, double extrapolation_value) {
  const char* op = "image.crop_and_resize";
  if (!image.defined() || !boxes.defined() || !box_indices.defined()) fail(op, "got an undefined tensor");
  if (image.rank() != 4) fail(ErrorCode::invalid_argument, op, "image must be 4-D, got " + image.spec().str());
  if (boxes.rank() != 2 || boxes.shape()[1] != 4)
    fail(ErrorCode::invalid_argument, op, "boxes must be [num_boxes, 4], got " + boxes.spec().str());
  if (box_indices.rank() != 1 || is_floating(box_indices.dtype()))
    fail(ErrorCode::invalid_argument, op, "box_indices must be a 1-D integer tensor, got " + box_indices.spec().str());
  if (crop_height <= 0 || crop_width <= 0)
    fail(ErrorCode::invalid_argument, op,
         "crop_size must be positive, got [" + std::to_string(crop_height) + ", " + std::to_string(crop_width) + "]");
  if (method != "bilinear" && method != "nearest")
    fail(ErrorCode::invalid_argument, op, "method must be 'bilinear' or 'nearest', got '" + method + "'");
  const std::int64_t h = image.dim(1), w = image.dim(2);
  Tensor x = image.dtype() == DType::float32 ? image : cast(image, DType::float32);
  Tensor b = boxes.dtype() == DType::float32 ? boxes : cast(boxes, DType::float32);
  auto column = [&](std::int64_t k) { return slice(b, {0, k}, {detail::kToEnd, k + 1}); };  // [boxes, 1]
  Tensor ys = sample_positions(column(0), column(2), h, crop_height);  // [boxes, crop_height]
  Tensor xs = sample_positions(column(1), column(3), w, crop_width);   // [boxes, crop_width]
  Tensor rows = expand_dims(ys, 2), cols = expand_dims(xs, 1);         // broadcast to [boxes, ch, cw]
  Tensor batch = reshape(cast(box_indices, DType::int64), Shape{-1, 1, 1});
  Tensor grid = zeros_like(rows * cols);
  auto fetch = [&](const Tensor& yi, const Tensor& xi) {
    Tensor index = stack({cast(grid, DType::int64) + batch, cast(grid, DType::int64) + yi, cast(grid, DType::int64) + xi}, -1);
    return gather_nd(x, index);  // [boxes, ch, cw, channels]
  };
  Tensor out;
  if (method == "nearest") {
    // Half away from zero, as C's roundf (the positions used are >= 0), without the rounding of
    // adding 0.5 first.
    auto nearest = [](const Tensor& p) {
      Tensor down = floor(p);
      return down + cast(p - down >= 0.5, p.dtype());
    };
    out = fetch(index_of(nearest(rows), h), index_of(nearest(cols), w));
  } else {
    Tensor y0 = floor(rows), x0 = floor(cols);
    Tensor ly = expand_dims(rows - y0, -1), lx = expand_dims(cols - x0, -1);
    Tensor top_i = index_of(y0, h), bottom_i = index_of(ceil(rows), h), left_i = index_of(x0, w), right_i = index_of(ceil(cols), w);
    Tensor top_left = fetch(top_i, left_i), top_right = fetch(top_i, right_i);
    Tensor bottom_left = fetch(bottom_i, left_i), bottom_right = fetch(bottom_i, right_i);
    Tensor top = top_left + (top_right - top_left) * lx;
    Tensor bottom = bottom_left + (bottom_right - bottom_left) * lx;
    out = top + (bottom - top) * ly;
  }
  // Samples outside the image take extrapolation_value.
  Tensor valid = expand_dims(logical_and(inside(rows, h), inside(cols, w)), -1);
  return where(valid, out, full_like(out, extrapolation_value));
}

}  // namespace ef::image
