// ef::image's differences and quality measures: image_gradients, total_variation, psnr, ssim and
// sobel_edges. The filters are separable, so each is a few shifted slices weighted and summed
// along height, then along width (no convolution op needed, any floating dtype).
#include <cmath>
#include <string>
#include <utility>
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

namespace {

struct SsimOptions {
  std::int64_t filter_size;
  double filter_sigma, k1, k2;
};

// SSIM's two per-position maps of float32 images [..., H', W', C] (valid window positions): the
// full index (luminance times contrast-structure) and the contrast-structure term alone.
struct SsimMaps {
  Tensor index, cs;
};

SsimMaps ssim_maps(const Tensor& x, const Tensor& y, const Tensor& max_val, const SsimOptions& o, const char* op) {
  if (o.filter_size <= 0 || x.dim(-3) < o.filter_size || x.dim(-2) < o.filter_size)
    fail(ErrorCode::invalid_argument, op,
         "the images' height and width must be at least filter_size " + std::to_string(o.filter_size) + ", got " +
             x.spec().str());
  const std::vector<double> window = gaussian_window(o.filter_size, o.filter_sigma);
  auto blur = [&](const Tensor& t) { return correlate_valid(correlate_valid(t, t.rank() - 3, window), t.rank() - 2, window); };
  Tensor c1 = square(max_val * o.k1), c2 = square(max_val * o.k2);
  // Luminance and contrast-structure terms from local means, (co)variances of the window.
  Tensor mean_x = blur(x), mean_y = blur(y);
  Tensor num0 = mean_x * mean_y * 2.0;
  Tensor den0 = square(mean_x) + square(mean_y);
  Tensor luminance = (num0 + c1) / (den0 + c1);
  Tensor num1 = blur(x * y) * 2.0;
  Tensor den1 = blur(square(x) + square(y));
  Tensor cs = (num1 - num0 + c2) / (den1 - den0 + c2);
  return {luminance * cs, cs};
}

// Halves height and width by 2x2 means (MS-SSIM's scales), odd sizes first padded by mirroring
// the last row / column, as TF's.
Tensor halve(const Tensor& x) {
  const int h = x.rank() - 3, w = x.rank() - 2;
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings(static_cast<std::size_t>(x.rank()), {0, 0});
  paddings[static_cast<std::size_t>(h)].second = x.dim(h) % 2;
  paddings[static_cast<std::size_t>(w)].second = x.dim(w) % 2;
  Tensor p = pad(x, paddings, "symmetric");
  auto pairs = [](const Tensor& t, int axis) {
    std::vector<std::int64_t> b(static_cast<std::size_t>(axis + 1), 0), e(b.size(), detail::kToEnd), s(b.size(), 1);
    s.back() = 2;
    Tensor even = slice(t, b, e, s);
    b.back() = 1;
    return even + slice(t, b, e, s);
  };
  return pairs(pairs(p, h), w) * 0.25;
}

}  // namespace

Tensor ssim(const Tensor& img1, const Tensor& img2, double max_val, std::int64_t filter_size, double filter_sigma,
            double k1, double k2, bool return_index_map) {
  const char* op = "image.ssim";
  expect_same_images(img1, img2, op);
  SsimMaps maps = ssim_maps(float_image(img1), float_image(img2), float_max(img1, max_val),
                            {filter_size, filter_sigma, k1, k2}, op);
  if (return_index_map) return mean(maps.index, {-1});
  return mean(mean(maps.index, {-3, -2}), {-1});
}

Tensor ssim_multiscale(const Tensor& img1, const Tensor& img2, double max_val, const std::vector<double>& power_factors,
                       std::int64_t filter_size, double filter_sigma, double k1, double k2) {
  const char* op = "image.ssim_multiscale";
  expect_same_images(img1, img2, op);
  if (power_factors.empty()) fail(ErrorCode::invalid_argument, op, "needs at least one power factor");
  Tensor x = float_image(img1), y = float_image(img2), mv = float_max(img1, max_val);
  // The contrast-structure means of the finer scales and the full index of the coarsest, each
  // (clamped at 0) raised to its scale's power, multiplied.
  Tensor product;
  for (std::size_t k = 0; k < power_factors.size(); ++k) {
    if (k > 0) {
      x = halve(x);
      y = halve(y);
    }
    SsimMaps maps = ssim_maps(x, y, mv, {filter_size, filter_sigma, k1, k2}, op);
    const bool coarsest = k + 1 == power_factors.size();
    Tensor term = relu(mean(coarsest ? maps.index : maps.cs, {-3, -2}));
    term = pow(term, scalar_like(term, power_factors[k]));
    product = product.defined() ? product * term : term;
  }
  return mean(product, {-1});
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
