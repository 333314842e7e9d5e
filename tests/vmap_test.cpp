// ef::vmap: batched results equal a loop of per-example calls; composition with grad,
// function and itself; axes; errors.
#include "autodiff/vmap_internal.h"
#include "test_util.h"

#include <limits>

namespace ef::testing {
namespace {

Tensor example(const Tensor& x, std::int64_t i, int axis = 0) {
  std::vector<std::int64_t> b(static_cast<std::size_t>(axis) + 1, 0), e(static_cast<std::size_t>(axis) + 1, std::numeric_limits<std::int64_t>::max());
  b.back() = i;
  e.back() = i + 1;
  return squeeze(slice(x, b, e), {axis});
}

TEST(Vmap, MatchesLoopForALayer) {
  detail::take_vmap_fallback_log();  // the log is per thread: forget earlier tests
  Tensor w = randn({4, 3}, 1), b = randn({3}, 2), xs = randn({5, 2, 4}, 3);
  auto layer = [&](const Tensor& x) { return softmax(tanh(matmul(x, w) + b), -1); };
  Tensor batched = vmap(layer)(xs);
  std::vector<Tensor> loop;
  for (std::int64_t i = 0; i < 5; ++i) loop.push_back(layer(example(xs, i)));
  expect_tensor_near(batched, stack(loop, 0));
  EXPECT_TRUE(detail::take_vmap_fallback_log().empty());
}

TEST(Vmap, InAxesOutAxesAndUnbatchedArguments) {
  Tensor a = randn({3, 6}, 4), c = randn({3}, 5);
  // a batched on axis 1, c shared; the batch axis goes last in the result.
  auto f = [](const Tensor& x, const Tensor& y) { return x * y; };
  Tensor r = vmap(f, {1, not_batched}, -1)(a, c);
  ASSERT_EQ(r.shape(), (Shape{3, 6}));
  expect_tensor_near(r, a * reshape(c, {3, 1}));
  // An output that does not depend on the batched argument is repeated for every example.
  Tensor k = vmap([&](const Tensor& x, const Tensor& y) { return std::pair<Tensor, Tensor>{sum(x), y * 2.0}; },
                  {0, not_batched})(randn({4, 2}, 6), c)
                 .second;
  ASSERT_EQ(k.shape(), (Shape{4, 3}));
  expect_tensor_near(example(k, 3), c * 2.0);
}

TEST(Vmap, ReductionsShapesAndIndexing) {
  detail::take_vmap_fallback_log();  // the log is per thread: forget earlier tests
  Tensor xs = randn({3, 4, 5}, 7);
  Tensor idx = tensor(std::vector<std::int64_t>{4, 0, 2});
  auto f = [&](const Tensor& x) {
    Tensor a = sum(x, {-1}, true) + mean(x, {0}, true) + max(x, {0}) - min(x);
    Tensor t = transpose(x, {1, 0});                                   // [5, 4]
    Tensor s = slice(t, {4, 1}, {0, 4}, {-2, 1});                      // [2, 3]
    Tensor g = gather(t, idx, 0);                                      // [3, 4]
    Tensor c = concat({g, reshape(x, {-1, 4})}, 0);                    // [8, 4]
    Tensor e = squeeze(expand_dims(argmax(x, 0), 0));                  // [5]
    return std::vector<Tensor>{a, s, c, cast(e, DType::float64), log_softmax(x, 0), broadcast_to(sum(x, {1}), {2, 4})};
  };
  std::vector<Tensor> batched = vmap(f)(xs);
  std::vector<std::vector<Tensor>> loop(batched.size());
  for (std::int64_t i = 0; i < 3; ++i) {
    auto r = f(example(xs, i));
    for (std::size_t k = 0; k < r.size(); ++k) loop[k].push_back(r[k]);
  }
  for (std::size_t k = 0; k < batched.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    expect_tensor_near(batched[k], stack(loop[k], 0));
  }
  EXPECT_TRUE(detail::take_vmap_fallback_log().empty());
}

TEST(Vmap, BatchedIndicesIntoASharedTable) {
  Tensor table = randn({6, 2}, 8);
  Tensor ids = tensor(std::vector<std::int64_t>{5, 1, 0, 3, 3, 2}, Shape{3, 2});
  Tensor r = vmap([](const Tensor& t, const Tensor& i) { return gather(t, i, 0); }, {not_batched, 0})(table, ids);
  ASSERT_EQ(r.shape(), (Shape{3, 2, 2}));
  expect_tensor_near(example(r, 1), gather(table, example(ids, 1), 0));
}

// The loss of a small MLP on one example (x: [1, 4], label: one-hot [1, 3]).
Tensor mlp_loss(const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& x, const Tensor& y) {
  Tensor h = relu(matmul(x, w1) + b1);
  return -sum(y * log_softmax(matmul(h, w2), -1));
}

TEST(Vmap, PerExampleGradientsOfAnMlpEqualTheLoop) {
  detail::take_vmap_fallback_log();  // the log is per thread: forget earlier tests
  Tensor w1 = randn({4, 8}, 9), b1 = randn({8}, 10), w2 = randn({8, 3}, 11);
  Tensor xs = randn({6, 1, 4}, 12);
  Tensor ys = reshape(one_hot(tensor(std::vector<std::int64_t>{0, 2, 1, 1, 0, 2}), 3, DType::float64), {6, 1, 3});
  auto per_example = vmap(grad(mlp_loss, std::vector<int>{0, 1, 2}), {not_batched, not_batched, not_batched, 0, 0});
  std::vector<Tensor> g = per_example(w1, b1, w2, xs, ys);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].shape(), (Shape{6, 4, 8}));
  EXPECT_EQ(g[1].shape(), (Shape{6, 8}));
  for (std::int64_t i = 0; i < 6; ++i) {
    auto one = grad(mlp_loss, std::vector<int>{0, 1, 2})(w1, b1, w2, example(xs, i), example(ys, i));
    for (std::size_t k = 0; k < 3; ++k) expect_tensor_near(example(g[k], i), one[k]);
  }
  // The whole backward pass has batching rules: nothing ran once per example.
  EXPECT_EQ(detail::take_vmap_fallback_log(), std::vector<std::string>{});
}

