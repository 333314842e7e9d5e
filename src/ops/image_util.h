#pragma once
// Helpers shared by the ef::image files (image.cpp, image_resize.cpp, image_quality.cpp).
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/core/tensor.h"

namespace ef::image::detail {

inline constexpr std::int64_t kToEnd = std::numeric_limits<std::int64_t>::max();

// Fails unless `image` is a 3-D image or a 4-D batch (TF's rank check).
inline void expect_image(const Tensor& image, const char* op) {
  if (!image.defined()) fail(op, "got an undefined tensor");
  if (image.rank() != 3 && image.rank() != 4)
    fail(ErrorCode::invalid_argument, op,
         "'image' must be either 3 or 4 dimensions ([height, width, channels] or [batch, height, width, "
         "channels]), got " + image.spec().str());
}

inline int height_axis(const Tensor& image) { return image.rank() - 3; }
inline int width_axis(const Tensor& image) { return image.rank() - 2; }

// [begin, end) along one axis, every other axis whole.
Tensor slice_axis(const Tensor& x, int axis, std::int64_t begin, std::int64_t end);
// x with `axis` reversed (a slice with step -1).
Tensor reverse_axis(const Tensor& x, int axis);

// Where a random image op draws: ef::random's stream (the global seed and counter, or the op's
// seed) or, for the stateless_* forms, a fixed key that gives the same numbers on every call.
struct Draw {
  std::optional<std::uint64_t> seed;
  bool stateless = false;
  static Draw stateful(std::optional<std::uint64_t> s) { return {s, false}; }
  static Draw fixed(std::uint64_t key) { return {key, true}; }
  // float32 uniform numbers in [lo, hi): of `shape`, or shaped like `like` (a stateless draw
  // needs like's shape static).
  Tensor uniform(const Shape& shape, double lo, double hi) const;
  Tensor uniform_like(const Tensor& like, double lo, double hi) const;
};

// The random forms over a Draw (image_random.cpp, image_color.cpp).
Tensor random_flip(const Tensor& image, int axis, const Draw& draw);
Tensor random_crop(const Tensor& value, const std::vector<std::int64_t>& size, const Draw& draw);
Tensor random_brightness(const Tensor& image, double max_delta, const Draw& draw);
Tensor random_contrast(const Tensor& image, double lower, double upper, const Draw& draw);
Tensor random_saturation(const Tensor& image, double lower, double upper, const Draw& draw);
Tensor random_hue(const Tensor& image, double max_delta, const Draw& draw);

// The adjustments by a float32 scalar tensor (a random draw for the random_* forms).
Tensor brightness_by(const Tensor& image, const Tensor& delta);
Tensor contrast_by(const Tensor& images, const Tensor& contrast_factor);
Tensor saturation_by(const Tensor& image, const Tensor& saturation_factor);
Tensor hue_by(const Tensor& image, const Tensor& delta);

}  // namespace ef::image::detail
