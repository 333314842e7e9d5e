#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

TEST(Reduce, SumMeanMaxMinOverAxes) {
  Tensor x = reshape(arange(24, DType::float32), {2, 3, 4});
  EXPECT_EQ(sum(x).item<float>(), 276.f);
  EXPECT_EQ(sum(x, {0}).to_vector<float>(), (std::vector<float>{12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34}));
  EXPECT_EQ(sum(x, {-1}).to_vector<float>(), (std::vector<float>{6, 22, 38, 54, 70, 86}));
  EXPECT_EQ(sum(x, {0, 2}).to_vector<float>(), (std::vector<float>{60, 92, 124}));
  EXPECT_EQ(sum(x, {1}, true).shape(), Shape({2, 1, 4}));
  EXPECT_EQ(sum(x, {1}).to_vector<float>(), (std::vector<float>{12, 15, 18, 21, 48, 51, 54, 57}));
  EXPECT_EQ(mean(x, {2}).to_vector<float>(), (std::vector<float>{1.5, 5.5, 9.5, 13.5, 17.5, 21.5}));
  EXPECT_EQ(max(x, {1}).to_vector<float>(), (std::vector<float>{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_EQ(min(x, {0, 1}).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(sum(reshape(arange(6, DType::int32), {2, 3}), {1}).to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 12}));
}

TEST(Reduce, RandomAgainstReference) {
  random::set_seed(3);
  Tensor x = random::normal({7, 5, 6});
  auto v = x.to_vector<float>();
  std::vector<float> want(7 * 6, 0.f);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 5; ++j)
      for (int k = 0; k < 6; ++k) want[static_cast<std::size_t>(i * 6 + k)] += v[static_cast<std::size_t>((i * 5 + j) * 6 + k)];
  expect_close(sum(x, {1}).to_vector<float>(), want, 1e-5f);
}

TEST(Reduce, EmptyAndNaN) {
  EXPECT_EQ(sum(zeros({0, 3}), {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<float>()));
  EXPECT_EQ(max(zeros({0})).item<float>(), -INFINITY);
  EXPECT_TRUE(std::isnan(max(tensor({1.f, std::nanf(""), 3.f})).item<float>()));
  EXPECT_TRUE(std::isnan(sum(tensor({1.f, std::nanf("")})).item<float>()));
  expect_error([] { sum(zeros({2, 3}), {2}); }, {"[sum]", "axis 2", "rank 2"});
  expect_error([] { sum(zeros({2, 3}), {1, -1}); }, {"[sum]", "twice"});
}

TEST(ArgMax, PicksFirstMaximumAndNaN) {
  Tensor x = tensor({{1.f, 5.f, 5.f}, {7.f, 0.f, 2.f}});
  EXPECT_EQ(argmax(x, -1).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(argmax(x, 0).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 0}));
  EXPECT_EQ(argmax(x, 1, true).shape(), Shape({2, 1}));
  EXPECT_EQ(argmax(x).dtype(), DType::int64);
  EXPECT_EQ(argmax(tensor({1.f, std::nanf(""), 3.f})).item<std::int64_t>(), 1);
  expect_error([] { argmax(zeros({2, 0}), 1); }, {"[argmax]", "empty"});
}

TEST(Softmax, StableAndNormalized) {
  Tensor x = tensor({{1000.f, 1001.f, 1002.f}, {-1.f, 0.f, 1.f}});
  auto s = softmax(x).to_vector<float>();
  expect_close(s, {0.09003057f, 0.24472847f, 0.66524096f, 0.09003057f, 0.24472847f, 0.66524096f});
  expect_close(log_softmax(x).to_vector<float>(), {-2.4076059f, -1.4076059f, -0.4076059f, -2.4076059f, -1.4076059f, -0.4076059f});
  auto s0 = softmax(x, 0).to_vector<float>();
  EXPECT_NEAR(s0[0] + s0[3], 1.f, 1e-6f);
  expect_error([] { softmax(zeros({2}, DType::int32)); }, {"[softmax]", "int32"});
}
