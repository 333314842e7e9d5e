// Issue 18's ops for sequence models: values against NumPy/TF (numbers embedded below were
// printed by NumPy 1.26 / TensorFlow 2.x in the peer virtualenv, ~/.cache/eagerflow/peers, from
// the inputs written next to them) or naive loops; errors; traced with dynamic dims; ONNX.
// Gradients, traced-vs-eager and save/load of every op: the op table (tests/op_table.h).
#include <eagerflow/function/function.h>
#include <eagerflow/saving/onnx.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;
using ef::testing::expect_tensor_near;

namespace {

// x = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 2
Tensor x34() { return reshape(arange(0.0, 12.0, 1.0), {3, 4}) * 0.5f - 2.0f; }

std::vector<float> values(const Tensor& t) { return cast(t, DType::float32).to_vector<float>(); }

}  // namespace

TEST(SequenceOps, TrilTriuMatchNumPy) {
  // np.tril(np.ones((3, 4)), -1), np.triu(np.ones((3, 4)), 2)
  expect_close(values(tril(ones({3, 4}), -1)), {0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0});
  expect_close(values(triu(ones({3, 4}), 2)), {0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0});
  // Batched, every offset, every dtype: against the definition.
  Tensor x = ef::testing::randn({2, 4, 5}, 3);
  for (std::int64_t k : {-5, -2, 0, 1, 4, 7}) {
    Tensor lo = tril(x, k), up = triu(x, k);
    auto xv = x.to_vector<double>(), lv = lo.to_vector<double>(), uv = up.to_vector<double>();
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t i = 0; i < 4; ++i)
        for (std::int64_t j = 0; j < 5; ++j) {
          std::size_t at = static_cast<std::size_t>((b * 4 + i) * 5 + j);
          EXPECT_EQ(lv[at], j - i <= k ? xv[at] : 0.0) << k;
          EXPECT_EQ(uv[at], j - i >= k ? xv[at] : 0.0) << k;
        }
  }
  // A causal mask as bool; huge offsets do not overflow.
  Tensor mask = tril(ones({3, 3}, DType::bool_));
  EXPECT_EQ(mask.to_vector<bool>(), (std::vector<bool>{true, false, false, true, true, false, true, true, true}));
  EXPECT_EQ(values(tril(ones({2, 2}), INT64_MAX)), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(values(triu(ones({2, 2}), INT64_MIN)), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(values(tril(ones({2, 2}), INT64_MIN)), (std::vector<float>{0, 0, 0, 0}));
  expect_error([] { tril(ones({4})); }, {"tril", "rank >= 2", "float32[4]"});
}

TEST(SequenceOps, RoundingIsHalfToEven) {
  Tensor x = tensor({-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 2.4999f, -0.7f});
  // np.round of the same values
  expect_close(values(round(x)), {-2, -2, -0, 0, 2, 2, 2, -1});
  expect_close(values(floor(x)), {-3, -2, -1, 0, 1, 2, 2, -1});
  expect_close(values(ceil(x)), {-2, -1, -0, 1, 2, 3, 3, -0});
  EXPECT_TRUE(std::signbit(round(tensor({-0.5f})).item<float>()));
  EXPECT_EQ(round(tensor(std::vector<std::int64_t>{3, -4})).to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, -4}));
  EXPECT_TRUE(std::isnan(floor(tensor({NAN})).item<float>()));
  expect_error([] { floor(ones({2}, DType::bool_)); }, {"floor", "bool"});
  // No gradient (TF's rule).
  Tensor v = tensor({0.3f, 1.7f});
  GradientTape tape;
  tape.watch(v);
  EXPECT_FALSE(tape.gradient(sum(round(v)), v).defined());
}

