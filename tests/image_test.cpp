// ef::image (eagerflow/ops/image.h): TF's tf.image functions against index-by-index references
// written here (a double-precision half-pixel bilinear resize among them), their gradients, shape
// errors, and eager == traced.
#include <eagerflow/ops/image.h>

#include <cmath>
#include <vector>

#include "test_util.h"

namespace {

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

std::vector<double> values(const Tensor& t) { return cast(t, DType::float64).to_vector<double>(); }

// A batch [n, h, w, c] with distinct values, float32.
Tensor ramp(std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t c) {
  return reshape(arange(0.0, static_cast<double>(n * h * w * c), 1.0, DType::float32), Shape{n, h, w, c});
}

struct Nhwc {
  std::int64_t n, h, w, c;
  std::int64_t at(std::int64_t b, std::int64_t y, std::int64_t x, std::int64_t ch) const {
    return ((b * h + y) * w + x) * c + ch;
  }
};

TEST(Image, FlipsRotationsAndTransposeMoveEveryPixel) {
  Tensor x = ramp(2, 3, 4, 2);
  const Nhwc s{2, 3, 4, 2};
  std::vector<double> v = values(x), lr = values(image::flip_left_right(x)), ud = values(image::flip_up_down(x));
  std::vector<double> r1 = values(image::rot90(x)), r2 = values(image::rot90(x, 2)), r3 = values(image::rot90(x, -1));
  std::vector<double> tr = values(image::transpose(x));
  EXPECT_EQ(image::rot90(x).shape(), (Shape{2, 4, 3, 2}));
  const Nhwc t{2, 4, 3, 2};  // rotated by a quarter turn / transposed
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t y = 0; y < 3; ++y)
      for (std::int64_t xx = 0; xx < 4; ++xx)
        for (std::int64_t c = 0; c < 2; ++c) {
          const double p = v[static_cast<std::size_t>(s.at(b, y, xx, c))];
          EXPECT_EQ(lr[static_cast<std::size_t>(s.at(b, y, 3 - xx, c))], p);
          EXPECT_EQ(ud[static_cast<std::size_t>(s.at(b, 2 - y, xx, c))], p);
          EXPECT_EQ(r2[static_cast<std::size_t>(s.at(b, 2 - y, 3 - xx, c))], p);
          // np.rot90 counter-clockwise: (y, x) goes to (W - 1 - x, y); clockwise to (x, H - 1 - y).
          EXPECT_EQ(r1[static_cast<std::size_t>(t.at(b, 3 - xx, y, c))], p);
          EXPECT_EQ(r3[static_cast<std::size_t>(t.at(b, xx, 2 - y, c))], p);
          EXPECT_EQ(tr[static_cast<std::size_t>(t.at(b, xx, y, c))], p);
        }
  // One 3-D image behaves as a batch of one.
  Tensor one = slice(x, {0}, {1});
  EXPECT_EQ(values(image::rot90(squeeze(one, {0}), 5)), values(image::rot90(one, 1)));
  EXPECT_EQ(values(image::rot90(x, 4)), v);
  expect_error([&] { image::flip_left_right(zeros(Shape{3, 4})); }, {"image.flip_left_right", "3 or 4"});
}

TEST(Image, RandomFlipsFlipWholeImagesAndRepeatWithASeed) {
  Tensor x = ramp(64, 2, 3, 1);
  Tensor lr = image::random_flip_left_right(x, 7), flipped = image::flip_left_right(x);
  int flips = 0;
  for (std::int64_t b = 0; b < 64; ++b) {
    std::vector<double> got = values(slice(lr, {b}, {b + 1})), same = values(slice(x, {b}, {b + 1}));
    const bool was_flipped = got == values(slice(flipped, {b}, {b + 1}));
    EXPECT_TRUE(was_flipped || got == same) << b;
    flips += was_flipped;
  }
  EXPECT_GT(flips, 10);
  EXPECT_LT(flips, 54);
  random::set_seed(3);
  std::vector<double> first = values(image::random_flip_up_down(x, 11));
  random::set_seed(3);
  EXPECT_EQ(values(image::random_flip_up_down(x, 11)), first);
}

