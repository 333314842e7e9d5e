// ef::image's differences and quality measures: image_gradients, total_variation, psnr, ssim and
// sobel_edges. The filters are separable, so each is a few shifted slices weighted and summed
// along height, then along width (no convolution op needed, any floating dtype).
#include <cmath>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/ops.h"
#include "image_util.h"

namespace ef::image {
namespace {

using detail::slice_axis;

// x[i + 1] - x[i] along `axis` (one fewer element).
Tensor forward_difference(const Tensor& x, int axis) {
  return slice_axis(x, axis, 1, detail::kToEnd) - slice_axis(x, axis, 0, -1);
}

// Valid correlation with `weights` along `axis`: out[i] = sum_k weights[k] * x[i + k].
Tensor correlate_valid(const Tensor& x, int axis, const std::vector<double>& weights) {
  const auto taps = static_cast<std::int64_t>(weights.size());
  const std::int64_t n = x.dim(axis) - taps + 1;
  Tensor total;
  for (std::int64_t k = 0; k < taps; ++k) {
    const double w = weights[static_cast<std::size_t>(k)];
    if (w == 0.0) continue;
    Tensor term = slice_axis(x, axis, k, k + n);
    if (w != 1.0) term = term * w;
    total = total.defined() ? total + term : term;
  }
  return total;
}

void expect_same_images(const Tensor& a, const Tensor& b, const char* op) {
  if (!a.defined() || !b.defined()) fail(op, "got an undefined tensor");
  if (a.rank() < 3 || a.shape() != b.shape())
    fail(ErrorCode::invalid_argument, op,
         "expects two images of one shape with at least 3 dimensions, got " + a.spec().str() + " and " + b.spec().str());
}

// An image and its maximum value in float32, as TF's convert_image_dtype makes them.
Tensor float_image(const Tensor& x) { return convert_image_dtype(x, DType::float32); }
Tensor float_max(const Tensor& like, double max_val) { return float_image(scalar_like(like, max_val)); }

// The normalized 1-D Gaussian window; TF's 2-D window (a softmax of the summed squares) is its
// outer product with itself.
std::vector<double> gaussian_window(std::int64_t size, double sigma) {
  std::vector<double> g(static_cast<std::size_t>(size));
  double total = 0.0;
  for (std::int64_t i = 0; i < size; ++i) {
    const double c = static_cast<double>(i) - static_cast<double>(size - 1) / 2.0;
    g[static_cast<std::size_t>(i)] = std::exp(-0.5 * c * c / (sigma * sigma));
    total += g[static_cast<std::size_t>(i)];
  }
  for (double& v : g) v /= total;
  return g;
}

}  // namespace

std::pair<Tensor, Tensor> image_gradients(const Tensor& image) {
  const char* op = "image.image_gradients";
  if (!image.defined()) fail(op, "got an undefined tensor");
  if (image.rank() != 4)
    fail(ErrorCode::invalid_argument, op, "expects a 4-D tensor [batch, height, width, depth], got " + image.spec().str());
  // Forward differences padded with a zero row (column) at the end, so they keep the image's shape.
  Tensor dy = pad(forward_difference(image, 1), {{0, 0}, {0, 1}});
  Tensor dx = pad(forward_difference(image, 2), {{0, 0}, {0, 0}, {0, 1}});
  return {dy, dx};
}

Tensor total_variation(const Tensor& images) {
  detail::expect_image(images, "image.total_variation");
  const int h = detail::height_axis(images), w = detail::width_axis(images);
  std::vector<int> axes;  // every axis of one image, the image axes of a batch
  if (images.rank() == 4) axes = {1, 2, 3};
  return sum(abs(forward_difference(images, h)), axes) + sum(abs(forward_difference(images, w)), axes);
}

Tensor psnr(const Tensor& a, const Tensor& b, double max_val) {
  const char* op = "image.psnr";
  expect_same_images(a, b, op);
  Tensor mse = mean(square(float_image(a) - float_image(b)), {-3, -2, -1});
  const double ten_over_ln10 = 10.0 / std::log(10.0);
  return log(float_max(a, max_val)) * (2.0 * ten_over_ln10) - log(mse) * ten_over_ln10;
}

Tensor ssim(const Tensor& img1, const Tensor& img2, double max_val, std::int64_t filter_size, double filter_sigma,
            double k1, double k2, bool return_index_map) {
  const char* op = "image.ssim";
  expect_same_images(img1, img2, op);
  const std::int64_t h = img1.dim(-3), w = img1.dim(-2);
  if (filter_size <= 0 || h < filter_size || w < filter_size)
    fail(ErrorCode::invalid_argument, op,
         "the images' height and width must be at least filter_size " + std::to_string(filter_size) + ", got " +
             img1.spec().str());
  const std::vector<double> window = gaussian_window(filter_size, filter_sigma);
  auto blur = [&](const Tensor& x) { return correlate_valid(correlate_valid(x, img1.rank() - 3, window), img1.rank() - 2, window); };
  Tensor x = float_image(img1), y = float_image(img2), mv = float_max(img1, max_val);
  Tensor c1 = square(mv * k1), c2 = square(mv * k2);
  // Luminance and contrast-structure terms from local means, (co)variances of the window.
  Tensor mean_x = blur(x), mean_y = blur(y);
  Tensor num0 = mean_x * mean_y * 2.0;
  Tensor den0 = square(mean_x) + square(mean_y);
  Tensor luminance = (num0 + c1) / (den0 + c1);
  Tensor num1 = blur(x * y) * 2.0;
  Tensor den1 = blur(square(x) + square(y));
  Tensor cs = (num1 - num0 + c2) / (den1 - den0 + c2);
  Tensor map = luminance * cs;
  if (return_index_map) return mean(map, {-1});
  return mean(mean(map, {-3, -2}), {-1});
}

Tensor sobel_edges(const Tensor& image) {
  const char* op = "image.sobel_edges";
  if (!image.defined()) fail(op, "got an undefined tensor");
  if (image.rank() != 4)
    fail(ErrorCode::invalid_argument, op, "expects a 4-D tensor [batch, height, width, channels], got " + image.spec().str());
  // Sobel = a [1, 2, 1] smoothing along one axis times a [-1, 0, 1] difference along the other.
  Tensor padded = pad(image, {{0, 0}, {1, 1}, {1, 1}, {0, 0}}, "reflect");
  const std::vector<double> smooth{1.0, 2.0, 1.0}, diff{-1.0, 0.0, 1.0};
  Tensor dy = correlate_valid(correlate_valid(padded, 1, diff), 2, smooth);
  Tensor dx = correlate_valid(correlate_valid(padded, 1, smooth), 2, diff);
  return stack({dy, dx}, -1);
}

}  // namespace ef::image