TEST(SequenceOps, ClipByValue) {
  Tensor x = tensor({-3.0f, -1.0f, 0.0f, 2.0f, NAN});
  Tensor y = clip(x, -1.0, 1.5);
  expect_close(values(y), {-1, -1, 0, 1.5f, NAN});
  // NumPy's order when lo > hi: the upper bound wins.
  expect_close(values(clip(x, 2.0, 1.0)), {1, 1, 1, 1, NAN});
  // Tensor bounds broadcast.
  expect_close(values(clip(reshape(arange(0.0, 6.0, 1.0), {2, 3}), tensor({1.0f, 0.0f, 2.0f}), scalar(4.0f))), {1, 1, 2, 3, 4, 4});
  EXPECT_EQ(clip(tensor(std::vector<std::int32_t>{-9, 5, 9}), -2, 7).to_vector<std::int32_t>(), (std::vector<std::int32_t>{-2, 5, 7}));
  // The gradient passes inside [lo, hi], bounds included (tf.clip_by_value).
  Tensor v = tensor({-2.0f, -1.0f, 0.5f, 1.5f, 3.0f});
  GradientTape tape;
  tape.watch(v);
  Tensor g = tape.gradient(sum(clip(v, -1.0, 1.5) * 2.0f), v);
  expect_close(values(g), {0, 2, 2, 2, 0});
  expect_error([] { clip(ones({2}), NAN, 1.0); }, {"clip", "NaN"});
}