TEST(Image, RandomCropTakesOneWindowAtARandomOffset) {
  Tensor x = ramp(3, 6, 7, 2);
  std::vector<double> v = values(x);
  int distinct_offsets = 0;
  double first_corner = -1;
  for (int draw = 0; draw < 8; ++draw) {
    std::vector<double> got = values(image::random_crop(x, {3, 4, 5, 2}));
    // A window of a ramp: the corner fixes every other element.
    const double corner = got[0];
    const auto c = static_cast<std::int64_t>(corner);
    const std::int64_t b0 = c / 84, y0 = c / 14 % 6, x0 = c / 2 % 7;
    EXPECT_EQ(c % 2, 0);
    ASSERT_LE(y0, 2);
    ASSERT_LE(x0, 2);
    std::size_t i = 0;
    for (std::int64_t b = 0; b < 3; ++b)
      for (std::int64_t y = 0; y < 4; ++y)
        for (std::int64_t xx = 0; xx < 5; ++xx)
          for (std::int64_t ch = 0; ch < 2; ++ch) EXPECT_EQ(got[i++], v[static_cast<std::size_t>(Nhwc{3, 6, 7, 2}.at(b0 + b, y0 + y, x0 + xx, ch))]);
    if (draw == 0) first_corner = corner;
    distinct_offsets += corner != first_corner;
  }
  EXPECT_GT(distinct_offsets, 0);
  expect_error([&] { image::random_crop(x, {3, 7, 5, 2}); }, {"value.shape >= size"});
  expect_error([&] { image::random_crop(x, {3, 4}); }, {"one entry per axis"});
}

TEST(Image, StatelessFormsRepeatForAKey) {
  Tensor x = random::stateless_uniform(Shape{8, 4, 5, 3}, 2);
  auto all = [&](std::uint64_t key) {
    return std::vector<Tensor>{image::stateless_random_flip_left_right(x, key), image::stateless_random_flip_up_down(x, key),
                               image::stateless_random_crop(x, {8, 2, 3, 3}, key),
                               image::stateless_random_brightness(x, 0.3, key),
                               image::stateless_random_contrast(x, 0.2, 0.9, key),
                               image::stateless_random_saturation(x, 0.2, 0.9, key), image::stateless_random_hue(x, 0.4, key)};
  };
  std::vector<Tensor> first = all(17);
  random::uniform(Shape{4});  // a stateful draw in between changes nothing
  std::vector<Tensor> again = all(17), other = all(18);
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(values(first[i]), values(again[i])) << i;
    EXPECT_NE(values(first[i]), values(other[i])) << i;
  }
}

TEST(Image, CropPadAndCentralCrop) {
  Tensor x = ramp(1, 5, 6, 1);
  Tensor crop = image::crop_to_bounding_box(x, 1, 2, 3, 2);
  EXPECT_EQ(crop.shape(), (Shape{1, 3, 2, 1}));
  EXPECT_EQ(values(crop), (std::vector<double>{8, 9, 14, 15, 20, 21}));
  Tensor padded = image::pad_to_bounding_box(crop, 1, 0, 5, 3);
  EXPECT_EQ(padded.shape(), (Shape{1, 5, 3, 1}));
  EXPECT_EQ(values(padded), (std::vector<double>{0, 0, 0, 8, 9, 0, 14, 15, 0, 20, 21, 0, 0, 0, 0}));
  // (5 - 5 * 0.5) / 2 = 1.25 -> margin 1, rows 1..3; (6 - 3) / 2 = 1.5 -> margin 1, columns 1..4.
  Tensor center = image::central_crop(squeeze(x, {0}), 0.5);
  EXPECT_EQ(center.shape(), (Shape{3, 4, 1}));
  EXPECT_EQ(values(center)[0], 7.0);
  EXPECT_EQ(values(image::resize_with_crop_or_pad(x, 3, 8)),
            values(image::pad_to_bounding_box(image::crop_to_bounding_box(x, 1, 0, 3, 6), 0, 1, 3, 8)));
  expect_error([&] { image::crop_to_bounding_box(x, 3, 0, 3, 2); }, {"height must be >= target + offset", "[1,5,6,1]"});
  expect_error([&] { image::pad_to_bounding_box(x, 0, 2, 5, 7); }, {"width must be <= target - offset"});
  expect_error([&] { image::central_crop(x, 0.0); }, {"central_fraction"});
  expect_error([&] { image::resize_with_crop_or_pad(x, 0, 3); }, {"must be > 0"});
}

