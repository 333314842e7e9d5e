#include <limits>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

TEST(ShapeOps, ReshapeTransposeExpandSqueeze) {
  Tensor x = reshape(arange(6, DType::float32), {2, 3});
  EXPECT_EQ(reshape(x, {-1}).shape(), Shape({6}));
  expect_error([&] { reshape(x, {4, -1}); }, {"[reshape]", "float32[2,3]", "[4,-1]"});
  expect_error([&] { reshape(x, {-1, -1}); }, {"[reshape]", "one -1"});
  expect_error([&] { reshape(x, {5}); }, {"[reshape]", "6 elements"});
  Tensor t = transpose(x);
  EXPECT_EQ(t.shape(), Shape({3, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor y = reshape(arange(24, DType::int32), {2, 3, 4});
  Tensor p = transpose(y, {1, 2, 0});
  EXPECT_EQ(p.shape(), Shape({3, 4, 2}));
  EXPECT_EQ(p.to_vector<std::int32_t>()[1], 12);
  EXPECT_EQ(p.to_vector<std::int32_t>()[2], 1);
  expect_error([&] { transpose(y, {0, 0, 1}); }, {"[transpose]", "repeats"});
  EXPECT_EQ(expand_dims(x, -1).shape(), Shape({2, 3, 1}));
  EXPECT_EQ(expand_dims(x, 0).shape(), Shape({1, 2, 3}));
  EXPECT_EQ(squeeze(zeros({1, 2, 1})).shape(), Shape({2}));
  EXPECT_EQ(squeeze(zeros({1, 2, 1}), {-1}).shape(), Shape({1, 2}));
  expect_error([] { squeeze(zeros({1, 2}), {1}); }, {"[squeeze]", "size 2"});
}

TEST(ShapeOps, ConcatAndStack) {
  Tensor a = reshape(arange(4, DType::float32), {2, 2}), b = reshape(arange(2, DType::float32), {2, 1});
  Tensor c = concat({a, b}, 1);
  EXPECT_EQ(c.shape(), Shape({2, 3}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0, 1, 0, 2, 3, 1}));
  EXPECT_EQ(concat({a, a}, 0).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(concat({a, zeros({0, 2})}, 0).shape(), Shape({2, 2}));
  expect_error([&] { concat({a, b}, 0); }, {"[concat]", "float32[2,2]", "float32[2,1]"});
  Tensor s = stack({tensor({1.f, 2.f}), tensor({3.f, 4.f})}, 1);
  EXPECT_EQ(s.shape(), Shape({2, 2}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 3, 2, 4}));
  EXPECT_EQ(stack({a, a}, -1).shape(), Shape({2, 2, 2}));
  expect_error([&] { stack({a, b}); }, {"[stack]", "same shape"});
}

TEST(ShapeOps, SliceWithStrides) {
  Tensor x = reshape(arange(12, DType::int64), {3, 4});
  EXPECT_EQ(slice(x, {1}, {3}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(slice(x, {0, 1}, {3, 4}, {2, 2}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 3, 9, 11}));
  EXPECT_EQ(slice(x, {-1, 0}, {100, -2}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{8, 9}));
  EXPECT_EQ(slice(arange(5), {4}, {-100}, {-1}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{4, 3, 2, 1, 0}));
  EXPECT_EQ(slice(arange(5), {3}, {1}).shape(), Shape({0}));
  expect_error([&] { slice(x, {0}, {1}, {0}); }, {"[slice]", "zero"});
  expect_error([&] { slice(x, {0, 0, 0}, {1, 1, 1}); }, {"[slice]", "int64[3,4]"});
}

TEST(ShapeOps, GatherAndOneHot) {
  Tensor x = reshape(arange(6, DType::float32), {3, 2});
  Tensor idx = tensor(std::vector<std::int32_t>{2, 0, 2});
  EXPECT_EQ(gather(x, idx).to_vector<float>(), (std::vector<float>{4, 5, 0, 1, 4, 5}));
  EXPECT_EQ(gather(x, tensor(std::vector<std::int64_t>{1}), 1).to_vector<float>(), (std::vector<float>{1, 3, 5}));
  EXPECT_EQ(gather(x, reshape(idx, {3, 1})).shape(), Shape({3, 1, 2}));
  expect_error([&] { gather(x, tensor(std::vector<std::int32_t>{3})); }, {"[gather]", "index 3", "[0, 3)"});
  expect_error([&] { gather(x, tensor({1.f})); }, {"[gather]", "int32 or int64"});
  Tensor oh = one_hot(tensor(std::vector<std::int64_t>{0, 2, 5, -1}), 3);
  EXPECT_EQ(oh.shape(), Shape({4, 3}));
  EXPECT_EQ(oh.to_vector<float>(), (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}));
}

TEST(ShapeOps, ExtremeSliceAndReshapeArgumentsAreSafe) {
  Tensor x = arange(10);
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(slice(x, {0}, {big}, {big}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0}));
  EXPECT_EQ(slice(x, {9}, {-big}, {-big}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{9}));
  EXPECT_EQ(slice(x, {-big}, {big}, {3}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(slice(reshape(x, {2, 5}), {1, 0}, {2, 5}, {big, big}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{5}));
  EXPECT_EQ(slice(reshape(x, {2, 5}), {1, 0}, {2, 5}, {big, big}).to_vector<std::int64_t>(), (std::vector<std::int64_t>{5}));
  ef::testing::expect_error([&] { slice(x, {0}, {1}, {std::numeric_limits<std::int64_t>::min()}); }, {"[slice]", "stride"});
  ef::testing::expect_error([&] { reshape(x, {std::int64_t{1} << 40, std::int64_t{1} << 40}); }, {"[reshape]", "too many"});
}
