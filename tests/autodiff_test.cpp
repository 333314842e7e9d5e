// GradientTape and ef::grad: eagerly, inside ef::function, nested, and their error paths.
#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

TEST(GradientTape, WatchedTensorAndBroadcasting) {
  Tensor x = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}});
  Tensor b = tensor({10.0f, 20.0f});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  tape.watch(b);
  Tensor y = sum(square(x) * b);
  expect_close(tape.gradient(y, x).to_vector<float>(), {20, 80, 60, 160});
  expect_close(tape.gradient(y, b).to_vector<float>(), {10, 20});  // summed over the broadcast axis
}

TEST(GradientTape, TrainableVariablesAreWatchedAutomatically) {
  Variable w(tensor({2.0f, 3.0f}), "w");
  Variable frozen(tensor({1.0f, 1.0f}), "frozen", /*trainable=*/false);
  GradientTape tape;
  Tensor loss = sum(Tensor(w) * Tensor(w) * Tensor(frozen));
  std::vector<Tensor> g = tape.gradient(loss, std::vector<Variable>{w, frozen});
  expect_close(g[0].to_vector<float>(), {4, 6});
  EXPECT_FALSE(g[1].defined());  // not watched: unconnected
  ASSERT_EQ(tape.watched_variables().size(), 1u);
  EXPECT_TRUE(tape.watched_variables()[0].same_as(w));
}

TEST(GradientTape, UnconnectedGradientsNoneOrZero) {
  Tensor x = tensor({1.0f, 2.0f}), z = tensor({5.0f});
  GradientTape tape(true);
  tape.watch(x);
  tape.watch(z);
  Tensor y = sum(x * 3.0f);
  EXPECT_FALSE(tape.gradient(y, z).defined());
  Tensor zero = tape.gradient(y, z, GradientOptions{UnconnectedGradients::zero, {}});
  EXPECT_EQ(zero.to_vector<float>(), std::vector<float>{0.0f});
}

