// TF's image codecs (eagerflow/io/image_codec.h): PNG round trips are exact, JPEG round trips
// close, channel conversions as TF's, BMP decoding, the JPEG header queries, and damaged or
// hostile bytes are INVALID_ARGUMENT errors, never crashes.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/eagerflow.h"
#include "eagerflow/io/image_codec.h"
#include "eagerflow/ops/image.h"

namespace {

using ef::Shape;
using ef::Tensor;

Tensor test_image(std::int64_t h, std::int64_t w, std::int64_t c) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(h * w * c));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>((i * 37 + i / 7) % 256);
  return ef::tensor(v, Shape{h, w, c});
}

std::vector<std::uint8_t> pixels(const Tensor& t) { return t.to_vector<std::uint8_t>(); }

void expect_invalid(const std::function<void()>& f) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const ef::Error& e) {
    EXPECT_EQ(e.code(), ef::ErrorCode::invalid_argument) << e.what();
  }
}

TEST(ImageCodec, PngRoundTripsExactlyForEveryChannelCount) {
  for (std::int64_t c : {1, 2, 3, 4}) {
    Tensor img = test_image(5, 7, c);
    Tensor png = ef::io::encode_png(img);
    EXPECT_EQ(png.dtype(), ef::DType::string);
    Tensor back = ef::io::decode_png(png);
    EXPECT_EQ(back.dtype(), ef::DType::uint8);
    EXPECT_EQ(back.shape(), (Shape{5, 7, c}));
    EXPECT_EQ(pixels(back), pixels(img)) << c << " channels";
    EXPECT_FALSE(ef::io::is_jpeg(png).item<bool>());
  }
  // uint16 output: TF scales 8-bit samples by 257.
  Tensor wide = ef::io::decode_png(ef::io::encode_png(test_image(2, 2, 3)), 0, ef::DType::uint16);
  EXPECT_EQ(wide.dtype(), ef::DType::uint16);
  EXPECT_EQ(wide.to_vector<std::uint16_t>()[1], static_cast<std::uint16_t>(pixels(test_image(2, 2, 3))[1] * 257));
}

TEST(ImageCodec, ChannelConversionsAsTf) {
  Tensor gray = test_image(3, 4, 1);
  Tensor rgb = ef::io::decode_png(ef::io::encode_png(gray), 3);
  EXPECT_EQ(rgb.shape(), (Shape{3, 4, 3}));
  auto g = pixels(gray), c = pixels(rgb);
  for (std::size_t i = 0; i < g.size(); ++i)
    for (int k = 0; k < 3; ++k) EXPECT_EQ(c[i * 3 + static_cast<std::size_t>(k)], g[i]);
  Tensor rgba = ef::io::decode_image(ef::io::encode_png(test_image(3, 4, 3)), 4);
  EXPECT_EQ(rgba.shape(), (Shape{3, 4, 4}));
  EXPECT_EQ(pixels(rgba)[3], 255);  // an added alpha is opaque
}

TEST(ImageCodec, JpegRoundTripIsCloseAndHeadersReadWithoutDecoding) {
  Tensor img = ef::tensor(std::vector<std::uint8_t>(16 * 24 * 3, 120), Shape{16, 24, 3});
  Tensor jpg = ef::io::encode_jpeg(img, {.quality = 100});
  EXPECT_TRUE(ef::io::is_jpeg(jpg).item<bool>());
  EXPECT_EQ(ef::io::extract_jpeg_shape(jpg).to_vector<std::int32_t>(), (std::vector<std::int32_t>{16, 24, 3}));
  EXPECT_EQ(ef::io::extract_jpeg_shape(jpg, ef::DType::int64).dtype(), ef::DType::int64);
  for (const char* dct : {"", "INTEGER_FAST", "INTEGER_ACCURATE"}) {
    Tensor back = ef::io::decode_jpeg(jpg, 0, dct);
    EXPECT_EQ(back.shape(), (Shape{16, 24, 3}));
    for (std::uint8_t v : pixels(back)) EXPECT_NEAR(v, 120, 2);
  }
  Tensor gray = ef::io::decode_jpeg(jpg, 1);
  EXPECT_EQ(gray.shape(), (Shape{16, 24, 1}));
  Tensor crop = ef::io::decode_and_crop_jpeg(jpg, ef::tensor<std::int32_t>({2, 3, 5, 6}));
  EXPECT_EQ(crop.shape(), (Shape{5, 6, 3}));
  expect_invalid([&] { ef::io::decode_and_crop_jpeg(jpg, ef::tensor<std::int32_t>({12, 3, 5, 6})); });
  // The decode ops recognize any format, as TF's do.
  EXPECT_EQ(ef::io::decode_png(jpg).shape(), (Shape{16, 24, 3}));
  EXPECT_EQ(ef::io::encode_jpeg(test_image(8, 8, 1)).dtype(), ef::DType::string);
}

