// Forward mode (ef::jvp, ef::linearize) and Jacobians (ef::jacfwd, ef::jacrev, ef::hessian)
// against analytic derivatives.
#include "test_util.h"

namespace ef::testing {
namespace {

TEST(ForwardMode, JvpOfAUnaryFunction) {
  Tensor x = randn({3, 2}, 1), v = randn({3, 2}, 2);
  auto [y, t] = jvp([](const Tensor& a) { return sin(a) * a; }, x, v);
  expect_tensor_near(y, sin(x) * x);
  expect_tensor_near(t, (cos(x) * x + sin(x)) * v);
}

TEST(ForwardMode, JvpOfSeveralArgumentsAndOutputs) {
  Tensor x = randn({4}, 3), w = randn({4, 2}, 4), vx = randn({4}, 5), vw = randn({4, 2}, 6);
  auto f = [](const std::vector<Tensor>& a) {
    Tensor xm = reshape(a[0], {1, 4});
    return std::vector<Tensor>{matmul(xm, a[1]), sum(square(a[0])), argmax(a[0])};
  };
  auto [ys, ts] = jvp(f, {x, w}, {vx, vw});
  ASSERT_EQ(ts.size(), 3u);
  Tensor xm = reshape(x, {1, 4}), vxm = reshape(vx, {1, 4});
  expect_tensor_near(ts[0], matmul(vxm, w) + matmul(xm, vw));
  expect_tensor_near(ts[1], sum(2.0 * x * vx));
  // An integer output has a zero tangent.
  EXPECT_EQ(ts[2].dtype(), DType::int64);
  EXPECT_EQ(ts[2].item<std::int64_t>(), 0);
  // An undefined tangent is zero: only w moves.
  auto only_w = jvp(f, {x, w}, {Tensor(), vw}).second;
  expect_tensor_near(only_w[0], matmul(xm, vw));
  expect_tensor_near(only_w[1], zeros_like(ts[1]));
}

TEST(ForwardMode, UnconnectedAndIdentityFunctions) {
  Tensor x = randn({3}, 7), v = randn({3}, 8);
  expect_tensor_near(jvp([](const Tensor& a) { return a; }, x, v).second, v);
  Tensor c = randn({2}, 9);
  expect_tensor_near(jvp([&](const Tensor&) { return c * 2.0; }, x, v).second, zeros({2}, DType::float64));
}

TEST(ForwardMode, LinearizeRunsTheForwardPassOnce) {
  Tensor x = randn({3}, 10);
  int calls = 0;
  auto [y, lin] = linearize(
      [&](const Tensor& a) {
        ++calls;
        return exp(a) * sum(a);
      },
      x);
  Tensor v1 = randn({3}, 11), v2 = randn({3}, 12);
  expect_tensor_near(lin(v1), jvp([](const Tensor& a) { return exp(a) * sum(a); }, x, v1).second);
  expect_tensor_near(lin(v2), exp(x) * v2 * sum(x) + exp(x) * sum(v2));
  EXPECT_EQ(calls, 1);
  expect_tensor_near(y, exp(x) * sum(x));
}

TEST(ForwardMode, JacobiansHaveOutputThenInputShape) {
  Tensor a = randn({3, 4}, 13), x = randn({2, 3}, 14);
  auto f = [&](const Tensor& m) { return tanh(matmul(m, a)); };  // [2,3] -> [2,4]
  Tensor jf = jacfwd(f)(x), jr = jacrev(f)(x);
  ASSERT_EQ(jf.shape(), (Shape{2, 4, 2, 3}));
  ASSERT_EQ(jr.shape(), (Shape{2, 4, 2, 3}));
  expect_tensor_near(jf, jr);
  // d y[i,j] / d x[k,l] = (1 - y[i,j]^2) a[l,j] [i == k]
  Tensor y = f(x);
  auto yv = y.to_vector<double>(), av = a.to_vector<double>(), jv = jf.to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 2; ++k)
        for (int l = 0; l < 3; ++l) {
          double want = i == k ? (1 - yv[i * 4 + j] * yv[i * 4 + j]) * av[l * 4 + j] : 0.0;
          EXPECT_NEAR(jv[((i * 4 + j) * 2 + k) * 3 + l], want, 1e-12);
        }
}

TEST(ForwardMode, JacobianWithRespectToASecondArgument) {
  Tensor x = randn({3}, 15), w = randn({3}, 16);
  auto f = [](const Tensor& a, const Tensor& b) { return a * b * b; };
  Tensor j = jacrev(f, 1)(x, w);
  Tensor want = reshape(one_hot(arange(3), 3, DType::float64), {3, 3}) * reshape(2.0 * x * w, {3, 1});
  expect_tensor_near(j, want);
  expect_tensor_near(jacfwd(f, 1)(x, w), want);
  expect_error([&] { jacfwd(f, 2)(x, w); }, {"jacfwd", "argnum 2 is out of range for 2 arguments"});
}

TEST(ForwardMode, HessianOfASmallFunctionIsAnalytic) {
  // f(x) = sum(x^3) + x0 x1 + sin(x2): H = diag(6x) + [[0,1,0],[1,0,0],[0,0,0]] - sin(x2) e2 e2^T
  Tensor x = tensor(std::vector<double>{0.5, -1.5, 2.0});
  auto f = [](const Tensor& a) {
    Tensor a0 = slice(a, {0}, {1}), a1 = slice(a, {1}, {2}), a2 = slice(a, {2}, {3});
    return sum(a * a * a) + sum(a0 * a1) + sum(sin(a2));
  };
  Tensor h = hessian(f)(x);
  ASSERT_EQ(h.shape(), (Shape{3, 3}));
  std::vector<double> want{3.0, 1.0, 0.0, 1.0, -9.0, 0.0, 0.0, 0.0, 12.0 - std::sin(2.0)};
  auto got = h.to_vector<double>();
  for (std::size_t i = 0; i < 9; ++i) EXPECT_NEAR(got[i], want[i], 1e-10) << "at " << i;
}

TEST(ForwardMode, ComposesWithFunctionAndGrad) {
  Tensor x = randn({5}, 17, DType::float32), v = randn({5}, 18, DType::float32);
  auto f = [](const Tensor& a) { return sigmoid(a) * a; };
  auto traced = function([&](const Tensor& a, const Tensor& t) { return jvp(f, a, t).second; });
  Tensor eager = jvp(f, x, v).second;
  Tensor first = traced(x, v), again = traced(x * 2.0f, v);
  EXPECT_EQ(traced.tracing_count(), 1);
  expect_tensor_near(first, eager, 1e-6);
  expect_tensor_near(again, jvp(f, x * 2.0f, v).second, 1e-6);
  // Hessian-vector product as grad of a jvp: d/dx <grad f(x), v> == d/dx jvp(f, x, v) for scalar f.
  auto scalar_f = [](const Tensor& a) { return sum(exp(a) * a); };
  Tensor hvp = grad([&](const Tensor& a) { return jvp(scalar_f, a, v).second; })(x);
  expect_tensor_near(hvp, (2.0f * exp(x) + exp(x) * x) * v, 1e-5);
}

TEST(ForwardMode, BadInputIsAnError) {
  auto f = [](const Tensor& a) { return a * 2.0f; };
  expect_error([&] { jvp(f, zeros({3}), zeros({4})); }, {"jvp", "tangent 0 is float32[4] but primal 0 is float32[3]"});
  expect_error([&] { jvp(f, zeros({3}), zeros({3}, DType::float64)); }, {"jvp", "tangent 0 is float64[3]"});
  expect_error([&] { jvp(TensorListFn([](const std::vector<Tensor>& a) { return a; }), {zeros({3})}, {}); },
               {"jvp", "got 0 tangents for 1 primals"});
  expect_error([&] { jvp(f, tensor(std::vector<std::int64_t>{1, 2}), tensor(std::vector<std::int64_t>{1, 2})); },
               {"jvp", "only floating primals take tangents"});
  expect_error([&] { jacrev([](const Tensor& a) { return argmax(a); })(zeros({3})); },
               {"jacrev", "the output is int64[]"});
}


TEST(ForwardMode, ThroughATracedFunctionCalledEagerly) {
  auto f = function([](const Tensor& a) { return tanh(a) * a; });
  Tensor x = randn({4}, 30), v = randn({4}, 31);
  f(x);  // traced: jvp then calls the concrete function under its tapes
  // An ef::Function goes through a lambda: its call operator accepts any arguments, which makes
  // it look callable with the list form of jvp too.
  expect_tensor_near(jvp([&](const Tensor& a) { return f(a); }, x, v).second, ((1.0 - square(tanh(x))) * x + tanh(x)) * v);
}

}  // namespace
}  // namespace ef::testing