TEST(SequenceOps, AnyAll) {
  Tensor b = tensor(std::vector<bool>{true, false, false, false, false, false}, Shape{2, 3});
  EXPECT_EQ(any(b).item<bool>(), true);
  EXPECT_EQ(all(b).item<bool>(), false);
  EXPECT_EQ(any(b, {1}).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(any(b, {0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(all(logical_not(b), {-1}).to_vector<bool>(), (std::vector<bool>{false, true}));
  // Nonzero is true; NumPy's empty reductions.
  EXPECT_EQ(all(tensor({1.0f, -2.0f, NAN})).item<bool>(), true);
  EXPECT_EQ(any(zeros({0, 3})).item<bool>(), false);
  EXPECT_EQ(all(zeros({0, 3})).item<bool>(), true);
  EXPECT_EQ(any(zeros({0, 3}), {0}).to_vector<bool>(), (std::vector<bool>{false, false, false}));
  expect_error([] { any(ones({2, 2}), {2}); }, {"any", "axis"});
  expect_error([] { all(ones({2, 2}), {1, -1}); }, {"all", "listed twice"});
}

TEST(SequenceOps, WhereAndComparisonsWithScalars) {
  Tensor x = tensor({1.0f, 2.0f, 3.0f, 2.0f});
  EXPECT_EQ((x == 2).to_vector<bool>(), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ((2.0 == x).to_vector<bool>(), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ((x != 2).to_vector<bool>(), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ((3 != x).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
  Tensor ids = tensor(std::vector<std::int64_t>{0, 5, 0});
  EXPECT_EQ((ids != 0).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  Tensor c = x > 1.5;
  expect_close(values(where(c, x, 0.0)), {0, 2, 3, 2});
  expect_close(values(where(c, -1.0, x)), {1, -1, -1, -1});
  Tensor both = where(c, 1.0, 0.0);
  EXPECT_EQ(both.dtype(), DType::float32);
  expect_close(values(both), {0, 1, 1, 1});
  EXPECT_EQ(where(c, 1.0, 0.0, DType::int64).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 1, 1, 1}));
  // The attention mask idiom: masked scores to a large negative number.
  Tensor scores = zeros({2, 2}), causal = tril(ones({2, 2}, DType::bool_));
  expect_close(values(where(causal, scores, -1e9)), {0, -1e9f, 0, 0});
  expect_error([] { where(ones({2}), ones({2}), 0.0); }, {"where", "condition must be bool"});
  expect_error([] { where(ones({2}, DType::bool_), Tensor(), 0.0); }, {"where", "undefined"});
}

TEST(SequenceOps, PadMatchesNumPyAndTf) {
  Tensor x = x34();
  // np.pad(x, ((2, 1), (3, 0)), mode="reflect") (tf.pad REFLECT agrees)
  expect_close(values(pad(x, {{2, 1}, {3, 0}}, "reflect")),
               {3.5f, 3.0f, 2.5f, 2.0f, 2.5f, 3.0f, 3.5f, 1.5f, 1.0f, 0.5f, 0.0f, 0.5f, 1.0f, 1.5f, -0.5f, -1.0f, -1.5f, -2.0f, -1.5f, -1.0f, -0.5f,
                1.5f, 1.0f, 0.5f, 0.0f, 0.5f, 1.0f, 1.5f, 3.5f, 3.0f, 2.5f, 2.0f, 2.5f, 3.0f, 3.5f, 1.5f, 1.0f, 0.5f, 0.0f, 0.5f, 1.0f, 1.5f});
  // np.pad(x, ((0, 3), (2, 4)), mode="symmetric")
  Tensor s = pad(x, {{0, 3}, {2, 4}}, "SYMMETRIC");
  EXPECT_EQ(s.shape(), (Shape{6, 10}));
  expect_close(values(slice(s, {0}, {2})), {-1.5f, -2.0f, -2.0f, -1.5f, -1.0f, -0.5f, -0.5f, -1.0f, -1.5f, -2.0f,
                                              0.5f, 0.0f, 0.0f, 0.5f, 1.0f, 1.5f, 1.5f, 1.0f, 0.5f, 0.0f});
  expect_close(values(slice(s, {5}, {6})), {-1.5f, -2.0f, -2.0f, -1.5f, -1.0f, -0.5f, -0.5f, -1.0f, -1.5f, -2.0f});
  // Constant, with a value; fewer pairs than axes pad the leading axes only.
  Tensor c = pad(tensor({{1.0f, 2.0f}}), {{1, 0}}, "constant", 7.0);
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  expect_close(values(c), {7, 7, 1, 2});
  EXPECT_EQ(pad(tensor(std::vector<std::int32_t>{4}), {{1, 1}}).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 4, 0}));
  expect_error([&] { pad(x, {{3, 0}, {0, 0}}, "reflect"); }, {"pad", "reflect", "at most 2", "[3,4]"});
  expect_error([&] { pad(x, {{0, 4}, {0, 0}}, "symmetric"); }, {"pad", "at most 3"});
  expect_error([&] { pad(x, {{-1, 0}}); }, {"pad", ">= 0"});
  expect_error([&] { pad(x, {{0, 0}, {0, 0}, {1, 1}}); }, {"pad", "3 pairs", "rank 2"});
  expect_error([&] { pad(x, {{0, 0}}, "edge"); }, {"pad", "mode", "edge"});
}

TEST(SequenceOps, TileAndRepeat) {
  Tensor x = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  expect_close(values(tile(x, {1, 2})), {1, 2, 1, 2, 3, 4, 3, 4});
  expect_close(values(tile(x, {2, 1})), {1, 2, 3, 4, 1, 2, 3, 4});
  EXPECT_EQ(tile(x, {0, 3}).shape(), (Shape{0, 6}));
  // np.repeat(np.array([[1, 2], [3, 4]]), [1, 2], axis=0) == [[1, 2], [3, 4], [3, 4]]
  expect_close(values(repeat(x, std::vector<std::int64_t>{1, 2}, 0)), {1, 2, 3, 4, 3, 4});
  expect_close(values(repeat(x, 2, -1)), {1, 1, 2, 2, 3, 3, 4, 4});
  expect_close(values(repeat(x, 2)), {1, 1, 2, 2, 3, 3, 4, 4});  // no axis: flattened
  EXPECT_EQ(repeat(x, 2).shape(), (Shape{8}));
  expect_error([&] { tile(x, {2}); }, {"tile", "one multiple per axis"});
  expect_error([&] { tile(x, {-1, 1}); }, {"tile", ">= 0"});
  expect_error([&] { repeat(x, std::vector<std::int64_t>{1, 2, 3}, 1); }, {"repeat", "3 repeat counts", "size 2"});
  expect_error([&] { repeat(x, -1, 0); }, {"repeat", ">= 0"});
  expect_error([&] { repeat(x, 1, 2); }, {"repeat", "axis"});
  // Gradients are sums: tile's adds up the copies.
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(sum(tile(x, {2, 3}) * 1.0f), x);
  expect_close(values(g), {6, 6, 6, 6});
}

TEST(SequenceOps, CumulativeMatchesTf) {
  Tensor x = x34();
  // tf.math.cumsum(x, axis=1, exclusive=True, reverse=True)
  expect_close(values(cumsum(x, 1, true, true)), {-3.0f, -1.5f, -0.5f, 0.0f, 3.0f, 2.5f, 1.5f, 0.0f, 9.0f, 6.5f, 3.5f, 0.0f});
  // tf.math.cumprod(x, axis=0, exclusive=True)
  expect_close(values(cumprod(x, 0, true)), {1, 1, 1, 1, -2.0f, -1.5f, -1.0f, -0.5f, -0.0f, -0.75f, -1.0f, -0.75f});
  // Against a running sum along axis 0 of a 3-D tensor.
  Tensor y = ef::testing::randn({3, 2, 4}, 5);
  auto yv = y.to_vector<double>(), cv = cumsum(y, 0).to_vector<double>();
  for (std::size_t i = 0; i < 8; ++i) {
    double acc = 0;
    for (std::size_t t = 0; t < 3; ++t) {
      acc += yv[t * 8 + i];
      EXPECT_NEAR(cv[t * 8 + i], acc, 1e-12);
    }
  }
  EXPECT_EQ(cumsum(tensor(std::vector<std::int64_t>{1, 2, 3})).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 3, 6}));
  // cumprod's gradient, tf.GradientTape on
  //   x = [[0.5, 2.0, -1.5], [1.5, 0.25, 3.0]] (float64), loss = sum(cumprod(x, 1, exclusive, reverse) * w),
  //   w = [[1, 2, 3], [4, 5, 6]]  ->  [[0, -1.5, 4], [0, 12, 6]]
  Tensor v = cast(tensor({{0.5f, 2.0f, -1.5f}, {1.5f, 0.25f, 3.0f}}), DType::float64);
  Tensor w = cast(tensor({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}}), DType::float64);
  GradientTape tape;
  tape.watch(v);
  expect_tensor_near(tape.gradient(sum(cumprod(v, 1, true, true) * w), v),
                     cast(tensor({{0.0f, -1.5f, 4.0f}, {0.0f, 12.0f, 6.0f}}), DType::float64), 1e-12);
  // With zeros the gradient stays exact (no division). Reference: jax.grad (float64) of
  //   sum(cumprod-with-flags(x) * w2) at x = [[2, 0, 3, -1.5], [0, 0.5, 0, 4]],
  //   w2 = [[1, -2, 0.5, 3], [2, 1, -1, 0.25]] (exclusive/reverse built from jnp.cumprod).
  Tensor z = cast(tensor({{2.0f, 0.0f, 3.0f, -1.5f}, {0.0f, 0.5f, 0.0f, 4.0f}}), DType::float64);
  Tensor w2 = cast(tensor({{1.0f, -2.0f, 0.5f, 3.0f}, {2.0f, 1.0f, -1.0f, 0.25f}}), DType::float64);
  std::vector<std::vector<float>> jax = {{1.0f, -28.0f, 0.0f, 0.0f, 2.5f, 0.0f, 0.0f, 0.0f},
                                         {0.0f, 0.0f, -0.75f, 4.5f, 0.0f, 0.0f, -2.0f, 0.25f},
                                         {-2.0f, 19.0f, 0.0f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f},
                                         {0.0f, -4.5f, 3.0f, -5.5f, 0.0f, 0.0f, 8.0f, -1.0f}};
  int which = 0;
  for (bool excl : {false, true})
    for (bool rev : {false, true}) {
      GradientTape t2;
      t2.watch(z);
      Tensor gz = t2.gradient(sum(cumprod(z, 1, excl, rev) * w2), z);
      expect_close(values(gz), jax[static_cast<std::size_t>(which++)], 1e-6f);
    }
  expect_error([] { cumsum(scalar(1.0f)); }, {"cumsum", "rank >= 1"});
  expect_error([] { cumsum(ones({2, 2}), 2); }, {"cumsum", "axis"});
}

TEST(SequenceOps, EinsumMatchesLoops) {
  Tensor a = ef::testing::randn({2, 3, 4}, 1), b = ef::testing::randn({2, 4, 5}, 2);
  expect_tensor_near(einsum("bij,bjk->bik", a, b), matmul(a, b), 1e-12);
  expect_tensor_near(einsum("bij->bji", a), transpose(a, {0, 2, 1}), 0);
  expect_tensor_near(einsum("bij->", a), sum(a), 1e-12);
  // Implicit output: the labels seen once, sorted (NumPy), so b is summed.
  expect_tensor_near(einsum("bij,bjk", a, b), sum(matmul(a, b), {0}), 1e-12);
  // Multi-head attention's products (Keras' MultiHeadAttention equations) against loops.
  Tensor q = ef::testing::randn({2, 3, 2, 4}, 3), k = ef::testing::randn({2, 5, 2, 4}, 4);
  Tensor s = einsum("aecd,abcd->acbe", k, q);  // [batch, heads, q, k]
  ASSERT_EQ(s.shape(), (Shape{2, 2, 3, 5}));
  auto qv = q.to_vector<double>(), kv = k.to_vector<double>(), sv = s.to_vector<double>();
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 5; ++j) {
          double acc = 0;
          for (int d = 0; d < 4; ++d) acc += qv[((n * 3 + i) * 2 + h) * 4 + d] * kv[((n * 5 + j) * 2 + h) * 4 + d];
          EXPECT_NEAR(sv[((n * 2 + h) * 3 + i) * 5 + j], acc, 1e-12);
        }
  // Outer product, broadcasting "...", three operands, a label summed in one operand only.
  Tensor u = tensor({1.0f, 2.0f}), v = tensor({3.0f, 4.0f, 5.0f});
  expect_close(values(einsum("i,j->ij", u, v)), {3, 4, 5, 6, 8, 10});
  Tensor e = einsum("...ij,...jk->...ik", ef::testing::randn({3, 1, 2, 4}, 6), ef::testing::randn({5, 4, 3}, 7));
  EXPECT_EQ(e.shape(), (Shape{3, 5, 2, 3}));
  Tensor m1 = ef::testing::randn({2, 3}, 8), m2 = ef::testing::randn({3, 4}, 9), m3 = ef::testing::randn({4, 6}, 10);
  expect_tensor_near(einsum("ab,bc,cd->ad", {m1, m2, m3}), matmul(matmul(m1, m2), m3), 1e-12);
  expect_tensor_near(einsum("ab,cd->a", m1, m2), sum(m1, {1}) * sum(m2), 1e-12);
  expect_error([&] { einsum("ij,jk->ik", {a}); }, {"einsum", "2 terms for 1 operands"});
  expect_error([&] { einsum("ij,jk->ik", m1, m3); }, {"einsum", "disagree", "[2,3]", "[4,6]"});
  expect_error([&] { einsum("ii->i", ones({2, 2})); }, {"einsum", "diagonals"});
  expect_error([&] { einsum("ij->ijz", m1); }, {"einsum", "'z' is in no input"});
  expect_error([&] { einsum("ijk->i", m1); }, {"einsum", "3 labels", "rank 2"});
  expect_error([&] { einsum("i#->i", m1); }, {"einsum", "unexpected character"});
}

TEST(SequenceOps, SortArgsortTopKMatchNumPyAndTf) {
  Tensor v = tensor({3.0f, 1.0f, 2.0f, 1.0f, 3.0f});
  // np.argsort(v, kind="stable"); tf.argsort(v, direction="DESCENDING", stable=True)
  EXPECT_EQ(argsort(v).to_vector<std::int64_t>(), (std::vector<std::int64_t>{1, 3, 2, 0, 4}));
  EXPECT_EQ(argsort(v, -1, true).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 4, 2, 1, 3}));
  expect_close(values(sort(v)), {1, 1, 2, 3, 3});
  expect_close(values(sort(v, 0, true)), {3, 3, 2, 1, 1});
  // NaN last, as np.argsort([3, nan, 2, 1]) == [3, 2, 0, 1]
  EXPECT_EQ(argsort(tensor({3.0f, NAN, 2.0f, 1.0f})).to_vector<std::int64_t>(), (std::vector<std::int64_t>{3, 2, 0, 1}));
  // Along axis 0 of a matrix, against std::stable_sort per column.
  Tensor m = ef::testing::randn({6, 3}, 11);
  auto mv = m.to_vector<double>(), sv = sort(m, 0).to_vector<double>();
  for (int c = 0; c < 3; ++c) {
    std::vector<double> col;
    for (int r = 0; r < 6; ++r) col.push_back(mv[static_cast<std::size_t>(r * 3 + c)]);
    std::sort(col.begin(), col.end());
    for (int r = 0; r < 6; ++r) EXPECT_EQ(sv[static_cast<std::size_t>(r * 3 + c)], col[static_cast<std::size_t>(r)]);
  }
  // tf.math.top_k([1, 3, 3, -1, 5, 3], 4) -> values [5, 3, 3, 3], indices [4, 1, 2, 5] (int32)
  auto [values4, indices4] = top_k(tensor({1.0f, 3.0f, 3.0f, -1.0f, 5.0f, 3.0f}), 4);
  expect_close(values(values4), {5, 3, 3, 3});
  EXPECT_EQ(indices4.dtype(), DType::int32);
  EXPECT_EQ(indices4.to_vector<std::int32_t>(), (std::vector<std::int32_t>{4, 1, 2, 5}));
  // top_k's gradient, tf.GradientTape on x = [[0.5, 2, -1.5], [1.5, 0.25, 3]],
  // loss = sum(top_k(x, 2).values * [[1, 2], [3, 4]])  ->  [[2, 1, 0], [4, 0, 3]]
  Tensor x = cast(tensor({{0.5f, 2.0f, -1.5f}, {1.5f, 0.25f, 3.0f}}), DType::float64);
  GradientTape tape;
  tape.watch(x);
  Tensor loss = sum(top_k(x, 2).values * cast(tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}), DType::float64));
  expect_tensor_near(tape.gradient(loss, x), cast(tensor({{2.0f, 1.0f, 0.0f}, {4.0f, 0.0f, 3.0f}}), DType::float64), 0);
  // Sort's gradient goes back to where each value came from.
  GradientTape tape2;
  tape2.watch(v);
  expect_close(values(tape2.gradient(sum(sort(v) * tensor({1.0f, 2.0f, 3.0f, 4.0f, 5.0f})), v)), {4, 1, 3, 2, 5});
  expect_error([] { top_k(ones({2, 3}), 4); }, {"top_k", "k = 4", "[2,3]"});
  expect_error([] { top_k(scalar(1.0f), 1); }, {"top_k", "rank >= 1"});
  expect_error([] { sort(ones({2}, DType::bool_)); }, {"sort", "bool"});
  expect_error([] { take_along_axis(ones({3}), tensor(std::vector<std::int64_t>{3}), 0); }, {"take_along_axis", "out of range"});
  expect_error([] { take_along_axis(ones({3, 2}), tensor(std::vector<std::int64_t>{0}), 0); }, {"take_along_axis", "rank"});
}

