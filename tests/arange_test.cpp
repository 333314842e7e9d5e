// ef::arange: a floating stop counts in floats (not truncated by the int64 overload), and an
// integer dtype refuses fractional bounds instead of truncating them into another range.
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

TEST(Arange, FloatingStopIsFloat32) {
  Tensor t = arange(10.0);
  EXPECT_EQ(t.dtype(), DType::float32);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  Tensor h = arange(2.5);
  EXPECT_EQ(h.dtype(), DType::float32);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(arange(2.5f, DType::float64).to_vector<double>(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(arange(4).dtype(), DType::int64);  // an integer stop keeps its int64 default
}

TEST(Arange, FractionalSteps) {
  EXPECT_EQ(arange(0.0, 1.0, 0.25).to_vector<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(arange(1.5, 4.0).to_vector<float>(), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  EXPECT_EQ(arange(3.0, 1.0, -0.5).to_vector<float>(), (std::vector<float>{3, 2.5f, 2, 1.5f}));
}

TEST(Arange, IntegerDtypeNeedsWholeNumbers) {
  expect_error([] { arange(0.0, 1.0, 0.25, DType::int32); }, {"whole numbers"});
  expect_error([] { arange(1.5, 4.0, 1.0, DType::int64); }, {"whole numbers"});
  expect_error([] { arange(0.0, 2.5, 1.0, DType::int32); }, {"whole numbers"});
  EXPECT_EQ(arange(0.0, 3.0, 1.0, DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 2}));
  expect_error([] { arange(0.0, 1.0, 0.0); }, {"step"});
}
