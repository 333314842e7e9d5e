#include "eagerflow/nn/reshaping.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/checked.h"

namespace ef::nn {
namespace {

void expect_images(const Layer& layer, const Tensor& x) {
  if (x.rank() != 4)
    fail(layer.name(), "expects inputs of rank 4 [batch, height, width, channels], got " + x.spec().str());
}

// Nearest: output row o reads input row o / size.
Tensor nearest_indices(std::int64_t in, std::int64_t size) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(in * size));
  for (std::size_t o = 0; o < idx.size(); ++o) idx[o] = static_cast<std::int64_t>(o) / size;
  return tensor(idx);
}

// Bilinear with half-pixel centers (TF's resize, Keras' ops.image.resize): output o samples
// the input at (o + 0.5) / size - 0.5, between rows clamped to the image.
Tensor bilinear_axis(const Tensor& x, int axis, std::int64_t size) {
  std::int64_t in = x.shape()[axis], out = in * size;
  std::vector<std::int64_t> lo(out), hi(out);
  std::vector<double> frac(out);
  for (std::int64_t o = 0; o < out; ++o) {
    double src = (static_cast<double>(o) + 0.5) / static_cast<double>(size) - 0.5;
    double fl = std::floor(src);
    frac[o] = src - fl;
    auto i = static_cast<std::int64_t>(fl);
    lo[o] = std::clamp<std::int64_t>(i, 0, in - 1);
    hi[o] = std::clamp<std::int64_t>(i + 1, 0, in - 1);
  }
  std::vector<std::int64_t> wshape{1, 1, 1, 1};
  wshape[axis] = out;
  Tensor w = cast(tensor(frac, Shape(wshape)), x.dtype());
  Tensor a = gather(x, tensor(lo), axis), b = gather(x, tensor(hi), axis);
  return a + (b - a) * w;
}

void expect_padding(std::int64_t v, const char* side, const Padding2D& p) {
  if (v < 0)
    fail("zero_padding2d", std::string("padding must be >= 0, got ") + side + " " + std::to_string(v) + " in ((" +
                               std::to_string(p.top) + ", " + std::to_string(p.bottom) + "), (" + std::to_string(p.left) +
                               ", " + std::to_string(p.right) + "))");
}

// `before` and `after` zeros on one axis of x, whatever the other dims are (also dynamic ones).
Tensor pad_axis(const Tensor& x, int axis, std::int64_t before, std::int64_t after) {
  if (before == 0 && after == 0) return x;
  constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> begin(4, 0), end(4, kEnd);
  end[axis] = 1;
  // One zero row of x's other dims (a sum over at most one row: also right for an empty axis).
  Tensor row = sum(zeros_like(slice(x, begin, end)), {axis}, /*keepdims=*/true);
  std::vector<Tensor> parts;
  auto block = [&](std::int64_t n) {
    std::vector<std::int64_t> dims(4, kDynamic);
    dims[axis] = n;
    return broadcast_to(row, Shape(dims));
  };
  if (before > 0) parts.push_back(block(before));
  parts.push_back(x);
  if (after > 0) parts.push_back(block(after));
  return concat(parts, axis);
}

}  // namespace

// ---------------------------------------------------------------- UpSampling2D
UpSampling2D::UpSampling2D(Stride2 size, std::string interpolation, std::string name)
    : Layer(std::move(name)), size_(size), interpolation_(std::move(interpolation)) {
  if (size.h < 1 || size.w < 1)
    fail("up_sampling2d", "size must be >= 1, got (" + std::to_string(size.h) + ", " + std::to_string(size.w) + ")");
  std::transform(interpolation_.begin(), interpolation_.end(), interpolation_.begin(), ::tolower);
  if (interpolation_ != "nearest" && interpolation_ != "bilinear")
    fail("up_sampling2d", "interpolation must be \"nearest\" or \"bilinear\", got \"" + interpolation_ + "\"");
}

Tensor UpSampling2D::call(const Tensor& inputs) {
  expect_images(*this, inputs);
  if (inputs.shape()[1] == kDynamic || inputs.shape()[2] == kDynamic)
    fail(name(), "needs a known height and width, got " + inputs.spec().str());
  // The index tables are made before any tensor: their sizes are checked first (a wrapped
  // product would be a small table and a wrong shape).
  constexpr std::int64_t kMaxLength = std::int64_t{1} << 31;
  std::optional<std::int64_t> oh = checked_product({inputs.shape()[1], size_.h}, kMaxLength),
                              ow = checked_product({inputs.shape()[2], size_.w}, kMaxLength);
  if (!oh || !ow)
    fail(name(), "size (" + std::to_string(size_.h) + ", " + std::to_string(size_.w) + ") makes an image of more than 2^31 rows or columns from " +
                     inputs.spec().str());
  if (interpolation_ == "nearest") {
    Tensor y = size_.h == 1 ? inputs : gather(inputs, nearest_indices(inputs.shape()[1], size_.h), 1);
    return size_.w == 1 ? y : gather(y, nearest_indices(inputs.shape()[2], size_.w), 2);
  }
  if (!is_floating(inputs.dtype()))
    fail(kWrongType, name(), "bilinear interpolation needs a floating-point input, got " + inputs.spec().str());
  if (inputs.shape()[1] == 0 || inputs.shape()[2] == 0) return inputs;
  return bilinear_axis(bilinear_axis(inputs, 1, size_.h), 2, size_.w);
}

// ---------------------------------------------------------------- ZeroPadding2D
ZeroPadding2D::ZeroPadding2D(std::int64_t padding, std::string name)
    : ZeroPadding2D(Padding2D{padding, padding, padding, padding}, std::move(name)) {}

ZeroPadding2D::ZeroPadding2D(std::int64_t height, std::int64_t width, std::string name)
    : ZeroPadding2D(Padding2D{height, height, width, width}, std::move(name)) {}

ZeroPadding2D::ZeroPadding2D(Padding2D padding, std::string name) : Layer(std::move(name)), padding_(padding) {
  expect_padding(padding.top, "top", padding);
  expect_padding(padding.bottom, "bottom", padding);
  expect_padding(padding.left, "left", padding);
  expect_padding(padding.right, "right", padding);
}

Tensor ZeroPadding2D::call(const Tensor& inputs) {
  expect_images(*this, inputs);
  Tensor y = pad_axis(inputs, 1, padding_.top, padding_.bottom);
  return pad_axis(y, 2, padding_.left, padding_.right);
}

}  // namespace ef::nn
