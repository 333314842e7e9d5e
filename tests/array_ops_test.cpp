// TF's composed array functions (eagerflow/ops/array_ops.h): values against hand computation,
// gradients through the composed ones, eager-only errors in a trace.
#include <eagerflow/ops/array_ops.h>
#include <eagerflow/function/function.h>

#include <cmath>

#include "test_util.h"

namespace {

using namespace ef;
using ef::testing::expect_error;

Tensor m23() { return tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{2, 3}); }

TEST(ArrayOps, ReverseRollSplitUnstack) {
  EXPECT_EQ(reverse(m23(), {1}).to_vector<double>(), (std::vector<double>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(reverse(m23(), {0, 1}).to_vector<double>(), (std::vector<double>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(roll(m23(), {1}, {1}).to_vector<double>(), (std::vector<double>{3, 1, 2, 6, 4, 5}));
  EXPECT_EQ(roll(m23(), {-4, 1}, {1, 0}).to_vector<double>(), (std::vector<double>{5, 6, 4, 2, 3, 1}));
  std::vector<Tensor> parts = split(m23(), std::vector<std::int64_t>{1, -1}, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].to_vector<double>(), (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ(split(m23(), 3, 1).size(), 3u);
  expect_error([&] { split(m23(), 2, 1); }, {"split", "equal parts"});
  expect_error([&] { split(m23(), std::vector<std::int64_t>{1, 1}, 1); }, {"add up to 2"});
  std::vector<Tensor> rows = unstack(m23(), 1);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].shape(), (Shape{2}));
  EXPECT_EQ(rows[2].to_vector<double>(), (std::vector<double>{3, 6}));
  // The gradient of reverse is reverse; of roll, the opposite roll.
  Tensor x = m23();
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(roll(reverse(x, {1}), {1}, {1}) * tensor(std::vector<double>{1, 10, 100, 1, 10, 100}, Shape{2, 3})), x);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 100, 10, 1, 100, 10}));
}

TEST(ArrayOps, SequenceMaskAndSearchsorted) {
  Tensor lengths = tensor(std::vector<std::int32_t>{1, 3, 0}, Shape{3});
  Tensor mask = sequence_mask(lengths);
  EXPECT_EQ(mask.shape(), (Shape{3, 3}));
  EXPECT_EQ(cast(mask, DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 0, 0, 1, 1, 1, 0, 0, 0}));
  EXPECT_EQ(sequence_mask(lengths, 5, DType::float32).shape(), (Shape{3, 5}));
  Tensor seq = tensor(std::vector<double>{1, 3, 3, 7}, Shape{4});
  Tensor v = tensor(std::vector<double>{0, 3, 4, 9}, Shape{4});
  EXPECT_EQ(searchsorted(seq, v).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 3, 4}));
  EXPECT_EQ(searchsorted(seq, v, /*right=*/true).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 3, 3, 4}));
}

TEST(ArrayOps, ValueDependentOnesRunEagerly) {
  Tensor keep = greater(tensor(std::vector<double>{1, 0, 1}, Shape{3}), scalar(0.5));
  EXPECT_EQ(boolean_mask(tensor(std::vector<double>{1, 2, 3, 4, 5, 6}, Shape{3, 2}), keep).to_vector<double>(),
            (std::vector<double>{1, 2, 5, 6}));
  EXPECT_EQ(where_coordinates(m23() > 3.5).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 0, 1, 1, 1, 2}));
  Unique u = unique(tensor(std::vector<std::int32_t>{4, 1, 4, 2, 1}, Shape{5}));
  EXPECT_EQ(u.y.to_vector<std::int32_t>(), (std::vector<std::int32_t>{4, 1, 2}));
  EXPECT_EQ(u.idx.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 0, 2, 1}));
  EXPECT_EQ(u.count.to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, 2, 1}));
  Unique nans = unique(tensor(std::vector<double>{NAN, NAN, 1}, Shape{3}));
  EXPECT_EQ(nans.y.shape(), (Shape{3}));  // NaN != NaN
  auto f = function([](const Tensor& x) { return boolean_mask(x, x > 0.0); });
  expect_error([&] { f(m23()); }, {"boolean_mask", "traced"});
}

}  // namespace