TEST(ImageCodec, DecodesUncompressedBmps) {
  // A 2x2 24-bit BMP, bottom-up rows padded to 4 bytes: BGR bytes.
  std::string bmp = "BM";
  auto u32 = [&](std::uint32_t v) { for (int i = 0; i < 4; ++i) bmp.push_back(static_cast<char>((v >> (8 * i)) & 0xFF)); };
  auto u16 = [&](std::uint16_t v) { bmp.push_back(static_cast<char>(v & 0xFF)); bmp.push_back(static_cast<char>(v >> 8)); };
  u32(54 + 16); u32(0); u32(54);
  u32(40); u32(2); u32(2); u16(1); u16(24); u32(0); u32(16); u32(2835); u32(2835); u32(0); u32(0);
  // bottom row: (1,2,3) (4,5,6); top row: (7,8,9) (10,11,12) as RGB
  for (int v : {3, 2, 1, 6, 5, 4, 0, 0, 9, 8, 7, 12, 11, 10, 0, 0}) bmp.push_back(static_cast<char>(v));
  Tensor img = ef::io::decode_bmp(ef::string_scalar(bmp));
  EXPECT_EQ(img.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(pixels(img), (std::vector<std::uint8_t>{7, 8, 9, 10, 11, 12, 1, 2, 3, 4, 5, 6}));
  expect_invalid([&] { ef::io::decode_bmp(ef::string_scalar(bmp.substr(0, 60))); });
}

TEST(ImageCodec, DamagedAndHostileBytesAreErrors) {
  std::string png = std::string(ef::io::encode_png(test_image(9, 9, 3)).item<std::string_view>());
  std::string jpg = std::string(ef::io::encode_jpeg(test_image(9, 9, 3)).item<std::string_view>());
  expect_invalid([&] { ef::io::decode_image(ef::string_scalar("garbage")); });
  expect_invalid([&] { ef::io::decode_image(ef::string_scalar("")); });
  for (std::size_t cut : {9, 20, 40}) {
    expect_invalid([&] { ef::io::decode_png(ef::string_scalar(png.substr(0, cut))); });
    expect_invalid([&] { ef::io::decode_jpeg(ef::string_scalar(jpg.substr(0, cut))); });
  }
  // Bit flips anywhere: an error or an image, never a crash.
  for (std::size_t i = 0; i < png.size(); i += 7) {
    std::string bad = png;
    bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    try { ef::io::decode_png(ef::string_scalar(bad)); } catch (const ef::Error&) {}
  }
  for (std::size_t i = 0; i < jpg.size(); i += 5) {
    std::string bad = jpg;
    bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    try { ef::io::decode_jpeg(ef::string_scalar(bad)); } catch (const ef::Error&) {}
  }
  // A header claiming a huge image is refused before anything is allocated for it.
  std::string huge = "BM";
  huge.append(52, '\0');
  huge[10] = 54; huge[14] = 40; huge[18] = '\xff'; huge[19] = '\xff'; huge[20] = '\xff'; huge[21] = 0x7f;
  huge[22] = '\xff'; huge[23] = '\xff'; huge[24] = 0x7f; huge[28] = 24;
  expect_invalid([&] { ef::io::decode_bmp(ef::string_scalar(huge)); });
  EXPECT_THROW(ef::io::encode_png(ef::tensor(std::vector<float>{1.f, 2.f, 3.f}, Shape{1, 1, 3})), ef::Error);
  EXPECT_THROW(ef::io::encode_jpeg(test_image(2, 2, 2)), ef::Error);
  EXPECT_THROW(ef::io::extract_jpeg_shape(ef::string_scalar(png)), ef::Error);
}

TEST(ImageCodec, TracedDecodeReadsEachCallsBytes) {
  auto f = ef::function([](const Tensor& bytes) { return ef::io::decode_png(bytes); });
  Tensor a = ef::io::encode_png(test_image(3, 3, 1)), b = ef::io::encode_png(test_image(4, 2, 3));
  EXPECT_EQ(f(a).shape(), (Shape{3, 3, 1}));
  EXPECT_EQ(pixels(f(b)), pixels(test_image(4, 2, 3)));
  EXPECT_EQ(f.tracing_count(), 1);
  // Decoded images have a size known only at run time; resize takes them (as TF's pipelines do).
  auto g = ef::function([](const Tensor& bytes) {
    return ef::image::resize(ef::cast(ef::io::decode_png(bytes, 3), ef::DType::float32), 2, 2);
  });
  Tensor small = g(b);
  EXPECT_EQ(small.shape(), (Shape{2, 2, 3}));
  Tensor eager = ef::image::resize(ef::cast(ef::io::decode_png(b, 3), ef::DType::float32), 2, 2);
  EXPECT_EQ(small.to_vector<float>(), eager.to_vector<float>());
  EXPECT_EQ(g(a).shape(), (Shape{2, 2, 3}));
}

}  // namespace