// The half-pixel bilinear resize computed pixel by pixel in double.
std::vector<double> bilinear_reference(const std::vector<double>& in, const Nhwc& s, std::int64_t oh, std::int64_t ow) {
  auto taps = [](std::int64_t o, std::int64_t n_in, std::int64_t n_out) {
    const double x = (static_cast<double>(o) + 0.5) * static_cast<double>(n_in) / static_cast<double>(n_out) - 0.5;
    const double lo = std::floor(x);
    return std::tuple{std::max<std::int64_t>(static_cast<std::int64_t>(lo), 0),
                      std::min<std::int64_t>(static_cast<std::int64_t>(std::ceil(x)), n_in - 1), x - lo};
  };
  std::vector<double> out;
  for (std::int64_t b = 0; b < s.n; ++b)
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t x = 0; x < ow; ++x)
        for (std::int64_t c = 0; c < s.c; ++c) {
          auto [y0, y1, fy] = taps(y, s.h, oh);
          auto [x0, x1, fx] = taps(x, s.w, ow);
          auto p = [&](std::int64_t yy, std::int64_t xx) { return in[static_cast<std::size_t>(s.at(b, yy, xx, c))]; };
          out.push_back((1 - fy) * ((1 - fx) * p(y0, x0) + fx * p(y0, x1)) + fy * ((1 - fx) * p(y1, x0) + fx * p(y1, x1)));
        }
  return out;
}

TEST(Image, BilinearResizeMatchesAHalfPixelReference) {
  const Nhwc s{2, 5, 7, 3};
  Tensor x = ef::testing::randn(Shape{2, 5, 7, 3}, 5, DType::float32);
  for (auto [oh, ow] : std::vector<std::pair<std::int64_t, std::int64_t>>{{9, 4}, {3, 13}, {5, 7}, {1, 1}}) {
    Tensor y = image::resize(x, oh, ow);
    EXPECT_EQ(y.shape(), (Shape{2, oh, ow, 3}));
    std::vector<double> want = bilinear_reference(values(x), s, oh, ow), got = values(y);
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 2e-6) << oh << "x" << ow << " at " << i;
  }
  // Integer images come back as float32.
  EXPECT_EQ(image::resize(cast(x, DType::int32), 4, 4).dtype(), DType::float32);
}

TEST(Image, ResizeGradientSpreadsEachOutputOverItsTaps) {
  // Doubling with half-pixel centers: every input pixel's four output neighbours per axis weigh
  // 0.75 + 0.75 + 0.25 + 0.25 = 2 (edges: clamped taps add up the same), so d sum / dx = 4.
  Tensor x = ef::testing::randn(Shape{1, 4, 5, 2}, 9, DType::float32);
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(image::resize(x, 8, 10)), x);
  for (double v : values(g)) EXPECT_NEAR(v, 4.0, 1e-5);
  // Nearest and bicubic differentiate too; bicubic's weights sum to 1 at every output.
  GradientTape tape2;
  tape2.watch(x);
  Tensor gb = tape2.gradient(sum(image::resize(x, 8, 10, "bicubic")), x);
  double total = 0;
  for (double v : values(gb)) total += v;
  EXPECT_NEAR(total, 8.0 * 10.0 * 2.0, 1e-3);
}