TEST(Vmap, FunctionOfVmapOfGradTracesOnce) {
  Tensor w1 = randn({4, 8}, 13, DType::float32), b1 = randn({8}, 14, DType::float32), w2 = randn({8, 3}, 15, DType::float32);
  auto per_example = vmap(grad(mlp_loss, std::vector<int>{0, 2}), {not_batched, not_batched, not_batched, 0, 0});
  auto traced = function([&](const Tensor& x, const Tensor& y) { return per_example(w1, b1, w2, x, y); });
  Tensor xs = randn({5, 1, 4}, 16, DType::float32);
  Tensor ys = reshape(one_hot(tensor(std::vector<std::int64_t>{0, 2, 1, 1, 0}), 3), {5, 1, 3});
  std::vector<Tensor> first = traced(xs, ys);
  std::vector<Tensor> again = traced(xs * 2.0f, ys);
  EXPECT_EQ(traced.tracing_count(), 1);
  std::vector<Tensor> eager = per_example(w1, b1, w2, xs * 2.0f, ys);
  for (std::size_t k = 0; k < 2; ++k) expect_tensor_near(again[k], eager[k], 1e-5);
  EXPECT_EQ(first[0].shape(), (Shape{5, 4, 8}));
}

TEST(Vmap, GradOfVmapReachesClosuresAndArguments) {
  Tensor w = randn({3}, 17), xs = randn({4, 3}, 18);
  // d/dw sum_i sum(tanh(x_i * w)) through vmap, w both closed over and passed unbatched.
  auto loss_closure = [&](const Tensor& wv) {
    return sum(vmap([&](const Tensor& x) { return tanh(x * wv); })(xs));
  };
  auto loss_arg = [&](const Tensor& wv) {
    return sum(vmap([](const Tensor& x, const Tensor& v) { return tanh(x * v); }, {0, not_batched})(xs, wv));
  };
  Tensor want = sum((1.0 - square(tanh(xs * w))) * xs, {0});
  expect_tensor_near(grad(loss_closure)(w), want);
  expect_tensor_near(grad(loss_arg)(w), want);
}

