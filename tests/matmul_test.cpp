#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

namespace {
std::vector<float> ref_matmul(const std::vector<float>& a, const std::vector<float>& b, int m, int k, int n) {
  std::vector<float> c(static_cast<std::size_t>(m * n), 0.f);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) s += static_cast<double>(a[static_cast<std::size_t>(i * k + p)]) * b[static_cast<std::size_t>(p * n + j)];
      c[static_cast<std::size_t>(i * n + j)] = static_cast<float>(s);
    }
  return c;
}
}  // namespace

TEST(MatMul, TwoDAndDenseCase) {
  random::set_seed(4);
  Tensor a = random::normal({5, 7}), b = random::normal({7, 3});
  expect_close(matmul(a, b).to_vector<float>(), ref_matmul(a.to_vector<float>(), b.to_vector<float>(), 5, 7, 3), 1e-4f);
  Tensor x = random::normal({60, 28, 28}), w = random::normal({28, 32});
  Tensor y = matmul(x, w);
  EXPECT_EQ(y.shape(), Shape({60, 28, 32}));
  expect_close(y.to_vector<float>(), ref_matmul(x.to_vector<float>(), w.to_vector<float>(), 60 * 28, 28, 32), 1e-4f);
}

TEST(MatMul, BatchedAndBroadcastBatches) {
  random::set_seed(5);
  Tensor a = random::normal({4, 3, 5}), b = random::normal({4, 5, 2});
  Tensor c = matmul(a, b);
  auto av = a.to_vector<float>(), bv = b.to_vector<float>(), cv = c.to_vector<float>();
  for (int i = 0; i < 4; ++i) {
    auto want = ref_matmul({av.begin() + i * 15, av.begin() + (i + 1) * 15}, {bv.begin() + i * 10, bv.begin() + (i + 1) * 10}, 3, 5, 2);
    expect_close({cv.begin() + i * 6, cv.begin() + (i + 1) * 6}, want, 1e-4f);
  }
  Tensor a2 = random::normal({3, 5});
  Tensor c2 = matmul(a2, b);  // a broadcast over b's batch
  EXPECT_EQ(c2.shape(), Shape({4, 3, 2}));
  auto c2v = c2.to_vector<float>();
  auto want2 = ref_matmul(a2.to_vector<float>(), {bv.begin() + 10, bv.begin() + 20}, 3, 5, 2);
  expect_close({c2v.begin() + 6, c2v.begin() + 12}, want2, 1e-4f);
  Tensor a3 = random::normal({2, 1, 3, 5}), b3 = random::normal({1, 4, 5, 2});
  Tensor c3 = matmul(a3, b3);
  EXPECT_EQ(c3.shape(), Shape({2, 4, 3, 2}));
  auto a3v = a3.to_vector<float>(), b3v = b3.to_vector<float>(), c3v = c3.to_vector<float>();
  // output batch (1, 2): a batch 1, b batch 2
  auto want3 = ref_matmul({a3v.begin() + 15, a3v.begin() + 30}, {b3v.begin() + 20, b3v.begin() + 30}, 3, 5, 2);
  expect_close({c3v.begin() + 6 * 6, c3v.begin() + 7 * 6}, want3, 1e-4f);
}

TEST(MatMul, OtherDtypesAndEmpty) {
  Tensor a = tensor(std::vector<double>{1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(matmul(a, a).to_vector<double>(), (std::vector<double>{7, 10, 15, 22}));
  Tensor i = tensor(std::vector<std::int32_t>{1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(matmul(i, i).to_vector<std::int32_t>(), (std::vector<std::int32_t>{7, 10, 15, 22}));
  EXPECT_EQ(matmul(zeros({0, 3}), zeros({3, 2})).shape(), Shape({0, 2}));
  EXPECT_EQ(matmul(ones({2, 0}), ones({0, 2})).to_vector<float>(), (std::vector<float>{0, 0, 0, 0}));
}

TEST(MatMul, Errors) {
  expect_error([] { matmul(zeros({60, 28, 28}), zeros({27, 32})); },
               {"[matmul] inner dimensions differ: float32[60,28,28] x float32[27,32]"});
  expect_error([] { matmul(zeros({3}), zeros({3, 2})); }, {"[matmul]", "rank >= 2"});
  expect_error([] { matmul(zeros({2, 2}), zeros({2, 2}, DType::float64)); }, {"[matmul]", "dtypes differ"});
  expect_error([] { matmul(zeros({2, 3, 4}), zeros({5, 4, 2})); }, {"[matmul]", "batch dimensions"});
}

TEST(MatMul, TransposedOperandsMatchExplicitTransposes) {
  for (DType dt : {DType::float32, DType::float64}) {
    Tensor a = cast(random::normal({2, 4, 3}, 0.0, 1.0, DType::float64, 1), dt);
    Tensor b = cast(random::normal({5, 4}, 0.0, 1.0, DType::float64, 2), dt);
    Tensor want = matmul(transpose(a, {0, 2, 1}), transpose(b));
    Tensor got = matmul(a, b, true, true);
    ASSERT_EQ(got.spec(), want.spec());
    Tensor diff = max(abs(cast(got, DType::float64) - cast(want, DType::float64)));
    EXPECT_LT(diff.item<double>(), 1e-5);
  }
  ef::testing::expect_error([] { matmul(zeros({3, 4}), zeros({3, 5}), false, false); }, {"matmul", "inner"});
  EXPECT_EQ(matmul(zeros({3, 4}), zeros({3, 5}), true, false).shape(), (Shape{4, 5}));
}