TEST(Image, NearestAreaAndBicubicFollowTheirRules) {
  Tensor x = ramp(1, 4, 6, 1);
  // Nearest halving picks floor((o + 0.5) * 2) = 1, 3, 5 and keeps the dtype.
  Tensor xi = cast(x, DType::int32);
  Tensor near = image::resize(xi, 2, 3, "nearest");
  EXPECT_EQ(near.dtype(), DType::int32);
  EXPECT_EQ(values(near), (std::vector<double>{7, 9, 11, 19, 21, 23}));
  // Area halving is the 2x2 average.
  expect_close(cast(image::resize(x, 2, 3, "area"), DType::float32).to_vector<float>(),
               avg_pool2d(x, {2, 2}).to_vector<float>());
  // A constant image stays constant under bicubic (its renormalized weights sum to 1), and a
  // linear ramp stays linear away from the borders.
  expect_close(image::resize(full(Shape{3, 5, 1}, 2.5), 7, 9, "bicubic").to_vector<float>(),
               std::vector<float>(63, 2.5f));
  // Antialiased halving widens the triangle kernel to [1, 3, 3, 1] / 8 (renormalized at the
  // borders): on a 1-D row 0, 1, ..., 7 the interior outputs are the centers 2.5 and 4.5.
  Tensor row = reshape(arange(0.0, 8.0, 1.0), Shape{1, 8, 1});
  std::vector<double> aa = values(image::resize(row, 1, 4, "bilinear", false, true));
  EXPECT_NEAR(aa[1], 2.5, 1e-6);
  EXPECT_NEAR(aa[2], 4.5, 1e-6);
  EXPECT_NEAR(aa[0], (0 * 3 + 1 * 3 + 2 * 1) / 7.0, 1e-6);  // the tap before 0 is dropped
  expect_error([&] { image::resize(x, 0, 2); }, {"size must be positive"});
  expect_error([&] { image::resize(x, 2, 2, "cubic"); }, {"method 'cubic'"});
  // preserve_aspect_ratio: 4x6 into 10x9 scales by min(2.5, 1.5) to 6x9.
  EXPECT_EQ(image::resize(x, 10, 9, "bilinear", true).shape(), (Shape{1, 6, 9, 1}));
}

TEST(Image, ColorAndValueAdjustments) {
  Tensor rgb = ef::testing::randn(Shape{2, 3, 4, 3}, 1, DType::float32);
  std::vector<double> v = values(rgb), gray = values(image::rgb_to_grayscale(rgb));
  ASSERT_EQ(gray.size(), v.size() / 3);
  for (std::size_t i = 0; i < gray.size(); ++i)
    EXPECT_NEAR(gray[i], 0.2989 * v[3 * i] + 0.5870 * v[3 * i + 1] + 0.1140 * v[3 * i + 2], 1e-6);
  Tensor back = image::grayscale_to_rgb(image::rgb_to_grayscale(rgb));
  EXPECT_EQ(back.shape(), rgb.shape());
  expect_error([&] { image::grayscale_to_rgb(rgb); }, {"last dimension of size 1"});

  // float64 images compute in float32 and come back as float64, as TF's.
  Tensor bright = image::adjust_brightness(cast(rgb, DType::float64), 0.25);
  EXPECT_EQ(bright.dtype(), DType::float64);
  std::vector<double> bv = values(bright);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(bv[i], v[i] + 0.25, 1e-6);

  // Contrast: each channel of each image about its own mean over height and width.
  std::vector<double> cv = values(image::adjust_contrast(rgb, 1.5));
  const Nhwc s{2, 3, 4, 3};
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t c = 0; c < 3; ++c) {
      double m = 0;
      for (std::int64_t y = 0; y < 3; ++y)
        for (std::int64_t x = 0; x < 4; ++x) m += v[static_cast<std::size_t>(s.at(b, y, x, c))] / 12;
      for (std::int64_t y = 0; y < 3; ++y)
        for (std::int64_t x = 0; x < 4; ++x) {
          const auto i = static_cast<std::size_t>(s.at(b, y, x, c));
          EXPECT_NEAR(cv[i], (v[i] - m) * 1.5 + m, 1e-5);
        }
    }

  // Standardization: zero mean, unit stddev per image; a uniform image stays finite (zeros).
  Tensor z = image::per_image_standardization(rgb);
  for (double m : values(mean(z, {1, 2, 3}))) EXPECT_NEAR(m, 0.0, 1e-6);
  for (double sd : values(sqrt(mean(square(z), {1, 2, 3})))) EXPECT_NEAR(sd, 1.0, 1e-5);
  for (double u : values(image::per_image_standardization(full(Shape{2, 2, 1}, 3.0)))) EXPECT_EQ(u, 0.0);
}