TEST(SequenceOps, TracedWithDynamicDims) {
  auto body = [](const Tensor& x) {
    Tensor p = pad(x, {{0, 0}, {1, 2}}, "reflect");
    Tensor t = top_k(tile(p, {2, 1}), 2).values;
    return std::vector<Tensor>{cumsum(t, 0), sum(tril(einsum("bi,bj->bij", x, x)), {2}), cast(any(x > 0.0, {1}, true), DType::float32),
                               repeat(sort(x, 0), 2, 0), clip(round(x * 3.0f), -1.0, 2.0)};
  };
  auto f = function(body);
  TensorSpec spec{DType::float32, Shape{kDynamic, 4}, {}};
  auto cf = f.get_concrete_function(spec);
  for (std::int64_t batch : {1, 3}) {
    Tensor x = ef::testing::randn({batch, 4}, 20 + static_cast<std::uint64_t>(batch), DType::float32);
    std::vector<Tensor> want = body(x);
    std::vector<Tensor> args{x};
    std::vector<Tensor> got = cf->call_flat(args);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) expect_tensor_near(got[i], want[i], 1e-6);
  }
  // A too-large k for the runtime size is an error when the graph runs.
  auto g = function([](const Tensor& x) { return top_k(x, 3).values; });
  auto gf = g.get_concrete_function(TensorSpec{DType::float32, Shape{2, kDynamic}, {}});
  std::vector<Tensor> small{ones({2, 2})};
  expect_error([&] { gf->call_flat(small); }, {"top_k", "k = 3"});
}

