#include <atomic>

#include "autodiff/tape_impl.h"
#include "distributed/collectives.h"
#include "exec/interpret.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

// An output-less effect that is not a print (as a barrier is): counts its runs. Outside
// namespace ef, as OpTable.CoversEveryOpClass asks of the ops tests define.
std::atomic<int> effect_runs{0};

class CountingEffect : public PrimitiveBase<CountingEffect> {
 public:
  const char* name() const override { return "counting_effect"; }
  bool has_effect() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor>) const override { return {}; }
  void eval(std::span<const Tensor>, std::span<const TensorSpec>, std::span<Tensor>) const override { ++effect_runs; }
};

}  // namespace

TEST(Cond, EagerRunsOneBranch) {
  int then_runs = 0, else_runs = 0;
  Tensor r = cond(scalar(true), [&] { ++then_runs; return ones({2}); }, [&] { ++else_runs; return zeros({2}); });
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(then_runs, 1);
  EXPECT_EQ(else_runs, 0);
}

TEST(Cond, TracedBranchesAreSubGraphs) {
  Variable bias(scalar(100.f), "bias");
  auto f = function([&](const Tensor& x) {
    return cond(sum(x) > 0.0f, [&] { return x * 2.0f + bias; }, [&] { return -x; });
  });
  EXPECT_EQ(f(tensor({1.f, 2.f})).to_vector<float>(), (std::vector<float>{102, 104}));
  EXPECT_EQ(f(tensor({-1.f, -2.f})).to_vector<float>(), (std::vector<float>{1, 2}));
  bias.assign(scalar(0.f));
  EXPECT_EQ(f(tensor({1.f, 1.f})).to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(Cond, MultipleOutputsAndEffectsInBranches) {
  std::vector<std::string> printed;
  set_print_sink([&](std::string_view s) { printed.emplace_back(s); });
  auto f = function([&](const Tensor& x, const Tensor& flag) {
    return cond(flag,
                [&]() -> std::vector<Tensor> { ef::print("then"); return {x + 1.0f, x}; },
                [&]() -> std::vector<Tensor> { ef::print("else"); return {x - 1.0f, x * 0.0f}; });
  });
  auto a = f(scalar(5.f), scalar(true));
  auto b = f(scalar(5.f), scalar(false));
  set_print_sink(nullptr);
  EXPECT_EQ(a[0].item<float>(), 6.f);
  EXPECT_EQ(b[0].item<float>(), 4.f);
  EXPECT_EQ(b[1].item<float>(), 0.f);
  EXPECT_EQ(printed, (std::vector<std::string>{"then\n", "else\n"}));
}

TEST(Cond, BranchesMustAgree) {
  auto f = function([](const Tensor& x) { return cond(sum(x) > 0.0f, [&] { return x; }, [&] { return sum(x); }); });
  expect_error([&] { f(ones({3})); }, {"[cond]", "then_fn returns (float32[3])", "else_fn returns (float32[])"});
  auto g = function([](const Tensor& x) { return cond(x, [&] { return x; }, [&] { return x; }); });
  expect_error([&] { g(ones({3})); }, {"[cond]", "bool scalar", "float32[3]"});
  EXPECT_EQ(f.tracing_count(), 0);
}

TEST(WhileLoop, EagerAndTracedAgree) {
  auto body = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] + 1.0f, v[1] * 2.0f}; };
  auto loop = [&](const Tensor& n) {
    return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; }, body, {scalar(0.f), scalar(1.f)});
  };
  auto eager = loop(scalar(5.f));
  EXPECT_EQ(eager[1].item<float>(), 32.f);
  auto f = function(loop);
  EXPECT_EQ(f(scalar(5.f))[1].item<float>(), 32.f);
  EXPECT_EQ(f(scalar(10.f))[1].item<float>(), 1024.f);
  EXPECT_EQ(f(scalar(0.f))[1].item<float>(), 1.f);
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(WhileLoop, BodyMustKeepShapes) {
  auto f = function([](const Tensor& x) {
    return while_loop([](const std::vector<Tensor>& v) { return sum(v[0]) < 10.0f; },
                      [](const std::vector<Tensor>& v) { return std::vector<Tensor>{concat({v[0], v[0]}, 0)}; }, {x});
  });
  expect_error([&] { f(ones({1})); }, {"[while_loop]", "float32[2]", "float32[1]"});
}

TEST(WhileLoop, UpdatesVariablesEachIteration) {
  Variable total(scalar(0.f), "total");
  auto f = function([&](const Tensor& n) {
    return while_loop([&](const std::vector<Tensor>& v) { return v[0] < n; },
                      [&](const std::vector<Tensor>& v) {
                        total.assign_add(v[0]);
                        return std::vector<Tensor>{v[0] + 1.0f};
                      },
                      {scalar(0.f)});
  });
  f(scalar(4.f));  // 0 + 1 + 2 + 3
  EXPECT_EQ(total.value().item<float>(), 6.f);
  f(scalar(4.f));
  EXPECT_EQ(total.value().item<float>(), 12.f);
}