TEST(Image, HsvConversionsAndHueSaturationGammaAdjustments) {
  // Red, green, blue, grey and black: hue a third of the circle apart, greys without hue.
  Tensor rgb = tensor(std::vector<float>{1, 0, 0, 0, 0.5f, 0, 0, 0, 0.25f, 0.5f, 0.5f, 0.5f, 0, 0, 0}, Shape{5, 1, 3});
  std::vector<double> hsv = values(image::rgb_to_hsv(rgb));
  const std::vector<double> want{0, 1, 1, 1.0 / 3, 1, 0.5, 2.0 / 3, 1, 0.25, 0, 0, 0.5, 0, 0, 0};
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(hsv[i], want[i], 1e-6) << i;
  Tensor x = random::stateless_uniform(Shape{2, 3, 4, 3}, 6);
  expect_close(image::hsv_to_rgb(image::rgb_to_hsv(x)).to_vector<float>(), x.to_vector<float>(), 1e-5f);
  // A hue turn of a third maps red to green, green to blue; saturation 0 leaves the value grey.
  expect_close(image::adjust_hue(rgb, 1.0 / 3).to_vector<float>(),
               {0, 1, 0, 0, 0, 0.5f, 0.25f, 0, 0, 0.5f, 0.5f, 0.5f, 0, 0, 0}, 1e-5f);
  expect_close(image::adjust_hue(rgb, -2.0 / 3).to_vector<float>(), image::adjust_hue(rgb, 1.0 / 3).to_vector<float>(), 1e-5f);
  std::vector<double> grey = values(image::adjust_saturation(x, 0.0)), xv = values(x);
  for (std::size_t p = 0; p < grey.size(); p += 3) {
    const double v = std::max({xv[p], xv[p + 1], xv[p + 2]});
    for (std::size_t c = 0; c < 3; ++c) EXPECT_NEAR(grey[p + c], v, 1e-6);
  }
  std::vector<double> gamma = values(image::adjust_gamma(x, 2.0, 0.5));
  for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(gamma[i], 0.5 * xv[i] * xv[i], 1e-6);
  expect_error([&] { image::adjust_gamma(x, -1.0); }, {"non-negative"});
  expect_error([&] { image::rgb_to_hsv(zeros(Shape{2, 2, 4})); }, {"3 channels"});
  // The random forms draw one factor per call, within their bounds.
  std::vector<double> shifted = values(image::random_brightness(x, 0.2, 3));
  const double delta = shifted[0] - xv[0];
  EXPECT_LE(std::abs(delta), 0.2);
  for (std::size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(shifted[i] - xv[i], delta, 1e-6);
  expect_error([&] { image::random_contrast(x, 0.5, 0.5); }, {"upper must be > lower"});
  expect_error([&] { image::random_hue(x, 0.6); }, {"max_delta"});
  EXPECT_EQ(image::random_saturation(x, 0.5, 1.5, 1).shape(), x.shape());
}

TEST(Image, ResizeWithPadFitsAndCenters) {
  // 4x6 into 9x9: scale 1.5 to 6x9, padded 1 row above (floor of 1.5) and 2 below.
  Tensor x = full(Shape{1, 4, 6, 1}, 2.0);
  Tensor y = image::resize_with_pad(x, 9, 9);
  EXPECT_EQ(y.shape(), (Shape{1, 9, 9, 1}));
  std::vector<double> v = values(y);
  for (std::int64_t r = 0; r < 9; ++r) EXPECT_EQ(v[static_cast<std::size_t>(r * 9)], r >= 1 && r < 7 ? 2.0 : 0.0) << r;
}

TEST(Image, ConvertImageDtypeScalesIntegers) {
  Tensor f = tensor(std::vector<float>{0.0f, 0.5f, 1.0f}, Shape{1, 3, 1});
  Tensor i = image::convert_image_dtype(f, DType::int32);
  EXPECT_EQ(i.dtype(), DType::int32);
  EXPECT_EQ(i.to_vector<std::int32_t>()[0], 0);
  EXPECT_NEAR(static_cast<double>(i.to_vector<std::int32_t>()[1]), 1073741824.0, 128.0);
  Tensor back = image::convert_image_dtype(tensor(std::vector<std::int32_t>{0, 2147483647}, Shape{1, 2, 1}), DType::float32);
  expect_close(back.to_vector<float>(), {0.0f, 1.0f});
  EXPECT_EQ(image::convert_image_dtype(f, DType::float64).dtype(), DType::float64);
  // saturate clips to the largest float32 below 2^31, as TF's; float64 reaches INT32_MAX.
  Tensor over = tensor(std::vector<float>{1.0f, 1.5f, -1.0f}, Shape{1, 3, 1});
  EXPECT_EQ(image::convert_image_dtype(over, DType::int32, true).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{2147483520, 2147483520, -2147483647 - 1}));
  EXPECT_EQ(image::convert_image_dtype(cast(over, DType::float64), DType::int32, true).to_vector<std::int32_t>()[0],
            2147483647);
  // TF's rule for the other integers: uint8 scales by 1 / 255, floats by 255.5 (truncated), and
  // integers rescale by powers of two (uint8 -> int32 multiplies by 2^23).
  Tensor u8 = cast(tensor(std::vector<std::int32_t>{0, 128, 255}, Shape{1, 3, 1}), DType::uint8);
  expect_close(image::convert_image_dtype(u8, DType::float32).to_vector<float>(), {0.0f, 128.0f / 255.0f, 1.0f});
  EXPECT_EQ(image::convert_image_dtype(f, DType::uint8).to_vector<std::uint8_t>(), (std::vector<std::uint8_t>{0, 127, 255}));
  EXPECT_EQ(image::convert_image_dtype(u8, DType::int32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{0, 1073741824, 2139095040}));
  expect_error([&] { image::convert_image_dtype(f, DType::bool_); }, {"floating and integer"});
}