TEST(GradientTape, NonPersistentTapeComputesOnce) {
  Tensor x = tensor({1.0f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  tape.gradient(y, x);
  expect_error([&] { tape.gradient(y, x); }, {"GradientTape", "persistent"});
}

TEST(GradientTape, StopRecordingAndStopGradient) {
  Tensor x = tensor({3.0f});
  GradientTape tape(true);
  tape.watch(x);
  Tensor a = x * x;
  Tensor b;
  {
    auto pause = tape.stop_recording();
    b = a * x;  // not recorded: a constant for the tape
  }
  Tensor y = a + b + stop_gradient(x * x);
  expect_close(tape.gradient(y, x).to_vector<float>(), {6});
}

TEST(GradientTape, OutputGradientWeightsTheTarget) {
  Tensor x = tensor({1.0f, 2.0f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = x * x;
  Tensor g = tape.gradient(y, x, GradientOptions{UnconnectedGradients::none, tensor({1.0f, 10.0f})});
  expect_close(g.to_vector<float>(), {2, 40});
}

// As TF's: an integer target contributes nothing and an integer source gets no gradient (None;
// zeros of its dtype with UnconnectedGradients::zero).
TEST(GradientTape, NonFloatTargetsAndSourcesGetNoGradient) {
  Tensor x = tensor({1.0f, 5.0f, 2.0f});
  Tensor i = tensor(std::vector<std::int64_t>{1, 2});
  GradientTape tape(true);
  tape.watch(x);
  Tensor am = argmax(x);
  EXPECT_FALSE(tape.gradient(am, x).defined());
  EXPECT_FALSE(tape.gradient(sum(x), i).defined());
  Tensor zero = tape.gradient(sum(x), i, GradientOptions{UnconnectedGradients::zero});
  EXPECT_EQ(zero.dtype(), DType::int64);
  EXPECT_EQ(zero.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 0}));
  // Beside a float target, an integer one changes nothing.
  auto both = tape.gradient(std::vector<Tensor>{sum(x), am}, std::vector<GradientSource>{x});
  EXPECT_EQ(both[0].to_vector<float>(), (std::vector<float>{1, 1, 1}));
  expect_error([&] { tape.watch(Tensor()); }, {"GradientTape", "undefined"});
}

TEST(GradientTape, NestedTapesGiveSecondDerivatives) {
  Tensor x = tensor({2.0f});
  GradientTape outer;
  outer.watch(x);
  Tensor dy;
  {
    GradientTape inner;
    inner.watch(x);
    Tensor y = x * x * x;      // y' = 3x^2 = 12, y'' = 6x = 12
    dy = inner.gradient(y, x);
  }
  expect_close(dy.to_vector<float>(), {12});
  expect_close(outer.gradient(dy, x).to_vector<float>(), {12});
}

TEST(GradientTape, SameTensorTwiceAndDiamonds) {
  Tensor x = tensor({3.0f});
  GradientTape tape;
  tape.watch(x);
  Tensor a = x * 2.0f, b = x * x;
  Tensor y = a * b + x;  // 2x^3 + x -> 6x^2 + 1 = 55
  expect_close(tape.gradient(y, x).to_vector<float>(), {55});
}

TEST(GradientTape, WhileLoopEagerlyIsUnrolledOnTheTape) {
  Tensor x = tensor({1.5f});
  GradientTape tape;
  tape.watch(x);
  auto out = while_loop([](const std::vector<Tensor>& v) { return v[1] < 3.0f; },
                        [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * v[0], v[1] + 1.0f}; },
                        {x, tensor({0.0f})});
  // x^8 after three squarings: 8 x^7
  expect_close(tape.gradient(out[0], x).to_vector<float>(), {8.0f * std::pow(1.5f, 7.0f)}, 1e-5f);
}

// An op whose kernel calls ef ops itself: nothing the kernel does may reach a tape.
class DoubleViaAdd : public PrimitiveBase<DoubleViaAdd> {
 public:
  const char* name() const override { return "double_via_add"; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override { return {in[0].spec()}; }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    out[0] = add(in[0], in[0]);
  }
  std::vector<Tensor> vjp(std::span<const Tensor>, std::span<const Tensor>, std::span<const Tensor> cot,
                          const std::vector<bool>&) const override {
    return {cot[0] * 2.0f};
  }
};

TEST(GradientTape, KernelsThatCallOpsAreNotRecorded) {
  Tensor x = tensor({1.0f, 2.0f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = dispatch1(DoubleViaAdd(), {x});
  expect_close(y.to_vector<float>(), {2, 4});
  expect_close(tape.gradient(sum(y), x).to_vector<float>(), {2, 2});  // only the op's own rule
  // Inside a trace the op is one node, whatever its kernel calls.
  auto f = function([](const Tensor& t) { return dispatch1(DoubleViaAdd(), {t}); });
  auto cf = f.get_concrete_function(TensorSpec{DType::float32, {2}});
  ASSERT_EQ(cf->traced_graph().nodes.size(), 1u);
  expect_close(f(x).to_vector<float>(), {2, 4});
}

// ---------------------------------------------------------------- ef::grad
TEST(Grad, GradAndValueAndGrad) {
  auto f = [](const Tensor& x) { return sum(square(x)); };
  Tensor x = tensor({1.0f, -2.0f});
  expect_close(grad(f)(x).to_vector<float>(), {2, -4});
  auto [value, g] = value_and_grad(f)(x);
  EXPECT_FLOAT_EQ(value.item<float>(), 5.0f);
  expect_close(g.to_vector<float>(), {2, -4});
}

TEST(Grad, ArgnumsAndOneTensorPassedTwice) {
  auto f = [](const Tensor& a, const Tensor& b) { return sum(a * b * b); };
  Tensor a = tensor({2.0f}), b = tensor({3.0f});
  auto g = grad(f, {0, 1})(a, b);
  expect_close(g[0].to_vector<float>(), {9});
  expect_close(g[1].to_vector<float>(), {12});
  // The same tensor as both arguments: each argument gets its own gradient (JAX semantics).
  auto same = grad(f, {0, 1})(a, a);
  expect_close(same[0].to_vector<float>(), {4});   // b^2 with b = 2
  expect_close(same[1].to_vector<float>(), {8});   // 2ab
  expect_close(grad(f, 1)(a, b).to_vector<float>(), {12});
}

TEST(Grad, UnconnectedArgumentsGetZeros) {
  auto f = [](const Tensor& a, const Tensor& b) { return sum(a * 2.0f); };
  auto g = grad(f, {0, 1})(tensor({1.0f}), tensor({1.0f, 2.0f}));
  EXPECT_EQ(g[1].to_vector<float>(), (std::vector<float>{0, 0}));
}

TEST(Grad, Errors) {
  auto f = [](const Tensor& x) { return x * 2.0f; };
  expect_error([&] { grad(f)(tensor({1.0f, 2.0f})); }, {"grad", "scalar", "float32[2]"});
  auto s = [](const Tensor& x) { return sum(x); };
  expect_error([&] { grad(s, 3)(tensor({1.0f})); }, {"grad", "argnum 3"});
  expect_error([&] { grad(s)(tensor(std::vector<std::int64_t>{1})); }, {"gradient", "int64"});
}

TEST(Grad, HessianVectorProductMatchesFiniteDifferences) {
  // f(x) = sum(tanh(x) * x^2); Hv via grad of <grad f, v>, checked against
  // (grad f(x + eps v) - grad f(x - eps v)) / 2 eps in float64.
  auto f = [](const Tensor& x) { return sum(tanh(x) * square(x)); };
  Tensor x = random::normal({5}, 0.0, 1.0, DType::float64, 3);
  Tensor v = random::normal({5}, 0.0, 1.0, DType::float64, 4);
  auto df = grad(f);
  auto hvp = grad([&](const Tensor& y) { return sum(df(y) * v); });
  Tensor h = hvp(x);
  double eps = 1e-5;
  Tensor fd = (df(x + v * eps) - df(x - v * eps)) / (2 * eps);
  auto hv = h.to_vector<double>(), want = fd.to_vector<double>();
  for (std::size_t i = 0; i < hv.size(); ++i) EXPECT_NEAR(hv[i], want[i], 1e-6 * (1 + std::fabs(want[i])));
  // The same through ef::function: one trace, the same numbers.
  auto traced = function(hvp);
  auto t = traced(x).to_vector<double>();
  for (std::size_t i = 0; i < hv.size(); ++i) EXPECT_NEAR(t[i], hv[i], 1e-12);
}

TEST(Grad, ComposesWithFunctionBothWays) {
  auto f = [](const Tensor& x) { return sum(exp(x) * x); };
  Tensor x = tensor({0.5f, -1.0f, 2.0f});
  Tensor eager = grad(f)(x);
  auto traced_grad = function(grad(f));       // trace of a gradient
  expect_close(traced_grad(x).to_vector<float>(), eager.to_vector<float>(), 1e-6f);
  auto traced_f = function(f);
  expect_close(grad(traced_f)(x).to_vector<float>(), eager.to_vector<float>(), 1e-6f);  // gradient of a trace
  EXPECT_EQ(traced_grad.tracing_count(), 1);
}

// ---------------------------------------------------------------- traces and tapes
TEST(TapeInTrace, TrainingStepIsOneGraphTracedOnce) {
  Variable w(tensor(std::vector<float>{0.5f, -0.5f}, Shape{2, 1}), "w");
  Variable b(tensor({0.0f}), "b");
  int traces_of_body = 0;
  auto step = function([&](const Tensor& x, const Tensor& y) {
    ++traces_of_body;
    GradientTape tape;
    Tensor loss = mean(square(matmul(x, w) + Tensor(b) - y));
    auto g = tape.gradient(loss, std::vector<Variable>{w, b});
    w.assign_sub(g[0] * 0.1f);
    b.assign_sub(g[1] * 0.1f);
    return loss;
  });
  Tensor x = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}});
  Tensor y = tensor(std::vector<float>{1.0f, 2.0f, 3.0f}, Shape{3, 1});
  // The same steps eagerly on copies of the variables.
  Variable we(tensor(std::vector<float>{0.5f, -0.5f}, Shape{2, 1}), "we"), be(tensor({0.0f}), "be");
  for (int i = 0; i < 5; ++i) {
    Tensor traced_loss = step(x, y);
    GradientTape tape;
    Tensor loss = mean(square(matmul(x, we) + Tensor(be) - y));
    auto g = tape.gradient(loss, std::vector<Variable>{we, be});
    we.assign_sub(g[0] * 0.1f);
    be.assign_sub(g[1] * 0.1f);
    expect_close(traced_loss.to_vector<float>(), loss.to_vector<float>(), 1e-6f);
  }
  EXPECT_EQ(step.tracing_count(), 1);
  EXPECT_EQ(traces_of_body, 1);
  expect_close(Tensor(w).to_vector<float>(), Tensor(we).to_vector<float>(), 1e-6f);
  // One graph holds forward, backward and the updates.
  auto cf = step.get_concrete_function(x, y);
  int assigns = 0;
  bool has_transpose = false;
  for (const auto& n : cf->traced_graph().nodes) {
    assigns += std::string(n.op->name()) == "assign_sub";
    has_transpose |= n.op->attrs().find("transpose_") != std::string::npos;
  }
  EXPECT_EQ(assigns, 2);
  EXPECT_TRUE(has_transpose);
}

