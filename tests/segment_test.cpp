// ef::math's segment reductions (eagerflow/ops/segment.h): values against hand computation,
// TF's empty-segment values, dropped negative ids, errors, gradients, eager == traced.
#include <eagerflow/ops/segment.h>
#include <eagerflow/function/function.h>

#include <limits>

#include "test_util.h"

namespace {

using namespace ef;
using ef::testing::expect_error;

Tensor data() { return tensor(std::vector<double>{1, -2, 3, 4, -5, 6, 0.5, 0, 2, -1}, Shape{5, 2}); }
Tensor ids(std::vector<std::int32_t> v) { return tensor(v, Shape{static_cast<std::int64_t>(v.size())}); }

TEST(Segment, UnsortedKindsMatchHandValues) {
  Tensor i = ids({2, 0, 2, -1, 0});  // row 3 is dropped, segment 1 is empty
  EXPECT_EQ(math::unsorted_segment_reduce("sum", data(), i, 3).to_vector<double>(), (std::vector<double>{5, 3, 0, 0, -4, 4}));
  EXPECT_EQ(math::unsorted_segment_reduce("mean", data(), i, 3).to_vector<double>(), (std::vector<double>{2.5, 1.5, 0, 0, -2, 2}));
  std::vector<double> prod = math::unsorted_segment_reduce("prod", data(), i, 3).to_vector<double>();  // exp(sum log): near
  std::vector<double> want_prod{6, -4, 1, 1, -5, -12};
  for (std::size_t k = 0; k < prod.size(); ++k) EXPECT_NEAR(prod[k], want_prod[k], 1e-12) << k;
  std::vector<double> mx = math::unsorted_segment_reduce("max", data(), i, 3).to_vector<double>();
  EXPECT_EQ(mx[0], 3);
  EXPECT_EQ(mx[2], std::numeric_limits<double>::lowest());  // TF's empty max
  std::vector<double> mn = math::unsorted_segment_reduce("min", data(), i, 3).to_vector<double>();
  EXPECT_EQ(mn[1], -1);
  EXPECT_EQ(mn[3], std::numeric_limits<double>::max());
  std::vector<double> sq = math::unsorted_segment_reduce("sqrt_n", data(), i, 3).to_vector<double>();
  EXPECT_NEAR(sq[0], 5 / std::sqrt(2.0), 1e-15);
  // Integer data keep their dtype.
  Tensor n = math::unsorted_segment_reduce("sum", tensor(std::vector<std::int32_t>{1, 2, 3}, Shape{3}), ids({1, 1, 0}), 2);
  EXPECT_EQ(n.dtype(), DType::int32);
  EXPECT_EQ(n.to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 3}));
}

TEST(Segment, SortedFormZeroesEmptySegmentsAndChecksOrder) {
  Tensor s = math::segment_reduce("max", data(), ids({0, 0, 2, 2, 2}));
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_EQ(s.to_vector<double>(), (std::vector<double>{3, 4, 0, 0, 2, 6}));
  expect_error([&] { math::segment_reduce("sum", data(), ids({0, 2, 1, 2, 2})); }, {"sorted"});
  expect_error([&] { math::segment_reduce("sum", data(), ids({-1, 0, 0, 0, 0})); }, {">= 0"});
  auto traced = function([](const Tensor& d, const Tensor& i) { return math::segment_reduce("sum", d, i); });
  expect_error([&] { traced(data(), ids({0, 0, 1, 1, 1})); }, {"unsorted_segment_sum"});
}

TEST(Segment, ErrorsGradientsAndTracing) {
  expect_error([&] { math::unsorted_segment_reduce("sum", data(), ids({0, 1, 5, 0, 0}), 3); }, {"num_segments"});
  expect_error([&] { math::unsorted_segment_reduce("sum", data(), ids({0, 1}), 3); }, {"leading dims"});
  expect_error([&] { math::unsorted_segment_reduce("median", data(), ids({0, 1, 0, 0, 0}), 3); }, {"kind"});
  Tensor x = data();
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(math::unsorted_segment_reduce("max", x, ids({2, 0, 2, -1, 0}), 3)), x);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 0, 1, 1, 0, 1, 0, 0, 0, 0}));
  auto f = function([](const Tensor& d, const Tensor& i) { return math::unsorted_segment_reduce("mean", d, i, 3); });
  EXPECT_EQ(f(data(), ids({2, 0, 2, -1, 0})).to_vector<double>(),
            math::unsorted_segment_reduce("mean", data(), ids({2, 0, 2, -1, 0}), 3).to_vector<double>());
}

}  // namespace
