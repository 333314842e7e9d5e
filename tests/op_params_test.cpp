// OpParams: one typed parameter list per op, from which printing, equality and the saved form
// derive.
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

TEST(OpParams, PrintsAndReadsBackEveryType) {
  OpParams p;
  p.add("axes", std::vector<int>{1})
      .add_flag("keepdims", true)
      .add_flag("never", false)
      .add("value", -0.1)
      .add("depth", 3)
      .add("shape", Shape({kDynamic, 3}))
      .add("dtype", DType::int64)
      .add("message", std::string("a \"quoted\"\nline"))
      .add("padding", Word{"same"});
  std::string text = p.str();
  EXPECT_EQ(text, "axes=(1,) keepdims=True value=-0.1 depth=3 shape=[?,3] dtype=int64 message=\"a \\\"quoted\\\"\\nline\" "
                  "padding=same");
  OpParams back = OpParams::parse(text, "test");
  EXPECT_EQ(back.axes("axes"), std::vector<int>{1});
  EXPECT_TRUE(back.flag("keepdims"));
  EXPECT_FALSE(back.flag("never"));
  EXPECT_EQ(back.real("value"), -0.1);
  EXPECT_EQ(back.integer("depth"), 3);
  EXPECT_EQ(back.shape("shape"), Shape({kDynamic, 3}));
  EXPECT_EQ(back.dtype("dtype"), DType::int64);
  EXPECT_EQ(back.text("message"), "a \"quoted\"\nline");
  EXPECT_EQ(back.word("padding"), "same");
  // Typed reads of typed values, too.
  EXPECT_EQ(p.real("value"), -0.1);
  EXPECT_EQ(p.ints("axes"), std::vector<std::int64_t>{1});
}

TEST(OpParams, BadTextIsAnErrorNamingWhere) {
  expect_error([] { OpParams::parse("axes=(1,", "node 3 (sum)"); }, {"node 3 (sum)", "unclosed bracket"});
  expect_error([] { OpParams::parse("a=1 a=2", "w"); }, {"'a' given twice"});
  OpParams p = OpParams::parse("depth=x dtype=quint8 axis=99999999", "node 1 (one_hot)");
  expect_error([&] { p.integer("depth"); }, {"node 1 (one_hot)", "'x' is not an integer"});
  expect_error([&] { p.dtype("dtype"); }, {"unknown dtype 'quint8'"});
  expect_error([&] { p.axis("axis"); }, {"out of range"});
  expect_error([&] { p.real("missing"); }, {"missing parameter 'missing'"});
}

TEST(OpParams, EqualityComparesRealsByBits) {
  EXPECT_TRUE(OpParams().add("v", 0.5) == OpParams().add("v", 0.5));
  EXPECT_FALSE(OpParams().add("v", 0.0) == OpParams().add("v", -0.0));
  EXPECT_FALSE(OpParams().add("v", 1) == OpParams().add("v", 1.0));  // an integer is not a real
  EXPECT_FALSE(OpParams().add("a", 1) == OpParams().add("b", 1));
}

TEST(OpParams, CommonSubexpressionsMergeByParameters) {
  auto f = function([](const Tensor& x) {
    return std::vector<Tensor>{sum(x, {0}), sum(x, {0}), sum(x, {1}), mean(x, {0}), full_like(x, 0.0), full_like(x, -0.0)};
  });
  auto cf = f.get_concrete_function(TensorSpec{DType::float32, {2, 3}});
  std::map<std::string, int> ops;
  for (const auto& n : cf->graph().nodes) ops[std::string(n.op->name()) + "[" + n.op->attrs() + "]"]++;
  EXPECT_EQ(ops["sum[axes=(0,)]"], 1) << "two equal sums merge";
  EXPECT_EQ(ops["sum[axes=(1,)]"], 1);
  EXPECT_EQ(ops["mean[axes=(0,)]"], 1) << "the name tells sum from mean";
  EXPECT_EQ(ops["zeros_like[]"] + ops["full_like[value=-0]"], 2) << "0.0 and -0.0 fill different tensors";
}