TEST(TapeInTrace, DynamicBatchGradients) {
  // Broadcasting and reductions over a batch dim unknown until run time.
  Variable w(tensor({{1.0f, 2.0f, 3.0f}}), "w");  // [1,3]
  auto g = function(
      [&](const Tensor& x) {
        GradientTape tape;
        Tensor loss = mean(square(x * Tensor(w)));
        return tape.gradient(loss, w);
      },
      FunctionOptions{.input_signature = std::vector<TensorSpec>{{DType::float32, {kDynamic, 3}}}});
  for (std::int64_t n : {1, 4, 7}) {
    Tensor x = random::normal({n, 3});
    GradientTape tape;
    Tensor loss = mean(square(x * Tensor(w)));
    Tensor want = tape.gradient(loss, w);
    expect_close(g(x).to_vector<float>(), want.to_vector<float>(), 1e-5f);
  }
  EXPECT_EQ(g.tracing_count(), 1);
}

TEST(TraceInTape, FunctionCalledUnderATapeIsDifferentiated) {
  Variable w(tensor({2.0f, 3.0f}), "w");
  int body_runs = 0;
  auto f = function([&](const Tensor& x) {
    ++body_runs;
    return sum(x * Tensor(w) * x);
  });
  Tensor x = tensor({1.0f, 2.0f});
  f(x);  // traced and cached
  GradientTape tape;
  tape.watch(x);
  Tensor y = f(x);
  auto g = tape.gradient(y, std::vector<GradientSource>{x, w});
  expect_close(g[0].to_vector<float>(), {4, 12});  // 2 w x
  expect_close(g[1].to_vector<float>(), {1, 4});   // x^2
  EXPECT_EQ(body_runs, 1);                         // host code did not run again
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(TapeInTrace, CondGradientsTakeTheBranchThatRan) {
  auto f = function([](const Tensor& x, const Tensor& p) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = cond(p, [&] { return sum(x * x * x); }, [&] { return sum(x * 5.0f); });
    return tape.gradient(y, x);
  });
  Tensor x = tensor({1.0f, 2.0f});
  expect_close(f(x, scalar(true)).to_vector<float>(), {3, 12});
  expect_close(f(x, scalar(false)).to_vector<float>(), {5, 5});
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(TapeInTrace, CondReadingAVariableGetsItsGradient) {
  Variable v(tensor({3.0f}), "v");
  auto f = function([&](const Tensor& p) {
    GradientTape tape;
    Tensor y = cond(p, [&] { return Tensor(v) * Tensor(v); }, [&] { return Tensor(v) * 2.0f; });
    return tape.gradient(y, v);
  });
  expect_close(f(scalar(true)).to_vector<float>(), {6});
  expect_close(f(scalar(false)).to_vector<float>(), {2});
}

TEST(TapeInTrace, WhileLoopInATraceIsDifferentiable) {
  // Doubles until the sum reaches 100: from 1, seven times, so y = 128 x (while_gradient_test
  // covers the rest).
  auto f = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    auto out = while_loop([](const std::vector<Tensor>& v) { return sum(v[0]) < 100.0f; },
                          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2.0f}; }, {x});
    return tape.gradient(sum(out[0]), x);
  });
  EXPECT_EQ(f(tensor({1.0f})).to_vector<float>(), std::vector<float>{128.0f});
  EXPECT_EQ(f(tensor({30.0f})).to_vector<float>(), std::vector<float>{4.0f});
  EXPECT_EQ(f.tracing_count(), 1);
}

