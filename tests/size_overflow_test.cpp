// Products of user-given sizes that do not fit int64 are errors, never wrapped small sizes:
// image sizes, up-sampling factors, transposed-convolution output lengths, range counts and
// enumerate indices, with shapes like [2^32, 2^32], [2^62, 4] and negative dims.
#include <eagerflow/data/dataset.h>

#include <limits>

#include "core/checked.h"
#include "test_util.h"

namespace {

using ef::Shape;
using ef::Tensor;
using ef::data::Dataset;
using ef::testing::expect_error;

constexpr std::int64_t k32 = std::int64_t{1} << 32, k62 = std::int64_t{1} << 62;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST(SizeOverflow, CheckedProducts) {
  EXPECT_EQ(ef::checked_mul(k32, k32), std::nullopt);
  EXPECT_EQ(ef::checked_mul(k62, 4), std::nullopt);
  EXPECT_EQ(ef::checked_mul(-1, 4), std::nullopt);
  EXPECT_EQ(ef::checked_mul(k32, k32 / 2 - 1), k32 * (k32 / 2 - 1));
  EXPECT_EQ(ef::checked_product({k62, 4}), std::nullopt);
  EXPECT_EQ(ef::checked_product({k32, k32, 0}), 0);
  EXPECT_EQ(ef::checked_product({3, -2}), std::nullopt);
  EXPECT_EQ(ef::checked_product({1 << 14, 1 << 14}, 1 << 28), 1 << 28);
  EXPECT_EQ(ef::checked_product({(1 << 14) + 1, 1 << 14}, 1 << 28), std::nullopt);
}

TEST(SizeOverflow, ImageFolderSizesWhoseProductWraps) {
  auto dir = ef::testing::fresh_temp_dir("overflow_images");
  for (auto size : {std::pair{k32, k32}, std::pair{k62, std::int64_t{4}}, std::pair{std::int64_t{2} * k32, k32 / 2},
                    std::pair{kMax, kMax}, std::pair{std::int64_t{-4}, std::int64_t{-4}}, std::pair{std::int64_t{1} << 15, std::int64_t{1} << 14}})
    expect_error([&] { Dataset::image_folder(dir.string(), {.channels = 1, .image_size = size}); },
                 {"image_folder", "image_size", "2^28"});
}

TEST(SizeOverflow, UpSamplingFactorsWhoseOutputWraps) {
  Tensor x = ef::zeros({1, 4, 4, 1});
  for (auto size : {ef::Stride2{k62, 4}, ef::Stride2{4, k62}, ef::Stride2{k32, k32}, ef::Stride2{kMax, 1}})
    for (const char* mode : {"nearest", "bilinear"}) {
      ef::nn::UpSampling2D up(size, mode);
      expect_error([&] { up(x); }, {"size", "2^31"});
    }
  ef::nn::UpSampling2D fine({3, 2});
  EXPECT_EQ(fine(x).shape(), Shape({1, 12, 8, 1}));
}

TEST(SizeOverflow, TransposedConvolutionOutputLengths) {
  EXPECT_EQ(ef::nn::Conv2DTranspose::output_length(4, 3, 2, false), 9);
  EXPECT_EQ(ef::nn::Conv2DTranspose::output_length(4, 3, 2, true), 8);
  expect_error([] { ef::nn::Conv2DTranspose::output_length(4, 2, k62, true); }, {"conv2d_transpose", "does not fit"});
  expect_error([] { ef::nn::Conv2DTranspose::output_length(kMax / 2 + 1, 5, 2, false); }, {"does not fit"});
  ef::nn::Conv2DTranspose layer(1, {2, 2}, {.strides = {k62, 1}});
  expect_error([&] { layer(ef::zeros({1, 4, 4, 1})); }, {"conv2d_transpose", "does not fit"});
}

TEST(SizeOverflow, RangeCountsAndValuesDoNotWrap) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(Dataset::range(kMin, kMax).cardinality(), kMax);  // 2^64 - 1 elements: saturated, not "infinite"
  EXPECT_EQ(Dataset::range(kMax, kMin, -1).cardinality(), kMax);
  std::vector<std::int64_t> got;
  for (const auto& e : Dataset::range(kMin, kMax, k62)) got.push_back(e.tensor().item<std::int64_t>());
  EXPECT_EQ(got, (std::vector<std::int64_t>{kMin, -k62, 0, k62}));
  expect_error([] { Dataset::range(0, k32, 1, ef::DType::int32); }, {"int32"});
  expect_error([] { Dataset::range(-k32, 0, 1, ef::DType::int32); }, {"int32"});
  EXPECT_EQ(Dataset::range(0, 1 << 30, 1 << 29, ef::DType::int32).cardinality(), 2);
}

TEST(SizeOverflow, EnumerateIndicesPastInt64AreAnError) {
  expect_error([] { Dataset::range(3).enumerate(kMax); }, {"enumerate", "2^63 - 2"});
  expect_error([] { Dataset::range(3).enumerate(kMax - 2); }, {"enumerate", "2^63 - 2"});
  std::vector<std::int64_t> indices;
  for (const auto& e : Dataset::range(3).enumerate(kMax - 3)) indices.push_back(e[0].item<std::int64_t>());
  EXPECT_EQ(indices, (std::vector<std::int64_t>{kMax - 3, kMax - 2, kMax - 1}));
  EXPECT_EQ(Dataset::range(3).enumerate(-5).cardinality(), 3);
}

}  // namespace
