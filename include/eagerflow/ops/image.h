#pragma once
// ef::image: TensorFlow's tf.image functions as compositions of the op table's ops (slices,
// gathers, weighted sums, reductions), so they trace, differentiate, vmap and save as those ops
// do. Images are NHWC batches [batch, height, width, channels] or single HWC images [height,
// width, channels], as TF accepts both; heights and widths must be static. Shape errors are
// INVALID_ARGUMENT (ValueError in Python), as TF's static checks. Not in eagerflow.h (whose size is
// capped): include <eagerflow/ops/image.h>.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::image {

// ---- geometry (any dtype) ----
Tensor flip_left_right(const Tensor& image);  // reverses the width axis
Tensor flip_up_down(const Tensor& image);     // reverses the height axis
// k quarter turns counter-clockwise (k may be negative or above 3), as np.rot90 on (H, W).
Tensor rot90(const Tensor& image, int k = 1);
Tensor transpose(const Tensor& image);  // swaps height and width
// Each image (one draw per image of a batch) flipped with probability 1/2; draws with
// ef::random (the global seed and counter, or the op's seed), so a seeded program repeats.
Tensor random_flip_left_right(const Tensor& image, std::optional<std::uint64_t> seed = std::nullopt);
Tensor random_flip_up_down(const Tensor& image, std::optional<std::uint64_t> seed = std::nullopt);
// tf.image.random_crop: a window of `size` (one entry per axis of `value`, any rank) at a random
// offset, the same window for the whole call.
Tensor random_crop(const Tensor& value, const std::vector<std::int64_t>& size,
                   std::optional<std::uint64_t> seed = std::nullopt);

// ---- cropping and padding ----
// The target_height x target_width window whose top-left corner is (offset_height, offset_width).
Tensor crop_to_bounding_box(const Tensor& image, std::int64_t offset_height, std::int64_t offset_width,
                            std::int64_t target_height, std::int64_t target_width);
// The image placed at (offset_height, offset_width) inside zeros of target_height x target_width.
Tensor pad_to_bounding_box(const Tensor& image, std::int64_t offset_height, std::int64_t offset_width,
                           std::int64_t target_height, std::int64_t target_width);
// The central region keeping central_fraction (in (0, 1]) of each side, rounded as TF.
Tensor central_crop(const Tensor& image, double central_fraction);
// Centered crop where the image is larger, centered zero padding where it is smaller.
Tensor resize_with_crop_or_pad(const Tensor& image, std::int64_t target_height, std::int64_t target_width);

// tf.image.extract_patches: every sizes[1] x sizes[2] window of a 4-D batch (windows `strides`
// apart, their taps `rates` apart; each argument [1, rows, cols, 1]) flattened into the channel
// axis in (row, column, channel) order; padding "VALID" or "SAME" (zeros around).
Tensor extract_patches(const Tensor& images, const std::vector<std::int64_t>& sizes,
                       const std::vector<std::int64_t>& strides, const std::vector<std::int64_t>& rates,
                       const std::string& padding);

// ---- resizing ----
// TF2's tf.image.resize: method "bilinear", "nearest", "bicubic" (Keys, a = -0.5, weights
// renormalized at the borders, as TF) sample with half-pixel centers; "area" averages the covered
// pixels; "lanczos3", "lanczos5", "gaussian", "mitchellcubic" and antialias (bilinear, bicubic
// and those: the kernel widened when downsampling) use TF's scale_and_translate sampling. The
// result is float32 except for "nearest", which keeps the dtype. With preserve_aspect_ratio the
// image fits inside the size keeping its aspect ratio. Each axis is resampled by gathers and a
// weighted sum (H, then W).
Tensor resize(const Tensor& images, std::int64_t new_height, std::int64_t new_width,
              const std::string& method = "bilinear", bool preserve_aspect_ratio = false, bool antialias = false);
// The same for images whose height or width is known only at run time (inside a trace): one
// op, not differentiable. resize calls it for such images.
Tensor resize_unknown_size(const Tensor& images, std::int64_t new_height, std::int64_t new_width,
                           const std::string& method = "bilinear", bool preserve_aspect_ratio = false,
                           bool antialias = false);

// tf.image.crop_and_resize: for each box (y1, x1, y2, x2 in normalized coordinates, [num_boxes,
// 4]) of image box_indices[i], a crop_height x crop_width sampling (corners on the box's ends,
// "bilinear" or "nearest"), float32; samples outside the image take extrapolation_value.
Tensor crop_and_resize(const Tensor& image, const Tensor& boxes, const Tensor& box_indices, std::int64_t crop_height,
                       std::int64_t crop_width, const std::string& method = "bilinear", double extrapolation_value = 0.0);

// Resized to fit inside target_height x target_width keeping the aspect ratio, then centered in
// zero padding (TF's resize_with_pad).
Tensor resize_with_pad(const Tensor& image, std::int64_t target_height, std::int64_t target_width,
                       const std::string& method = "bilinear", bool antialias = false);