TEST(Image, GradientsVariationPsnrSsimAndSobel) {
  Tensor x = ef::testing::randn(Shape{2, 5, 6, 2}, 4, DType::float32);
  const Nhwc s{2, 5, 6, 2};
  std::vector<double> v = values(x);
  auto [dy, dx] = image::image_gradients(x);
  std::vector<double> dyv = values(dy), dxv = values(dx);
  double tv0 = 0;  // the first image's total variation
  for (std::int64_t y = 0; y < 5; ++y)
    for (std::int64_t xx = 0; xx < 6; ++xx)
      for (std::int64_t c = 0; c < 2; ++c) {
        const auto i = static_cast<std::size_t>(s.at(0, y, xx, c));
        const double want_dy = y < 4 ? v[static_cast<std::size_t>(s.at(0, y + 1, xx, c))] - v[i] : 0.0;
        const double want_dx = xx < 5 ? v[static_cast<std::size_t>(s.at(0, y, xx + 1, c))] - v[i] : 0.0;
        EXPECT_NEAR(dyv[i], want_dy, 1e-6);
        EXPECT_NEAR(dxv[i], want_dx, 1e-6);
        tv0 += std::abs(want_dy) + std::abs(want_dx);
      }
  EXPECT_NEAR(values(image::total_variation(x))[0], tv0, 1e-4);
  EXPECT_EQ(image::total_variation(squeeze(slice(x, {0}, {1}), {0})).shape(), Shape{});
  expect_error([&] { image::image_gradients(squeeze(slice(x, {0}, {1}), {0})); }, {"4-D"});

  // psnr from the mean squared error of each image.
  Tensor y = x + 0.1;
  for (double p : values(image::psnr(x, y, 2.0))) EXPECT_NEAR(p, 20 * std::log10(2.0) - 10 * std::log10(0.01), 1e-3);
  // ssim is 1 for identical images and below for different ones; the window must fit.
  Tensor big = ef::testing::randn(Shape{2, 12, 13, 3}, 8, DType::float32);
  for (double v1 : values(image::ssim(big, big, 1.0))) EXPECT_NEAR(v1, 1.0, 1e-5);
  for (double v2 : values(image::ssim(big, big * 0.5, 1.0))) EXPECT_LT(v2, 0.99);
  EXPECT_EQ(image::ssim(big, big, 1.0, 11, 1.5, 0.01, 0.03, true).shape(), (Shape{2, 2, 3}));
  expect_error([&] { image::ssim(x, x, 1.0); }, {"filter_size 11"});
  // MS-SSIM: 1 for identical images, lower for different ones; the last scale must fit the window.
  for (double m : values(image::ssim_multiscale(big, big, 1.0, {0.5, 0.5}, 5))) EXPECT_NEAR(m, 1.0, 1e-5);
  for (double m : values(image::ssim_multiscale(big, big * 0.5, 1.0, {0.5, 0.5}, 5))) EXPECT_LT(m, 0.99);
  expect_error([&] { image::ssim_multiscale(big, big, 1.0, {0.2, 0.3, 0.5}, 5); }, {"filter_size 5", "[2,3,4,3]"});

  // Sobel on a ramp that grows by 1 per row and 10 per column: interior responses 8 and 80.
  Tensor ramp2d = reshape(add(reshape(arange(0.0, 5.0, 1.0), Shape{5, 1}), reshape(arange(0.0, 60.0, 10.0), Shape{1, 6})),
                          Shape{1, 5, 6, 1});
  Tensor edges = image::sobel_edges(ramp2d);
  EXPECT_EQ(edges.shape(), (Shape{1, 5, 6, 1, 2}));
  std::vector<double> ev = values(edges);
  const std::size_t row2_col3 = (2 * 6 + 3) * 2;  // [row 2, column 3, channel 0, (dy, dx)]
  EXPECT_NEAR(ev[row2_col3], 8.0, 1e-5);
  EXPECT_NEAR(ev[row2_col3 + 1], 80.0, 1e-5);
}

