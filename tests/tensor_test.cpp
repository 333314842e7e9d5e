#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

TEST(Tensor, FactoriesAndReadBack) {
  Tensor t = tensor({{1.f, 2.f}, {3.f, 4.f}});
  EXPECT_EQ(t.shape(), Shape({2, 2}));
  EXPECT_EQ(t.dtype(), DType::float32);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(zeros({3}, DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 0}));
  EXPECT_EQ(ones({2}, DType::float64).to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_EQ(full({2}, 7, DType::int64).to_vector<std::int64_t>(), (std::vector<std::int64_t>{7, 7}));
  EXPECT_EQ(arange(5).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1.0, 2.0, 0.25).to_vector<float>(), (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  EXPECT_EQ(scalar(3.5f).item<float>(), 3.5f);
  EXPECT_EQ(scalar(true).item<bool>(), true);
  EXPECT_EQ(zeros({0, 3}).num_elements(), 0);
}

TEST(Tensor, ReadErrors) {
  Tensor t = tensor({1.f, 2.f});
  expect_error([&] { t.item<float>(); }, {"[item]", "exactly one element", "float32[2]"});
  expect_error([&] { t.to_vector<int>(); }, {"[to_vector]", "int32", "float32"});
  expect_error([&] { tensor(std::vector<float>{1, 2, 3}, Shape{2, 2}); }, {"[tensor]", "[2,2]"});
  expect_error([] { Tensor u; u.shape(); }, {"undefined"});
  expect_error([] { tensor({{1.f, 2.f}, {3.f}}); }, {"ragged"});
}

TEST(Tensor, PrintsLikeTensorFlow) {
  EXPECT_EQ(tensor({{1.f, 2.f}}).str(), "Tensor([[1. 2.]], shape=(1, 2), dtype=float32)");
  EXPECT_EQ(tensor({1.5f, 2.f}).str(), "Tensor([1.5 2. ], shape=(2,), dtype=float32)");
  EXPECT_EQ(scalar(3.0f).str(), "Tensor(3.0, shape=(), dtype=float32)");
  EXPECT_EQ(tensor(std::vector<std::int32_t>{1, 20, 3}).str(), "Tensor([ 1 20  3], shape=(3,), dtype=int32)");
  EXPECT_EQ(tensor(std::vector<bool>{true, false}).str(), "Tensor([ True False], shape=(2,), dtype=bool)");
  EXPECT_EQ(tensor({{1.f, 2.f}, {3.f, 4.f}}).str(), "Tensor([[1. 2.]\n        [3. 4.]], shape=(2, 2), dtype=float32)");
  std::string big = arange(2000, DType::int32).str();
  EXPECT_NE(big.find("[   0    1    2 ... 1997 1998 1999]"), std::string::npos) << big;
}

TEST(Tensor, ReshapeIsAViewOfTheSameStorage) {
  Tensor t = arange(6, DType::float32);
  Tensor r = reshape(t, {2, -1});
  EXPECT_EQ(r.shape(), Shape({2, 3}));
  EXPECT_EQ(r.raw_data(), t.raw_data());
}

TEST(Random, SeededIsReproducibleAndInRange) {
  random::set_seed(42);
  auto a = random::uniform({1000}).to_vector<float>();
  auto b = random::normal({1000}, 0, 1, DType::float64).to_vector<double>();
  random::set_seed(42);
  EXPECT_EQ(random::uniform({1000}).to_vector<float>(), a);
  EXPECT_EQ(random::normal({1000}, 0, 1, DType::float64).to_vector<double>(), b);
  double mean = 0, var = 0;
  for (float v : a) { EXPECT_GE(v, 0.f); EXPECT_LT(v, 1.f); }
  for (double v : b) mean += v / 1000;
  for (double v : b) var += (v - mean) * (v - mean) / 1000;
  EXPECT_NEAR(mean, 0, 0.1);
  EXPECT_NEAR(var, 1, 0.15);
  EXPECT_EQ(random::stateless_uniform({4}, 7).to_vector<float>(), random::stateless_uniform({4}, 7).to_vector<float>());
  EXPECT_NE(random::stateless_uniform({4}, 7).to_vector<float>(), random::stateless_uniform({4}, 8).to_vector<float>());
  expect_error([] { random::uniform({2}, 0, 1, DType::int32); }, {"random.uniform", "int32"});
}

TEST(Threading, BudgetIsSettable) {
  int before = num_threads();
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  set_num_threads(before);
  expect_error([] { set_num_threads(0); }, {"set_num_threads"});
}

TEST(Shape, HighRankShapesWork) {
  Shape s{1, 2, 1, 2, 1, 2, 1, 3};  // beyond the inline capacity
  EXPECT_EQ(s.rank(), 8);
  EXPECT_EQ(s.num_elements(), 24);
  Shape copy = s;
  copy[7] = 4;
  EXPECT_EQ(s[7], 3);
  EXPECT_NE(copy, s);
  Tensor t = reshape(arange(24, DType::float32), s);
  EXPECT_EQ(t.shape().str(), "[1,2,1,2,1,2,1,3]");
  EXPECT_EQ(sum(t, {7}).shape(), Shape({1, 2, 1, 2, 1, 2, 1}));
  EXPECT_EQ(sum(t).item<float>(), 276.f);
  EXPECT_EQ(squeeze(t).shape(), Shape({2, 2, 2, 3}));
  EXPECT_EQ(transpose(t).shape(), Shape({3, 1, 2, 1, 2, 1, 2, 1}));
  EXPECT_EQ(Shape({2, kDynamic}).str(), "[2,?]");
  EXPECT_TRUE(Shape({2, kDynamic}).accepts(Shape({2, 5})));
  EXPECT_FALSE(Shape({2, kDynamic}).accepts(Shape({3, 5})));
}

TEST(Tensor, SummarizedPrintingMeasuresEveryPrintedElement) {
  std::vector<std::int32_t> v(100 * 100, 1);
  v[1 * 100 + 97] = 123456;  // printed (row 1, column 97) but not a "sampled" position
  std::string s = tensor(v, Shape{100, 100}).str();
  EXPECT_NE(s.find("123456"), std::string::npos);
  EXPECT_NE(s.find("[     1      1      1 ...      1      1      1]"), std::string::npos) << s;
  std::vector<float> f(2000, 0.5f);
  f[1998] = -1234.25f;
  std::string fs = tensor(f).str();
  EXPECT_NE(fs.find("-1.23425e+03"), std::string::npos) << fs;
}

TEST(Tensor, HugeShapesAreErrorsNotOverflows) {
  std::int64_t big = std::int64_t{1} << 40;
  ef::testing::expect_error([&] { zeros({big, big}); }, {"[tensor]", "too large"});
  ef::testing::expect_error([&] { Tensor::empty(DType::float64, Shape{big, 1 << 20}); }, {"[tensor]", "too large"});
  // 4 TiB: past what the system gives, so the allocation itself fails, as an ef::Error.
  ef::testing::expect_error([&] { one_hot(tensor(std::vector<std::int64_t>{1}), big); }, {"[tensor]", "out of memory"});
}