TEST(Vmap, VmapOfVmapIsAnOuterProductOfLoops) {
  Tensor a = randn({3, 2}, 19), b = randn({4, 2}, 20);
  auto dot = [](const Tensor& x, const Tensor& y) { return sum(x * y); };
  // Outer vmap over a's rows, inner over b's rows: r[i, j] = <a_i, b_j>.
  Tensor r = vmap([&](const Tensor& x) { return vmap([&](const Tensor& y) { return dot(x, y); })(b); })(a);
  expect_tensor_near(r, matmul(a, b, false, true));
}

TEST(Vmap, VariablesAreSharedAcrossExamplesAndTrainable) {
  Variable v(randn({3}, 21), "v");
  Tensor xs = randn({5, 3}, 22);
  GradientTape tape;
  Tensor loss = sum(vmap([&](const Tensor& x) { return square(x - v.value()); })(xs));
  Tensor g = tape.gradient(loss, v);
  ASSERT_TRUE(g.defined());
  expect_tensor_near(g, -2.0 * sum(xs - v.value(), {0}));
}

TEST(Vmap, OpsWithoutARuleRunPerExample) {
  detail::take_vmap_fallback_log();  // the log is per thread: forget earlier tests
  // Per-example tables and per-example indices: gather has no rule for that case.
  Tensor tables = randn({3, 5, 2}, 23);
  Tensor ids = tensor(std::vector<std::int64_t>{4, 0, 1, 1, 3, 2}, Shape{3, 2});
  Tensor r = vmap([](const Tensor& t, const Tensor& i) { return gather(t, i, 0); })(tables, ids);
  for (std::int64_t k = 0; k < 3; ++k) expect_tensor_near(example(r, k), gather(example(tables, k), example(ids, k), 0));
  EXPECT_EQ(detail::take_vmap_fallback_log(), std::vector<std::string>{"gather"});
}

TEST(Vmap, RandomDrawsShapedLikeABatchDifferPerExample) {
  Tensor xs = zeros({4, 100}, DType::float32);
  Tensor r = vmap([](const Tensor& x) { return random::uniform_like(x); })(xs);
  ASSERT_EQ(r.shape(), (Shape{4, 100}));
  EXPECT_NE(example(r, 0).to_vector<float>(), example(r, 1).to_vector<float>());
}

TEST(Vmap, BadInputIsAnError) {
  auto f = [](const Tensor& x, const Tensor& y) { return x + y; };
  expect_error([&] { vmap(f)(zeros({3, 2}), zeros({4, 2})); },
               {"vmap", "batch sizes differ", "argument 0 float32[3,2] has 3 on axis 0", "argument 1 float32[4,2] has 4"});
  expect_error([&] { vmap(f, {0})(zeros({3, 2}), zeros({3, 2})); }, {"vmap", "1 entries for 2 arguments"});
  expect_error([&] { vmap(f, {2, 0})(zeros({3, 2}), zeros({3, 2})); }, {"vmap", "in_axes 2 is out of range", "argument 0"});
  expect_error([&] { vmap(f, {not_batched, not_batched})(zeros({3}), zeros({3})); }, {"vmap", "no argument is batched"});
  expect_error([&] { vmap(f)(scalar<float>(1), zeros({3})); }, {"vmap", "a scalar has no axis"});
  // Per-example shape errors name the op and the per-example shapes.
  expect_error([&] { vmap([](const Tensor& x) { return matmul(x, zeros({5, 2})); })(zeros({3, 2, 4})); },
               {"matmul", "float32[2,4]"});
  Variable v(zeros({2}), "counter");
  expect_error([&] { vmap([&](const Tensor& x) { v.assign(x); return x; })(zeros({3, 2})); },
               {"vmap", "cannot assign a batched value", "counter"});
}


TEST(Vmap, CondWithAPerExamplePredicateRunsPerExample) {
  detail::take_vmap_fallback_log();
  Tensor xs = tensor(std::vector<double>{-1.0, 2.0, -3.0, 4.0}, Shape{4, 1});
  auto f = function([](const Tensor& x) {
    return cond(sum(x) > 0.0, [&] { return x * 2.0; }, [&] { return -x; });
  });
  Tensor r = vmap([&](const Tensor& x) { return f(x); })(xs);
  expect_tensor_near(r, tensor(std::vector<double>{1.0, 4.0, 3.0, 8.0}, Shape{4, 1}));
  EXPECT_EQ(detail::take_vmap_fallback_log(), std::vector<std::string>{"cond"});
}

}  // namespace
}  // namespace ef::testing