// ---------------------------------------------------------------- fits from scratch
namespace {

struct Mlp {
  Variable w1, b1, w2, b2;
  Mlp()
      : w1(random::stateless_normal({4, 16}, 1, 0.0, 0.5), "w1"), b1(zeros({16}), "b1"),
        w2(random::stateless_normal({16, 1}, 2, 0.0, 0.5), "w2"), b2(zeros({1}), "b2") {}
  Tensor operator()(const Tensor& x) const { return matmul(tanh(matmul(x, w1) + Tensor(b1)), w2) + Tensor(b2); }
  std::vector<Variable> vars() const { return {w1, b1, w2, b2}; }
};

Tensor sgd_step(const Mlp& m, const Tensor& x, const Tensor& y, float lr) {
  GradientTape tape;
  Tensor loss = mean(square(m(x) - y));
  auto grads = tape.gradient(loss, m.vars());
  auto vars = m.vars();
  for (std::size_t i = 0; i < vars.size(); ++i) vars[i].assign_sub(grads[i] * lr);
  return loss;
}

}  // namespace

TEST(Fit, LinearRegressionEagerAndTracedReachTheSameLoss) {
  Tensor x = random::normal({64, 3}, 0.0, 1.0, DType::float32, 9);
  Tensor y = matmul(x, tensor(std::vector<float>{1.5f, -2.0f, 0.5f}, Shape{3, 1})) + 0.25f;
  auto run = [&](bool traced) {
    Variable w(zeros({3, 1}), "w"), b(zeros({1}), "b");
    auto step = [&](const Tensor& xb, const Tensor& yb) {
      GradientTape tape;
      Tensor loss = mean(square(matmul(xb, w) + Tensor(b) - yb));
      auto g = tape.gradient(loss, std::vector<Variable>{w, b});
      w.assign_sub(g[0] * 0.1f);
      b.assign_sub(g[1] * 0.1f);
      return loss;
    };
    auto f = function(step);
    Tensor loss;
    for (int i = 0; i < 200; ++i) loss = traced ? f(x, y) : step(x, y);
    return loss.item<float>();
  };
  float eager = run(false), traced = run(true);
  EXPECT_LT(eager, 1e-6f);
  EXPECT_NEAR(traced, eager, 1e-6f);
}