TEST(SequenceOps, CategoricalDrawsFromTheSoftmax) {
  random::set_seed(7);
  Tensor logits = log(tensor({{0.1f, 0.2f, 0.7f, 0.0f}, {0.25f, 0.25f, 0.25f, 0.25f}}));
  const std::int64_t n = 20000;
  Tensor s = random::categorical(logits, n);
  ASSERT_EQ(s.spec(), (TensorSpec{DType::int64, Shape{2, n}, {}}));
  auto sv = s.to_vector<std::int64_t>();
  std::vector<double> p0{0.1, 0.2, 0.7, 0.0};
  std::map<std::int64_t, int> c0, c1;
  for (std::int64_t i = 0; i < n; ++i) {
    ++c0[sv[static_cast<std::size_t>(i)]];
    ++c1[sv[static_cast<std::size_t>(n + i)]];
  }
  EXPECT_EQ(c0[3], 0);  // log(0) = -inf is never drawn
  for (int c = 0; c < 3; ++c) {
    // 4.5 standard deviations of a binomial count.
    double sd = std::sqrt(n * p0[static_cast<std::size_t>(c)] * (1 - p0[static_cast<std::size_t>(c)]));
    EXPECT_NEAR(c0[c], n * p0[static_cast<std::size_t>(c)], 4.5 * sd) << c;
  }
  for (int c = 0; c < 4; ++c) EXPECT_NEAR(c1[c], n * 0.25, 4.5 * std::sqrt(n * 0.25 * 0.75)) << c;
  // Seeded: the same sequence again after set_seed; fresh draws per call, eager and traced alike.
  random::set_seed(3);
  Tensor a1 = random::categorical(logits, 50), a2 = random::categorical(logits, 50);
  random::set_seed(3);
  auto traced = function([&](const Tensor& l) { return random::categorical(l, 50); });
  Tensor b1 = traced(logits), b2 = traced(logits);
  EXPECT_EQ(a1.to_vector<std::int64_t>(), b1.to_vector<std::int64_t>());
  EXPECT_EQ(a2.to_vector<std::int64_t>(), b2.to_vector<std::int64_t>());
  EXPECT_NE(a1.to_vector<std::int64_t>(), a2.to_vector<std::int64_t>());
  // Stateless: the same samples on every call for a seed.
  EXPECT_EQ(random::stateless_categorical(logits, 30, 9).to_vector<std::int64_t>(),
            random::stateless_categorical(logits, 30, 9).to_vector<std::int64_t>());
  EXPECT_EQ(random::categorical(logits, 4, DType::int32).dtype(), DType::int32);
  expect_error([] { random::categorical(ones({4}), 1); }, {"random.categorical", "[batch, classes]"});
  expect_error([] { random::categorical(ones({2, 0}), 1); }, {"random.categorical", "at least one class"});
  expect_error([] { random::categorical(ones({2, 3}), -1); }, {"random.categorical", "num_samples"});
  expect_error([] { random::categorical(ones({2, 3}, DType::int32), 1); }, {"random.categorical", "floating"});
}