TEST(Image, ExtractPatchesFlattensWindowsRowByRow) {
  Tensor x = ramp(1, 4, 4, 1);  // values 0..15, row-major
  // Non-overlapping 2x2 windows (the reshape path) and the same through strided slices (SAME).
  std::vector<double> tiles = values(image::extract_patches(x, {1, 2, 2, 1}, {1, 2, 2, 1}, {1, 1, 1, 1}, "VALID"));
  EXPECT_EQ(tiles, (std::vector<double>{0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15}));
  EXPECT_EQ(values(image::extract_patches(x, {1, 2, 2, 1}, {1, 2, 2, 1}, {1, 1, 1, 1}, "SAME")), tiles);
  // Dilated 2x2 taps two apart, windows one apart: (0, 2, 8, 10), (1, 3, 9, 11), ...
  Tensor dilated = image::extract_patches(x, {1, 2, 2, 1}, {1, 1, 1, 1}, {1, 2, 2, 1}, "VALID");
  EXPECT_EQ(dilated.shape(), (Shape{1, 2, 2, 4}));
  EXPECT_EQ(values(dilated)[4], 1.0);
  EXPECT_EQ(values(dilated)[7], 11.0);
  // SAME with stride 3 over 4 rows: 2 windows of 3 need 6 rows, so one padded row before and one
  // after: rows (-1, 0, 1) and (2, 3, 4) of column 0.
  Tensor same = image::extract_patches(x, {1, 3, 1, 1}, {1, 3, 4, 1}, {1, 1, 1, 1}, "SAME");
  EXPECT_EQ(same.shape(), (Shape{1, 2, 1, 3}));
  EXPECT_EQ(values(same), (std::vector<double>{0, 0, 4, 8, 12, 0}));
  expect_error([&] { image::extract_patches(x, {1, 2, 2}, {1, 1, 1, 1}, {1, 1, 1, 1}, "VALID"); }, {"sizes"});
}

