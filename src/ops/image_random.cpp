// ef::image's random geometry: random flips (one draw per image) and random_crop (one window
// per call), drawn with ef::random so a seeded program repeats itself; gathers and selects keep
// them differentiable in the image.
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/image.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"
#include "image_util.h"

namespace ef::image {

using namespace detail;

Tensor Draw::uniform(const Shape& shape, double lo, double hi) const {
  if (stateless) return random::stateless_uniform(shape, *seed, lo, hi, DType::float32);
  return random::uniform(shape, lo, hi, DType::float32, seed);
}

Tensor Draw::uniform_like(const Tensor& like, double lo, double hi) const {
  if (!stateless) return random::uniform_like(like, lo, hi, seed);
  if (!like.shape().is_static())
    fail(ErrorCode::invalid_argument, "image.stateless_random",
         "stateless draws need a static batch, got " + like.spec().str());
  return random::stateless_uniform(like.shape(), *seed, lo, hi, DType::float32);
}

Tensor detail::random_flip(const Tensor& image, int axis, const Draw& draw) {
  // One draw per image: uniform numbers shaped like the image with height, width and channels
  // taken to 1 ([batch, 1, 1, 1], or [1, 1, 1] for one image), so a dynamic batch works too.
  Tensor per_image = cast(slice(image, std::vector<std::int64_t>(static_cast<std::size_t>(image.rank()), 0),
                                image.rank() == 4 ? std::vector<std::int64_t>{kToEnd, 1, 1, 1}
                                                  : std::vector<std::int64_t>{1, 1, 1}),
                          DType::float32);
  Tensor u = draw.uniform_like(per_image, 0.0, 1.0);
  return where(u < 0.5, reverse_axis(image, axis), image);
}

Tensor random_flip_left_right(const Tensor& image, std::optional<std::uint64_t> seed) {
  expect_image(image, "image.random_flip_left_right");
  return random_flip(image, width_axis(image), Draw::stateful(seed));
}

Tensor random_flip_up_down(const Tensor& image, std::optional<std::uint64_t> seed) {
  expect_image(image, "image.random_flip_up_down");
  return random_flip(image, height_axis(image), Draw::stateful(seed));
}

Tensor detail::random_crop(const Tensor& value, const std::vector<std::int64_t>& size, const Draw& draw) {
  const char* op = "image.random_crop";
  if (!value.defined()) fail(op, "got an undefined tensor");
  auto sizes = [&] {
    std::string s = "[";
    for (std::size_t i = 0; i < size.size(); ++i) s += (i ? ", " : "") + std::to_string(size[i]);
    return s + "]";
  };
  if (static_cast<int>(size.size()) != value.rank())
    fail(ErrorCode::invalid_argument, op, "size " + sizes() + " needs one entry per axis of " + value.spec().str());
  for (int a = 0; a < value.rank(); ++a)
    if (size[static_cast<std::size_t>(a)] < 0 || size[static_cast<std::size_t>(a)] > value.dim(a))
      fail(ErrorCode::invalid_argument, op, "need value.shape >= size >= 0, got size " + sizes() + " for " + value.spec().str());
  // One uniform draw per axis picks the window's offset in [0, dim - size].
  Tensor draws = cast(draw.uniform(Shape{value.rank()}, 0.0, 1.0), DType::float64);
  Tensor out = value;
  for (int a = 0; a < value.rank(); ++a) {
    const std::int64_t keep = size[static_cast<std::size_t>(a)], choices = value.dim(a) - keep + 1;
    if (choices == 1) continue;
    Tensor offset = minimum(cast(floor(slice(draws, {a}, {a + 1}) * static_cast<double>(choices)), DType::int64),
                            full(Shape{1}, static_cast<double>(choices - 1), DType::int64));
    out = gather(out, arange(keep) + offset, a);
  }
  return out;
}

Tensor random_crop(const Tensor& value, const std::vector<std::int64_t>& size, std::optional<std::uint64_t> seed) {
  return detail::random_crop(value, size, Draw::stateful(seed));
}

// ---- stateless forms: the same result for a seed on every call ----
Tensor stateless_random_flip_left_right(const Tensor& image, std::uint64_t seed) {
  expect_image(image, "image.stateless_random_flip_left_right");
  return random_flip(image, width_axis(image), Draw::fixed(seed));
}
Tensor stateless_random_flip_up_down(const Tensor& image, std::uint64_t seed) {
  expect_image(image, "image.stateless_random_flip_up_down");
  return random_flip(image, height_axis(image), Draw::fixed(seed));
}
Tensor stateless_random_crop(const Tensor& value, const std::vector<std::int64_t>& size, std::uint64_t seed) {
  return detail::random_crop(value, size, Draw::fixed(seed));
}
Tensor stateless_random_brightness(const Tensor& image, double max_delta, std::uint64_t seed) {
  return detail::random_brightness(image, max_delta, Draw::fixed(seed));
}
Tensor stateless_random_contrast(const Tensor& image, double lower, double upper, std::uint64_t seed) {
  return detail::random_contrast(image, lower, upper, Draw::fixed(seed));
}
Tensor stateless_random_saturation(const Tensor& image, double lower, double upper, std::uint64_t seed) {
  return detail::random_saturation(image, lower, upper, Draw::fixed(seed));
}
Tensor stateless_random_hue(const Tensor& image, double max_delta, std::uint64_t seed) {
  return detail::random_hue(image, max_delta, Draw::fixed(seed));
}

}  // namespace ef::image