TEST(SequenceOps, RandintAndPermutation) {
  random::set_seed(11);
  Tensor r = random::randint({4000}, -3, 5);
  ASSERT_EQ(r.dtype(), DType::int32);
  std::map<std::int32_t, int> counts;
  for (auto v : r.to_vector<std::int32_t>()) ++counts[v];
  ASSERT_EQ(counts.size(), 8u);
  EXPECT_EQ(counts.begin()->first, -3);
  EXPECT_EQ(counts.rbegin()->first, 4);
  for (auto [v, c] : counts) EXPECT_NEAR(c, 500, 4.5 * std::sqrt(4000 * 0.125 * 0.875)) << v;
  EXPECT_EQ(random::randint({3}, 0, 1, DType::int64).to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 0, 0}));
  random::set_seed(5);
  Tensor s1 = random::randint({5}, 0, 10, DType::int32, 42);
  random::set_seed(5);
  EXPECT_EQ(s1.to_vector<std::int32_t>(), random::randint({5}, 0, 10, DType::int32, 42).to_vector<std::int32_t>());
  Tensor p = random::permutation(100);
  ASSERT_EQ(p.spec(), (TensorSpec{DType::int64, Shape{100}, {}}));
  auto pv = p.to_vector<std::int64_t>();
  std::set<std::int64_t> seen(pv.begin(), pv.end());
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(*seen.begin(), 0);
  EXPECT_EQ(*seen.rbegin(), 99);
  EXPECT_NE(pv, random::permutation(100).to_vector<std::int64_t>());
  EXPECT_EQ(random::permutation(0).shape(), (Shape{0}));
  expect_error([] { random::randint({2}, 5, 5); }, {"random.randint", "minval < maxval"});
  expect_error([] { random::randint({2}, 0, 5, DType::float32); }, {"random.randint", "int32 or int64"});
  expect_error([] { random::permutation(-1); }, {"random.permutation", ">= 0"});
}

