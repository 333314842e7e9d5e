// ef::while_loop differentiated inside a trace, from the values each iteration kept.
#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

namespace {

// v <- tanh(v @ w) while i < n; returns sum(v) and its gradients w.r.t. x and w. Runs eagerly
// (the tape sees every iteration) or traced (one while node, its gradient one while_grad node).
std::vector<Tensor> tanh_loop(const Tensor& x, const Tensor& w, const Tensor& n) {
  GradientTape tape;
  tape.watch(x);
  tape.watch(w);
  std::vector<Tensor> out = while_loop([&](const std::vector<Tensor>& v) { return v[1] < n; },
                                       [&](const std::vector<Tensor>& v) {
                                         return std::vector<Tensor>{tanh(matmul(v[0], w)), v[1] + scalar<std::int64_t>(1)};
                                       },
                                       {x, scalar<std::int64_t>(0)});
  Tensor y = sum(out[0]);
  auto g = tape.gradient(y, std::vector<GradientSource>{x, w}, GradientOptions{UnconnectedGradients::zero, {}});
  return {y, g[0], g[1]};
}

}  // namespace

TEST(WhileGradient, TracedLoopMatchesTheEagerTape) {
  Tensor x = random::stateless_normal({3, 4}, 1, 0.0, 0.5);
  Tensor w = random::stateless_normal({4, 4}, 2, 0.0, 0.5);
  auto traced = function(tanh_loop);
  for (std::int64_t n : {0, 1, 5}) {
    Tensor steps = scalar<std::int64_t>(n);
    auto want = tanh_loop(x, w, steps);  // eager
    auto got = traced(x, w, steps);
    for (std::size_t i = 0; i < 3; ++i) expect_close(got[i].to_vector<float>(), want[i].to_vector<float>(), 1e-5f);
  }
  EXPECT_EQ(traced.tracing_count(), 1);
  // The gradient is one reverse scan over the per-iteration stacks (not a re-run of the loop).
  std::size_t whiles = 0, scans = 0;
  for (const auto& node : traced.concrete_functions()[0]->traced_graph().nodes) {
    whiles += std::string(node.op->name()) == "while";
    scans += std::string(node.op->name()) == "scan";
  }
  EXPECT_EQ(whiles, 1u);
  EXPECT_EQ(scans, 1u);
}

TEST(WhileGradient, PowerByRepeatedSquaring) {
  // v <- v * v three times: y = x^8, dy/dx = 8 x^7.
  auto f = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = while_loop([](const std::vector<Tensor>& v) { return v[1] < scalar<std::int64_t>(3); },
                          [](const std::vector<Tensor>& v) {
                            return std::vector<Tensor>{v[0] * v[0], v[1] + scalar<std::int64_t>(1)};
                          },
                          {x, scalar<std::int64_t>(0)})[0];
    return tape.gradient(sum(y), x);
  });
  Tensor x = tensor<double>({0.5, -1.0, 1.2});
  auto g = cast(f(x), DType::float32).to_vector<float>();
  std::vector<float> want;
  for (double v : {0.5, -1.0, 1.2}) want.push_back(static_cast<float>(8 * std::pow(v, 7)));
  expect_close(g, want, 1e-5f);
}

TEST(WhileGradient, EachIterationsDrawIsDifferentiatedAtThatDraw) {
  // acc <- acc + sum(r_i * x) with r_i drawn in the body: dy/dx = sum_i r_i, so with x = 1,
  // y = sum(dy/dx). A gradient that ran the body again would see other draws.
  auto f = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = while_loop([](const std::vector<Tensor>& v) { return v[1] < scalar<std::int64_t>(4); },
                          [&](const std::vector<Tensor>& v) {
                            return std::vector<Tensor>{v[0] + sum(random::uniform({32}) * x), v[1] + scalar<std::int64_t>(1)};
                          },
                          {scalar<float>(0.0f), scalar<std::int64_t>(0)})[0];
    return std::vector<Tensor>{y, tape.gradient(y, x)};
  });
  auto out = f(ones({32}));
  EXPECT_NEAR(out[0].item<float>(), sum(out[1]).item<float>(), 1e-3);
  EXPECT_GT(max(out[1]).item<float>() - min(out[1]).item<float>(), 0.2f);
}

TEST(WhileGradient, MaximumIterationsAndSecondOrder) {
  auto f = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = while_loop([](const std::vector<Tensor>&) { return scalar<bool>(true); },
                          [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2.0f}; }, {x},
                          /*maximum_iterations=*/3)[0];
    return tape.gradient(sum(y), x);
  });
  expect_close(f(ones({2})).to_vector<float>(), {8.0f, 8.0f});
  auto second = function([](const Tensor& x) {
    return grad([](const Tensor& z) {
      Tensor g = grad([](const Tensor& u) {
        return sum(while_loop([](const std::vector<Tensor>& v) { return v[1] < scalar<std::int64_t>(2); },
                              [](const std::vector<Tensor>& v) {
                                return std::vector<Tensor>{v[0] * v[0], v[1] + scalar<std::int64_t>(1)};
                              },
                              {u, scalar<std::int64_t>(0)})[0]);
      })(z);
      return sum(g);
    })(x);
  });
  // d/du sum(4 u^3) = 12 u^2 (y = u^4 after two squarings): second order through the loop,
  // whose gradient is a reverse scan; the stacks' own gradient runs the loop once more.
  expect_close(second(tensor({1.0f, 0.5f})).to_vector<float>(), {12.0f, 3.0f});
}

TEST(WhileGradient, SecondOrderMatchesTheEagerLoopAndRefusesRandomBodies) {
  // y = sum(tanh(v w)) iterated n times; the Hessian-vector product w.r.t. w traced vs eager.
  auto hvp = [](const Tensor& x, const Tensor& w, const Tensor& v, const Tensor& n) {
    return grad([&](const Tensor& z) {
      Tensor g = grad([&](const Tensor& u) {
        return sum(while_loop([&](const std::vector<Tensor>& s) { return s[1] < n; },
                              [&](const std::vector<Tensor>& s) {
                                return std::vector<Tensor>{tanh(s[0] * u), s[1] + scalar<std::int64_t>(1)};
                              },
                              {x, scalar<std::int64_t>(0)})[0]);
      })(z);
      return sum(g * v);
    })(w);
  };
  Tensor x = tensor(std::vector<double>{0.3, -0.7, 1.1}), w = tensor(std::vector<double>{0.9, 1.2, -0.4});
  Tensor v = tensor(std::vector<double>{1.0, -2.0, 0.5});
  auto traced = function(hvp);
  for (std::int64_t n : {1, 3}) {
    Tensor steps = scalar<std::int64_t>(n);
    ef::testing::expect_tensor_near(traced(x, w, v, steps), hvp(x, w, v, steps), 1e-10);
  }
  EXPECT_EQ(traced.tracing_count(), 1);
  auto random_body = function([](const Tensor& x) {
    return grad([](const Tensor& z) {
      Tensor g = grad([](const Tensor& u) {
        return sum(while_loop([](const std::vector<Tensor>& s) { return s[1] < scalar<std::int64_t>(2); },
                              [](const std::vector<Tensor>& s) {
                                return std::vector<Tensor>{s[0] * s[0] * random::uniform({2}), s[1] + scalar<std::int64_t>(1)};
                              },
                              {u, scalar<std::int64_t>(0)})[0]);
      })(z);
      return sum(g);
    })(x);
  });
  expect_error([&] { random_body(ones({2})); }, {"gradient", "random"});
}
