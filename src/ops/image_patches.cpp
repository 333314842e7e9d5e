// ef::image::extract_patches (TF's tf.image.extract_patches): every window of a 4-D batch
// flattened into the channel axis, as strided slices concatenated (or, for windows that tile
// the image, one reshape and transpose), so it differentiates and traces as those ops do.
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/ops.h"
#include "image_util.h"

namespace ef::image {
namespace {

struct Axis {
  std::int64_t size, stride, rate;
  std::int64_t reach() const { return size + (size - 1) * (rate - 1); }  // the dilated window
};

// [1, a, b, 1]: TF's form of the per-axis window arguments.
std::pair<std::int64_t, std::int64_t> hw_of(const std::vector<std::int64_t>& v, const char* what, const Tensor& images) {
  if (v.size() != 4 || v[0] != 1 || v[3] != 1 || v[1] < 1 || v[2] < 1)
    fail(ErrorCode::invalid_argument, "image.extract_patches",
         std::string(what) + " must be [1, rows, cols, 1] with positive rows and cols (images " + images.spec().str() + ")");
  return {v[1], v[2]};
}

// Output positions and the padding before them along one axis ("VALID": none; "SAME": the
// output covers ceil(n / stride) positions, the padding split with the smaller half first).
std::pair<std::int64_t, std::int64_t> positions(std::int64_t n, const Axis& a, bool same) {
  if (!same) return {n >= a.reach() ? (n - a.reach()) / a.stride + 1 : 0, 0};
  const std::int64_t out = (n + a.stride - 1) / a.stride;
  const std::int64_t total = std::max<std::int64_t>((out - 1) * a.stride + a.reach() - n, 0);
  return {out, total / 2};
}

}  // namespace

Tensor extract_patches(const Tensor& images, const std::vector<std::int64_t>& sizes,
                       const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& rates,
                       const std::string& padding) {
  const char* op = "image.extract_patches";
  if (!images.defined()) fail(op, "got an undefined tensor");
  if (images.rank() != 4) fail(ErrorCode::invalid_argument, op, "expects a 4-D batch, got " + images.spec().str());
  if (padding != "VALID" && padding != "SAME")
    fail(ErrorCode::invalid_argument, op, "padding must be 'VALID' or 'SAME', got '" + padding + "'");
  auto [kh, kw] = hw_of(sizes, "sizes", images);
  auto [sh, sw] = hw_of(strides, "strides", images);
  auto [rh, rw] = hw_of(rates, "rates", images);
  const Axis ah{kh, sh, rh}, aw{kw, sw, rw};
  const bool same = padding == "SAME";
  const std::int64_t h = images.dim(1), w = images.dim(2), c = images.dim(3);
  auto [oh, pad_top] = positions(h, ah, same);
  auto [ow, pad_left] = positions(w, aw, same);
  // Zero padding so that every window lies inside.
  const std::int64_t need_h = oh > 0 ? (oh - 1) * sh + ah.reach() : 0, need_w = ow > 0 ? (ow - 1) * sw + aw.reach() : 0;
  Tensor x = images;
  if (same)
    x = pad(x, {{0, 0}, {pad_top, std::max<std::int64_t>(need_h - h - pad_top, 0)},
                {pad_left, std::max<std::int64_t>(need_w - w - pad_left, 0)}});
  if (oh == 0 || ow == 0) return zeros(Shape{images.dim(0), oh, ow, kh * kw * c}, images.dtype());
  // Windows that tile the image (VALID, stride = size, no dilation): one reshape and transpose.
  if (!same && sh == kh && sw == kw && rh == 1 && rw == 1) {
    Tensor tiled = slice(x, {0, 0, 0}, {detail::kToEnd, oh * kh, ow * kw});
    Tensor blocks = reshape(tiled, Shape{images.dim(0), oh, kh, ow, kw, c});
    return reshape(ef::transpose(blocks, {0, 1, 3, 2, 4, 5}), Shape{images.dim(0), oh, ow, kh * kw * c});
  }
  // Otherwise one strided slice per window element, in TF's (row, column, channel) order.
  std::vector<Tensor> parts;
  for (std::int64_t i = 0; i < kh; ++i)
    for (std::int64_t j = 0; j < kw; ++j)
      parts.push_back(slice(x, {0, i * rh, j * rw}, {detail::kToEnd, i * rh + (oh - 1) * sh + 1, j * rw + (ow - 1) * sw + 1},
                            {1, sh, sw}));
  return parts.size() == 1 ? parts[0] : concat(parts, 3);
}

}  // namespace ef::image