// ---- color and value adjustments ----
// Luma with TF's weights (0.2989, 0.5870, 0.1140) over the last axis (3 channels -> 1).
Tensor rgb_to_grayscale(const Tensor& images);
Tensor grayscale_to_rgb(const Tensor& images);  // 1 channel repeated to 3
// These compute in float32 and convert back to the image's dtype, as TF does.
Tensor adjust_brightness(const Tensor& image, double delta);
// (x - mean) * contrast_factor + mean, with the mean of each channel over height and width.
Tensor adjust_contrast(const Tensor& images, double contrast_factor);
// (x - mean) / max(stddev, 1 / sqrt(elements)) per image (float32): the floor keeps a uniform
// image finite.
Tensor per_image_standardization(const Tensor& image);
// TF's rule: floating images cast between floating dtypes; integer images scale by 1 / MAX to a
// float (uint8: 1 / 255), floats scale by MAX + 0.5 to an integer dtype (clamped first with
// saturate, wrapping as tf.cast without); integers rescale by a power of two (uint8 -> int32:
// * 2^23; int32 -> uint8: floor(/ 2^23)).
Tensor convert_image_dtype(const Tensor& image, DType dtype, bool saturate = false);

// ---- HSV and the hue, saturation and gamma adjustments (float32 computation, as TF) ----
// RGB in [0, 1] to hue (in [0, 1)), saturation and value over the last axis, and back.
Tensor rgb_to_hsv(const Tensor& images);
Tensor hsv_to_rgb(const Tensor& images);
// Saturation scaled by saturation_factor (clipped to [0, 1]); hue rotated by delta (in [-1, 1]).
Tensor adjust_saturation(const Tensor& image, double saturation_factor);
Tensor adjust_hue(const Tensor& image, double delta);
// gain * image^gamma (gamma >= 0).
Tensor adjust_gamma(const Tensor& image, double gamma = 1.0, double gain = 1.0);

// ---- random adjustments: one factor drawn (ef::random) for the whole call, as TF ----
Tensor random_brightness(const Tensor& image, double max_delta, std::optional<std::uint64_t> seed = std::nullopt);
Tensor random_contrast(const Tensor& image, double lower, double upper, std::optional<std::uint64_t> seed = std::nullopt);
Tensor random_saturation(const Tensor& image, double lower, double upper,
                         std::optional<std::uint64_t> seed = std::nullopt);
Tensor random_hue(const Tensor& image, double max_delta, std::optional<std::uint64_t> seed = std::nullopt);

// ---- stateless random forms (TF's stateless_random_*): the same result for a seed on every
// call, whatever else drew (TF's seed pair is one 64-bit key here; python/eagerflow/image.py
// packs the pair). The flips need a static batch. ----
Tensor stateless_random_flip_left_right(const Tensor& image, std::uint64_t seed);
Tensor stateless_random_flip_up_down(const Tensor& image, std::uint64_t seed);
Tensor stateless_random_crop(const Tensor& value, const std::vector<std::int64_t>& size, std::uint64_t seed);
Tensor stateless_random_brightness(const Tensor& image, double max_delta, std::uint64_t seed);
Tensor stateless_random_contrast(const Tensor& image, double lower, double upper, std::uint64_t seed);
Tensor stateless_random_saturation(const Tensor& image, double lower, double upper, std::uint64_t seed);
Tensor stateless_random_hue(const Tensor& image, double max_delta, std::uint64_t seed);

// ---- image quality and gradients ----
// (dy, dx) of a 4-D batch: forward differences, zero in the last row / column.
std::pair<Tensor, Tensor> image_gradients(const Tensor& image);
// The sum of absolute neighbour differences: a scalar for one image, [batch] for a batch.
Tensor total_variation(const Tensor& images);
// Peak signal-to-noise ratio per image, in float32: 20 log10(max_val) - 10 log10(mse).
Tensor psnr(const Tensor& a, const Tensor& b, double max_val);
// Structural similarity per image (float32), with a filter_size x filter_sigma Gaussian window
// (valid positions only) and TF's constants; return_index_map gives the per-position map
// (averaged over channels) instead of its mean.
Tensor ssim(const Tensor& img1, const Tensor& img2, double max_val, std::int64_t filter_size = 11,
            double filter_sigma = 1.5, double k1 = 0.01, double k2 = 0.03, bool return_index_map = false);
// Multi-scale SSIM: the images halved (2x2 means) once per power factor after the first; the
// contrast-structure means of the finer scales and the SSIM of the coarsest, raised to the
// factors and multiplied (the default factors are Wang et al.'s, as TF's).
Tensor ssim_multiscale(const Tensor& img1, const Tensor& img2, double max_val,
                       const std::vector<double>& power_factors = {0.0448, 0.2856, 0.3001, 0.2363, 0.1333},
                       std::int64_t filter_size = 11, double filter_sigma = 1.5, double k1 = 0.01, double k2 = 0.03);
// Sobel responses of a 4-D batch, [batch, height, width, channels, 2] holding (dy, dx), with
// the borders reflected, as TF's.
Tensor sobel_edges(const Tensor& image);

}  // namespace ef::image
