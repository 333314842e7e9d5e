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

// The vector paths (rows over trailing axes, columns over leading axes, softmax rows) against
// a double-precision reference, with NaN and -inf placed in the vector body and in the tail.
TEST(Reduce, VectorPathsMatchDoubleReference) {
  for (std::int64_t cols : {1, 7, 16, 100, 1029, 5000}) {
    Tensor x = random::normal({3, cols});
    auto v = x.to_vector<float>();
    Tensor rs = sum(x, {1}), rm = mean(x, {1}), rx = max(x, {1}), cs = sum(x, {0}), cx = max(x, {0});
    for (std::int64_t r = 0; r < 3; ++r) {
      double s = 0, m = -INFINITY;
      for (std::int64_t c = 0; c < cols; ++c) {
        s += v[static_cast<std::size_t>(r * cols + c)];
        m = std::max(m, static_cast<double>(v[static_cast<std::size_t>(r * cols + c)]));
      }
      EXPECT_NEAR(rs.to_vector<float>()[static_cast<std::size_t>(r)], s, 1e-5 * (1 + std::fabs(s))) << cols;
      EXPECT_NEAR(rm.to_vector<float>()[static_cast<std::size_t>(r)], s / static_cast<double>(cols), 1e-6) << cols;
      EXPECT_EQ(rx.to_vector<float>()[static_cast<std::size_t>(r)], static_cast<float>(m)) << cols;
    }
    for (std::int64_t c = 0; c < cols; ++c) {
      double s = 0;
      float m = -INFINITY;
      for (std::int64_t r = 0; r < 3; ++r) {
        s += v[static_cast<std::size_t>(r * cols + c)];
        m = std::max(m, v[static_cast<std::size_t>(r * cols + c)]);
      }
      EXPECT_FLOAT_EQ(cs.to_vector<float>()[static_cast<std::size_t>(c)], static_cast<float>(s));
      EXPECT_EQ(cx.to_vector<float>()[static_cast<std::size_t>(c)], m);
    }
  }
  for (std::size_t at : {std::size_t{3}, std::size_t{40}, std::size_t{1027}}) {
    std::vector<float> v(1029, 1.0f);
    v[at] = NAN;
    Tensor x = tensor(v, {1, 1029});
    EXPECT_TRUE(std::isnan(max(x, {1}).item<float>())) << at;
    EXPECT_TRUE(std::isnan(sum(x).item<float>())) << at;
    EXPECT_TRUE(std::isnan(max(reshape(x, {1029, 1}), {0}).item<float>())) << at;
  }
  Tensor all_neg_inf = full({2, 20}, -INFINITY);
  EXPECT_EQ(max(all_neg_inf, {1}).to_vector<float>(), (std::vector<float>{-INFINITY, -INFINITY}));
  Tensor logits = random::normal({4, 37}) * 5.0f;
  Tensor sm = softmax(logits, -1), lsm = log_softmax(logits, -1);
  auto lv = logits.to_vector<float>(), sv = sm.to_vector<float>(), lsv = lsm.to_vector<float>();
  for (int r = 0; r < 4; ++r) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < 37; ++c) m = std::max(m, static_cast<double>(lv[static_cast<std::size_t>(r * 37 + c)]));
    for (int c = 0; c < 37; ++c) s += std::exp(lv[static_cast<std::size_t>(r * 37 + c)] - m);
    for (int c = 0; c < 37; ++c) {
      double want = std::exp(lv[static_cast<std::size_t>(r * 37 + c)] - m) / s;
      EXPECT_NEAR(sv[static_cast<std::size_t>(r * 37 + c)], want, 1e-6 * std::max(1.0, want * 4));
      EXPECT_NEAR(lsv[static_cast<std::size_t>(r * 37 + c)], std::log(want), 2e-6 * std::max(1.0, std::fabs(std::log(want))));
    }
  }
}