TEST(Fit, TwoLayerMlpEagerAndTracedReachTheSameLoss) {
  Tensor x = random::normal({128, 4}, 0.0, 1.0, DType::float32, 10);
  Tensor y = sum(tanh(x * 2.0f) * x, {1}, true);
  Mlp eager_model, traced_model;
  auto step = function([&](const Tensor& xb, const Tensor& yb) { return sgd_step(traced_model, xb, yb, 0.05f); });
  float first = 0, eager_loss = 0, traced_loss = 0;
  for (int i = 0; i < 300; ++i) {
    eager_loss = sgd_step(eager_model, x, y, 0.05f).item<float>();
    traced_loss = step(x, y).item<float>();
    if (i == 0) first = eager_loss;
  }
  EXPECT_EQ(step.tracing_count(), 1);
  EXPECT_LT(eager_loss, first * 0.2f);
  EXPECT_NEAR(traced_loss, eager_loss, 1e-4f * (1 + eager_loss));
}

TEST(TraceInTape, FirstCallUnderATapeTracesOnceAndIsDifferentiated) {
  int body_runs = 0;
  auto f = function([&](const Tensor& x) {
    ++body_runs;
    return sum(exp(x));
  });
  Tensor x = tensor({0.0f, 1.0f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = f(x);  // traces (the tape does not see the symbolic body), then runs op by op
  expect_close(tape.gradient(y, x).to_vector<float>(), {1.0f, std::exp(1.0f)}, 1e-6f);
  EXPECT_EQ(body_runs, 1);
  EXPECT_EQ(f.tracing_count(), 1);
}

TEST(TraceInTape, LayerWeightsThroughAFunction) {
  nn::Dense dense(3);
  Tensor x = random::normal({4, 5});
  auto f = function(dense);
  f(x);  // builds the layer
  GradientTape traced_tape;
  Tensor traced_loss = sum(square(f(x)));
  auto traced = traced_tape.gradient(traced_loss, dense.trainable_weights());
  GradientTape eager_tape;
  Tensor eager_loss = sum(square(dense(x)));
  auto eager = eager_tape.gradient(eager_loss, dense.trainable_weights());
  ASSERT_EQ(traced.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) expect_close(traced[i].to_vector<float>(), eager[i].to_vector<float>(), 1e-5f);
}

TEST(Grad, SecondDerivativeTracedAndEager) {
  auto f = [](const Tensor& x) { return sum(x * x * x * x); };  // f'' = 12 x^2
  auto d2 = grad([f](const Tensor& x) { return sum(grad(f)(x)); });
  Tensor x = scalar(2.0f);
  EXPECT_NEAR(d2(x).item<float>(), 48.0f, 1e-4f);
  auto traced = function(d2);
  EXPECT_NEAR(traced(x).item<float>(), 48.0f, 1e-4f);
  EXPECT_NEAR(traced(scalar(1.0f)).item<float>(), 12.0f, 1e-4f);
  EXPECT_EQ(traced.tracing_count(), 1);
}

TEST(TraceInTape, FunctionWithACondUnderATape) {
  auto f = function([](const Tensor& x, const Tensor& p) { return cond(p, [&] { return sum(x * x); }, [&] { return sum(x); }); });
  Tensor x = tensor({1.0f, 3.0f});
  for (bool p : {true, false}) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = f(x, scalar(p));
    std::vector<float> want = p ? std::vector<float>{2, 6} : std::vector<float>{1, 1};
    expect_close(tape.gradient(y, x).to_vector<float>(), want);
  }
}

TEST(GradientTape, SourceListedTwiceAndReset) {
  Tensor x = tensor({2.0f});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = x * x;
  auto g = tape.gradient(y, std::vector<Tensor>{x, x});
  expect_close(g[0].to_vector<float>(), {4});
  expect_close(g[1].to_vector<float>(), {4});
  tape.reset();
  EXPECT_FALSE(tape.gradient(y, x).defined());  // forgotten: unconnected
}

TEST(TapeInTrace, DenseTrainingStepWithADynamicBatch) {
  nn::Dense d1(8, "relu"), d2(1);
  Tensor x = random::normal({6, 4}, 0.0, 1.0, DType::float32, 1), y = random::normal({6, 1}, 0.0, 1.0, DType::float32, 2);
  d2(d1(x));  // build
  auto weights = [&] {
    auto w = d1.trainable_weights();
    for (auto& v : d2.trainable_weights()) w.push_back(v);
    return w;
  };
  auto grads_of = [&](const Tensor& xb, const Tensor& yb) {
    GradientTape tape;
    Tensor loss = mean(square(d2(d1(xb)) - yb));
    return tape.gradient(loss, weights());
  };
  auto traced = function(grads_of, FunctionOptions{.input_signature = std::vector<TensorSpec>{
                                                       {DType::float32, {kDynamic, 4}}, {DType::float32, {kDynamic, 1}}}});
  for (std::int64_t n : {6, 3}) {
    Tensor xb = slice(x, {0}, {n}), yb = slice(y, {0}, {n});
    auto t = traced(xb, yb);
    auto e = grads_of(xb, yb);
    ASSERT_EQ(t.size(), e.size());
    for (std::size_t i = 0; i < t.size(); ++i) expect_close(t[i].to_vector<float>(), e[i].to_vector<float>(), 1e-5f);
  }
  EXPECT_EQ(traced.tracing_count(), 1);
}

TEST(GradientTape, ExplicitlyWatchedVariablesWithoutAutomaticWatching) {
  Variable frozen(tensor({2.0f}), "frozen", /*trainable=*/false);
  Variable other(tensor({3.0f}), "other");
  auto f = function([&](const Tensor& x) {
    GradientTape tape(false, /*watch_accessed_variables=*/false);
    tape.watch(frozen);
    Tensor y = sum(Tensor(frozen) * Tensor(other) * x);
    auto g = tape.gradient(y, std::vector<Variable>{frozen, other}, GradientOptions{UnconnectedGradients::zero, {}});
    return g;
  });
  auto g = f(tensor({1.0f}));
  expect_close(g[0].to_vector<float>(), {3.0f});  // watched explicitly: read inside the trace counts
  expect_close(g[1].to_vector<float>(), {0.0f});  // not watched
}