TEST(SequenceOps, ExportToOnnx) {
  namespace fs = std::filesystem;
  fs::path dir = ef::testing::fresh_temp_dir("onnx_sequence");
  auto f = function([](const Tensor& x) {
    Tensor y = pad(x, {{0, 0}, {2, 1}}, "reflect") + 0.0f;
    y = clip(floor(y * 2.0f) + ceil(y) + round(y), -3.0, 3.0);
    Tensor t = top_k(tile(cumsum(y, 1, true, true), {1, 2}), 3).values;
    Tensor s = sort(t, -1, true) + cast(argsort(t, 0), DType::float32);
    Tensor r = repeat(s, 2, 0);
    Tensor masked = where(tril(ones({4, 4}, DType::bool_)), einsum("bi,bj->ij", x, x), -1e9);
    Tensor b = cast(any(x > 0.0, {1}, true), DType::float32) + cast(all(x > -5.0), DType::float32);
    return sum(r) + sum(masked) + sum(b) + sum(pad(x, {{1, 0}}, "constant", 2.0)) +
           sum(take_along_axis(x, argsort(x, 1), 1));
  });
  onnx::export_model(*f.get_concrete_function(TensorSpec{DType::float32, Shape{3, 4}, {}}), (dir / "seq.onnx").string());
  EXPECT_GT(fs::file_size(dir / "seq.onnx"), 100u);
  // No ONNX form: a named error.
  auto g = function([](const Tensor& x) { return cumprod(x, 0); });
  expect_error([&] { onnx::export_model(*g.get_concrete_function(TensorSpec{DType::float32, Shape{3}, {}}), (dir / "g.onnx").string()); },
               {"onnx", "cumprod", "no cumulative product"});
  auto h = function([](const Tensor& x) { return pad(x, {{1, 1}, {0, 2}}, "symmetric"); });
  onnx::export_model(*h.get_concrete_function(TensorSpec{DType::float32, Shape{3, 4}, {}}), (dir / "h.onnx").string());
  expect_error([&] { onnx::export_model(*h.get_concrete_function(TensorSpec{DType::float32, Shape{kDynamic, 4}, {}}), (dir / "i.onnx").string()); },
               {"onnx", "symmetric padding over a dynamic dim"});
  fs::remove_all(dir);
}
