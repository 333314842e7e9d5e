// Shapes known only at run time: ef::shape and friends, reshape/expand_dims/squeeze/stack on
// dynamic dims, and the error for reading a dynamic dim.
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {
FunctionOptions dynamic_signature(Shape s) {
  return FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, std::move(s)}}};
}
}  // namespace

TEST(RuntimeShape, ShapeAndSizeOps) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_EQ(shape(x).to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(size(x).item<std::int64_t>(), 24);
  auto f = function([](const Tensor& t) { return shape(t); }, dynamic_signature({kDynamic, 3}));
  EXPECT_EQ(f(zeros({5, 3})).to_vector<std::int64_t>(), (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(f(zeros({1, 3})).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 3}));
  // The mean over a dynamic batch, written with the runtime size.
  auto m = function([](const Tensor& t) { return sum(t) / cast(size(t), DType::float32); }, dynamic_signature({kDynamic, 3}));
  EXPECT_FLOAT_EQ(m(ones({4, 3}) * 2.0f).item<float>(), 2.0f);
  EXPECT_EQ(m.tracing_count(), 1);
}

TEST(RuntimeShape, ReadingADynamicDimIsAnErrorThatPointsToShape) {
  Tensor x = ones({3, 3, 3});
  EXPECT_EQ(x.dim(0), 3);
  auto f = function([](const Tensor& t) { return sum(t) / static_cast<float>(t.dim(0)); },
                    dynamic_signature({kDynamic, 3, 3}));
  expect_error([&] { f(x); }, {"dim", "dynamic", "float32[?,3,3]", "ef::shape"});
  EXPECT_EQ(f.tracing_count(), 0);
  // Static dims of a partly dynamic tensor are still readable.
  auto g = function([](const Tensor& t) { return t * static_cast<float>(t.dim(-1)); }, dynamic_signature({kDynamic, 3}));
  EXPECT_EQ(g(ones({2, 3})).to_vector<float>(), std::vector<float>(6, 3.0f));
}

TEST(RuntimeShape, ReshapeWithADynamicBatch) {
  auto flatten = function([](const Tensor& t) { return reshape(t, {-1, 784}); }, dynamic_signature({kDynamic, 28, 28}));
  auto cf = flatten.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 28, 28}});
  EXPECT_EQ(cf->graph().values[static_cast<std::size_t>(cf->graph().outputs[0])].spec.shape, (Shape{kDynamic, 784}));
  EXPECT_EQ(flatten(zeros({5, 28, 28})).shape(), (Shape{5, 784}));
  EXPECT_EQ(flatten(zeros({1, 28, 28})).shape(), (Shape{1, 784}));
  expect_error([&] { reshape(zeros({2, 3}), {-1, 4}); }, {"reshape", "float32[2,3]"});
}

TEST(RuntimeShape, ExpandSqueezeStackWithSeveralDynamicDims) {
  auto f = function(
      [](const Tensor& t) {
        Tensor e = expand_dims(t, 1);                 // [?,1,?]
        Tensor s = squeeze(e, {1});                   // [?,?]
        return stack({s, t * 2.0f}, -1);              // [?,?,2]
      },
      dynamic_signature({kDynamic, kDynamic}));
  Tensor out = f(ones({2, 3}));
  EXPECT_EQ(out.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(f(ones({4, 1})).shape(), (Shape{4, 1, 2}));
  EXPECT_EQ(f.tracing_count(), 1);
  expect_error([] { squeeze(zeros({2, 3}), {0}); }, {"squeeze", "axis 0", "2"});
}

TEST(RuntimeShape, LikeOpsFollowTheRuntimeShape) {
  auto f = function(
      [](const Tensor& x, const Tensor& b) {
        Tensor spread = broadcast_like(b, x);         // [3] -> [?,3]
        return sum_to(spread + zeros_like(x) + ones_like(x), b) + full_like(b, 0.5);
      },
      FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 3}}, {DType::float32, {3}}}});
  Tensor r = f(ones({4, 3}), tensor({1.0f, 2.0f, 3.0f}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{8.5f, 12.5f, 16.5f}));  // 4 rows of (b + 1), plus 0.5
  EXPECT_EQ(broadcast_to(tensor({1.0f, 2.0f}), {3, 2}).to_vector<float>(), (std::vector<float>{1, 2, 1, 2, 1, 2}));
  expect_error([] { broadcast_to(zeros({3}), {2, 4}); }, {"broadcast_to", "[3]", "[2,4]"});
  expect_error([] { sum_to(zeros({2, 3}), zeros({4})); }, {"sum_to"});
}