TEST(Image, CropAndResizeSamplesBoxesAtRunTime) {
  Tensor img = ramp(2, 5, 5, 1);  // image b holds 25 b + 5 y + x
  Tensor boxes = tensor(std::vector<float>{0.0f, 0.0f, 1.0f, 1.0f, 0.25f, 0.5f, 0.75f, 1.0f, 0.5f, 0.5f, 1.5f, 1.5f}, Shape{3, 4});
  Tensor which = tensor(std::vector<std::int32_t>{1, 0, 0}, Shape{3});
  Tensor crops = image::crop_and_resize(img, boxes, which, 3, 3, "bilinear", -1.0);
  EXPECT_EQ(crops.shape(), (Shape{3, 3, 3, 1}));
  std::vector<double> v = values(crops);
  // The whole image of batch 1 at rows/cols 0, 2, 4; a ramp stays exact under bilinear sampling.
  EXPECT_EQ((std::vector<double>(v.begin(), v.begin() + 3)), (std::vector<double>{25, 27, 29}));
  EXPECT_NEAR(v[9 + 4], 5 * 2.0 + 3.0, 1e-5);  // box 2's center: y = 2, x = 3
  // Box 3 reaches past the image: samples there take the extrapolation value.
  EXPECT_NEAR(v[18], 5 * 2.0 + 2.0, 1e-5);
  EXPECT_EQ(v[26], -1.0);
  // A single sample takes the box's middle (y 2, x 3), nearest picking that pixel.
  Tensor one = image::crop_and_resize(img, slice(boxes, {1}, {2}), slice(which, {1}, {2}), 1, 1, "nearest");
  EXPECT_EQ(values(one), (std::vector<double>{5 * 2.0 + 3.0}));
  expect_error([&] { image::crop_and_resize(img, boxes, which, 0, 2); }, {"crop_size"});
}

TEST(Image, TracedEqualsEagerAndVmapBatchesImages) {
  Tensor x = ef::testing::randn(Shape{2, 6, 5, 3}, 2, DType::float32);
  auto all = [](const Tensor& a) {
    return std::vector<Tensor>{image::flip_left_right(a), image::rot90(a, 3), image::resize(a, 9, 4),
                               image::resize(a, 3, 2, "area"), image::resize(a, 7, 7, "bicubic"),
                               image::central_crop(a, 0.6), image::rgb_to_grayscale(a),
                               image::per_image_standardization(a), image::sobel_edges(a), image::total_variation(a)};
  };
  std::vector<Tensor> eager = all(x);
  auto f = function([&](const std::vector<Tensor>& xs) { return all(xs[0]); });
  std::vector<Tensor> traced = f(std::vector<Tensor>{x});
  ASSERT_EQ(traced.size(), eager.size());
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(values(traced[i]), values(eager[i])) << i;
  // vmap over single images gives the batch's result.
  Tensor mapped = vmap([](const Tensor& img) { return image::resize(image::flip_up_down(img), 4, 8); })(x);
  expect_close(mapped.to_vector<float>(), image::resize(image::flip_up_down(x), 4, 8).to_vector<float>());
}

}  // namespace