// A sub-graph run again to differentiate it (its forward values were not kept) skips what only
// shows something, the ops whose skip_on_gradient_rerun() is true (print), and runs every other
// effect: a barrier skipped on one rank would leave the others waiting.
TEST(SubGraphRerun, SkipsPrintsAndRunsOtherEffects) {
  EXPECT_TRUE(dispatch(CountingEffect(), std::vector<Tensor>{}).empty());  // eager: runs now
  EXPECT_EQ(effect_runs.load(), 1);
  auto f = function([](const Tensor& x) {
    dispatch(CountingEffect(), std::vector<Tensor>{x});
    ef::print("x is", x);
    return sum(x * x);
  });
  Tensor x = tensor<double>({1.0, -2.0});
  const ir::Graph& g = f.get_concrete_function(x)->traced_graph();
  std::vector<std::string> printed;
  set_print_sink([&](std::string_view s) { printed.emplace_back(s); });
  effect_runs = 0;
  exec::interpret(g, std::vector<Tensor>{x});  // a plain run: both
  EXPECT_EQ(effect_runs.load(), 1);
  EXPECT_EQ(printed.size(), 1u);
  exec::interpret(g, std::vector<Tensor>{x}, exec::Effects::skip_prints);
  EXPECT_EQ(effect_runs.load(), 2);
  EXPECT_EQ(printed.size(), 1u);
  // What a cond's gradient by re-running its branch calls.
  std::vector<Tensor> dx = detail::graph_vjp(g, std::vector<Tensor>{x}, std::vector<Tensor>{scalar(1.0)}, {true});
  EXPECT_EQ(dx[0].to_vector<double>(), (std::vector<double>{2.0, -4.0}));
  EXPECT_EQ(effect_runs.load(), 3);
  EXPECT_EQ(printed.size(), 1u);
  set_print_sink(nullptr);
  // The trait, op by op: print only (and summary writes); a barrier runs again.
  std::vector<std::string> skipped;
  for (const auto& node : g.nodes)
    if (node.op->skip_on_gradient_rerun()) skipped.emplace_back(node.op->name());
  EXPECT_EQ(skipped, (std::vector<std::string>{"print"}));
  EXPECT_FALSE(dist::Barrier().skip_on_gradient_rerun());
}

// TF's shape_invariants: a loop variable whose dims change (a buffer that grows), eagerly and in a
// trace whose replays take different trip counts.
TEST(WhileLoop, ShapeInvariantsLetALoopVariableGrow) {
  auto grow = [](const Tensor& n) {
    std::vector<Tensor> out = while_loop(
        [&](const std::vector<Tensor>& v) { return v[0] < n; },
        [](const std::vector<Tensor>& v) {
          Tensor row = reshape(cast(v[0], DType::float32), {1});
          return std::vector<Tensor>{v[0] + 1, concat({v[1], row}, 0)};
        },
        {scalar<std::int64_t>(0), zeros({0})}, std::nullopt, {std::nullopt, Shape{kDynamic}});
    return out[1];
  };
  EXPECT_EQ(grow(scalar<std::int64_t>(3)).to_vector<float>(), (std::vector<float>{0, 1, 2}));
  auto traced = function([&](const Tensor& n) { return grow(n); });
  EXPECT_EQ(traced(scalar<std::int64_t>(4)).to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(traced(scalar<std::int64_t>(2)).to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ(traced(scalar<std::int64_t>(0)).shape(), (Shape{0}));
  EXPECT_EQ(traced.tracing_count(), 1);
}

TEST(WhileLoop, ShapeInvariantsAreChecked) {
  auto body = [](const std::vector<Tensor>& v) { return std::vector<Tensor>{concat({v[0], v[0]}, 0)}; };
  auto cond = [](const std::vector<Tensor>& v) { return sum(v[0]) < 100.0f; };
  // Without an invariant the body may not change the shape; with a wrong-rank one neither.
  expect_error([&] { while_loop(cond, body, {ones({2})}); }, {"keep the loop variables' dtypes and shapes"});
  expect_error([&] { while_loop(cond, body, {ones({2})}, std::nullopt, {Shape{kDynamic, 1}}); }, {"shape invariant"});
  expect_error([&] { while_loop(cond, body, {ones({2})}, std::nullopt, {Shape{kDynamic}, Shape{kDynamic}}); },
               {"shape_invariants has 2 entries"});
  EXPECT_EQ(while_loop(cond, body, {ones({2})}, std::nullopt, {Shape{kDynamic}})[0].shape(), (Shape{128}));
  // Traced, such a loop is not differentiable: a clear error, not a wrong gradient.
  auto f = function([&](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(while_loop(cond, body, {x}, std::nullopt, {Shape{kDynamic}})[0]);
    return tape.gradient(y, x);
  });
  expect_error([&] { f(ones({2})); }, {"shape_invariants", "cannot differentiate"});
}
