// ef::custom_gradient (TF style) and ef::custom_vjp (JAX style): eagerly, under tapes and
// ef::grad, inside ef::function, nested, with variables, from a graph differentiated node by
// node, and their errors. Each rule here differs from the true derivative somewhere, so that a
// test tells the rule from ordinary differentiation.
#include "autodiff/tape_impl.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

namespace {

// TF's documentation example: log(1 + e^x) with the gradient 1 - 1 / (1 + e^x), finite where
// the naive one is inf / inf.
Tensor log1pexp(const Tensor& x) {
  static const auto f = custom_gradient("log1pexp", [](const Tensor& x) {
    Tensor e = exp(x);
    return OutputAndGrad{log(1.0f + e), [e](const Tensor& dy) { return dy * (1.0f - 1.0f / (1.0f + e)); }};
  });
  return f(x);
}

// x^2 whose gradient rule is deliberately 10 * dy: a number that only the rule gives.
int square_rule_calls = 0;
Tensor fake_square(const Tensor& x) {
  static const auto f = custom_gradient("fake_square", [](const Tensor& x) {
    return OutputAndGrad{x * x, [](const Tensor& dy) {
                           ++square_rule_calls;
                           return dy * 10.0f;
                         }};
  });
  return f(x);
}

// sin(x) whose rule is 2 * x * dy (the derivative of x^2): its second derivative through the
// rule is 2, through sin it would be -sin(x).
Tensor sin_with_square_rule(const Tensor& x) {
  static const auto f = custom_gradient("sin_sq", [](const Tensor& x) {
    return OutputAndGrad{sin(x), [x](const Tensor& dy) { return dy * 2.0f * x; }};
  });
  return f(x);
}

// The same in JAX's style: the rule reads x from the residuals.
int primal_calls = 0, fwd_calls = 0;
const CustomVjp& sin_vjp() {
  static const CustomVjp f = [] {
    CustomVjp v("sin_vjp", [](const std::vector<Tensor>& x) {
      ++primal_calls;
      return std::vector<Tensor>{sin(x[0])};
    });
    v.defvjp([](const std::vector<Tensor>& x) {
               ++fwd_calls;
               return VjpForward{{sin(x[0])}, {x[0]}};
             },
             [](const std::vector<Tensor>& res, const std::vector<Tensor>& dy) {
               return std::vector<Tensor>{dy[0] * 2.0f * res[0]};
             });
    return v;
  }();
  return f;
}

}  // namespace

TEST(CustomGradient, Log1pexpIsFiniteWhereTheNaiveGradientIsNot) {
  Tensor x = tensor({0.0f, 2.0f, 100.0f});
  GradientTape tape(/*persistent=*/true);
  tape.watch(x);
  Tensor y = log1pexp(x);
  Tensor naive = log(1.0f + exp(x));
  expect_close(y.to_vector<float>(), {std::log(2.0f), std::log1p(std::exp(2.0f)), INFINITY});
  // d/dx = sigmoid(x): 0.5, 0.8808, 1
  expect_close(tape.gradient(sum(y), x).to_vector<float>(), {0.5f, 0.88079708f, 1.0f});
  EXPECT_TRUE(std::isnan(tape.gradient(sum(naive), x).to_vector<float>()[2]));
}

TEST(CustomGradient, TheRuleIsUsedEagerlyAndOnlyWhenDifferentiating) {
  Tensor x = tensor({1.0f, 3.0f});
  square_rule_calls = 0;
  expect_close(fake_square(x).to_vector<float>(), {1, 9});  // no tape: the plain function
  EXPECT_EQ(square_rule_calls, 0);
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(fake_square(x) * tensor({1.0f, 2.0f}));
  expect_close(tape.gradient(y, x).to_vector<float>(), {10, 20});  // 2x would give 2, 12
  EXPECT_EQ(square_rule_calls, 1);
  expect_close(grad([](const Tensor& x) { return sum(fake_square(x)); })(x).to_vector<float>(), {10, 10});
}

TEST(CustomGradient, InsideFunctionTracesOnceAndReplaysTheSameNumbers) {
  int traced = 0;
  auto step = function([&](const Tensor& x) {
    ++traced;
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(log1pexp(x) + fake_square(x));
    return std::vector<Tensor>{y, tape.gradient(y, x)};
  });
  Tensor x = tensor({0.0f, 2.0f, 100.0f});
  std::vector<Tensor> first = step(x), again = step(x);
  EXPECT_EQ(traced, 1);
  EXPECT_EQ(step.traces().size(), 1u);
  expect_close(first[1].to_vector<float>(), {10.5f, 10.88079708f, 11.0f});
  EXPECT_EQ(first[1].to_vector<float>(), again[1].to_vector<float>());
  EXPECT_EQ(first[0].item<float>(), again[0].item<float>());
  // The same step eagerly.
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(log1pexp(x) + fake_square(x));
  expect_close(tape.gradient(y, x).to_vector<float>(), first[1].to_vector<float>());
}

TEST(CustomGradient, TheRuleLivesInTheGraphNode) {
  // Traced without any tape: the graph alone carries the rule, and differentiating that graph
  // from its nodes (as a call op does) uses it.
  auto f = function([](const Tensor& x) { return fake_square(x); });
  Tensor x = tensor({1.0f, 3.0f});
  auto cf = f.get_concrete_function(x);
  const ir::Graph& g = cf->traced_graph();
  int nodes = 0;
  for (const auto& n : g.nodes) nodes += std::string(n.op->name()) == "custom_gradient";
  EXPECT_EQ(nodes, 1);
  // As docs/custom_ops.md shows it.
  EXPECT_EQ(ir::to_text(g),
            "{ lambda ; a:f32[2]. let\n"
            "    b:f32[2] = mul a a\n"
            "    c:f32[2] = custom_gradient[fn=\"fake_square\" inputs=1 outputs=1 residuals=0] a b\n"
            "  in (c,) }");
  std::vector<Tensor> cot{tensor({1.0f, 1.0f})};
  std::vector<Tensor> dx = detail::graph_vjp(g, std::vector<Tensor>{x}, cot, {true});
  expect_close(dx[0].to_vector<float>(), {10, 10});
  // A tape outside the traced function differentiates through it with the rule too.
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(f(x));
  expect_close(tape.gradient(y, x).to_vector<float>(), {10, 10});
}

TEST(CustomGradient, GradOfGradDifferentiatesTheRule) {
  Tensor x = tensor({0.5f, 2.0f});
  auto d2 = [](auto fn) {
    auto d1 = [fn](const Tensor& x) { return sum(grad([fn](const Tensor& z) { return sum(fn(z)); })(x)); };
    return grad(d1);
  };
  auto tf_style = [](const Tensor& z) { return sin_with_square_rule(z); };
  auto jax_style = [](const Tensor& z) { return sin_vjp()(z); };
  // First order through the rule: 2x (cos(x) would be 0.8776, -0.4161).
  expect_close(grad([&](const Tensor& z) { return sum(tf_style(z)); })(x).to_vector<float>(), {1, 4});
  expect_close(grad([&](const Tensor& z) { return sum(jax_style(z)); })(x).to_vector<float>(), {1, 4});
  // Second order: the derivative of the rule 2x, i.e. 2 (not -sin(x)).
  expect_close(d2(tf_style)(x).to_vector<float>(), {2, 2});
  expect_close(d2(jax_style)(x).to_vector<float>(), {2, 2});
  // And traced, once.
  auto traced = function([&](const Tensor& x) { return d2(jax_style)(x); });
  expect_close(traced(x).to_vector<float>(), {2, 2});
  auto traced_tf = function([&](const Tensor& x) { return d2(tf_style)(x); });
  expect_close(traced_tf(x).to_vector<float>(), {2, 2});
  expect_close(traced_tf(x).to_vector<float>(), {2, 2});
  EXPECT_EQ(traced_tf.traces().size(), 1u);
}

TEST(CustomGradient, ResidualsAreDifferentiatedThroughTheForwardPass) {
  // bwd uses a residual computed by fwd (r = x^2): the second order goes from the rule to r,
  // then through the forward ops that made r: d/dx sum(3 r) = 6x.
  CustomVjp f("cube", [](const std::vector<Tensor>& x) { return std::vector<Tensor>{x[0] * x[0] * x[0]}; });
  f.defvjp([](const std::vector<Tensor>& x) { return VjpForward{{x[0] * x[0] * x[0]}, {x[0] * x[0]}}; },
           [](const std::vector<Tensor>& r, const std::vector<Tensor>& dy) { return std::vector<Tensor>{3.0f * r[0] * dy[0]}; });
  Tensor x = tensor({1.0f, -2.0f});
  auto d1 = [&](const Tensor& z) { return sum(grad([&](const Tensor& w) { return sum(f(w)); })(z)); };
  expect_close(grad(d1)(x).to_vector<float>(), {6, -12});
  auto traced = function([&](const Tensor& z) { return grad(d1)(z); });
  expect_close(traced(x).to_vector<float>(), {6, -12});
}

TEST(CustomGradient, CustomVjpRunsThePrimalUnlessDifferentiating) {
  Tensor x = tensor({0.5f});
  primal_calls = fwd_calls = 0;
  sin_vjp()(x);
  EXPECT_EQ(primal_calls, 1);
  EXPECT_EQ(fwd_calls, 0);
  GradientTape tape;
  tape.watch(x);
  Tensor y = sin_vjp()(x);
  EXPECT_EQ(fwd_calls, 1);
  EXPECT_EQ(primal_calls, 1);
  expect_close(tape.gradient(y, x).to_vector<float>(), {1.0f});
}

TEST(CustomGradient, VariablesReadInsideGetTheirGradientFromTheRule) {
  Variable w(tensor({2.0f, 3.0f}), "scale/w");
  // y = x * w; the rule says dx = dy * w, dw = 100 * dy * x (100: only the rule gives it).
  auto scaled = custom_gradient("scaled", [&](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor wv = w.value();
    return OutputsAndGrad{{x * wv}, [x, wv](const std::vector<Tensor>& dy) {
                            EXPECT_EQ(custom_variables().size(), 1u);
                            return std::vector<Tensor>{dy[0] * wv, 100.0f * dy[0] * x};
                          }};
  });
  Tensor x = tensor({1.0f, 4.0f});
  {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(scaled({x})[0]);
    std::vector<Tensor> g = tape.gradient(y, std::vector<GradientSource>{x, w});
    expect_close(g[0].to_vector<float>(), {2, 3});
    expect_close(g[1].to_vector<float>(), {100, 400});
  }
  auto step = function([&](const Tensor& x) {
    GradientTape tape;
    Tensor y = sum(scaled({x})[0]);
    return tape.gradient(y, w);
  });
  expect_close(step(x).to_vector<float>(), {100, 400});
  expect_close(step(x).to_vector<float>(), {100, 400});
  // A rule that forgets the variable is an error that names it.
  auto forgets = custom_gradient("forgets", [&](const std::vector<Tensor>& in) {
    Tensor wv = w.value();
    return OutputsAndGrad{{in[0] * wv}, [wv](const std::vector<Tensor>& dy) { return std::vector<Tensor>{dy[0] * wv}; }};
  });
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(forgets({x})[0]);
  expect_error([&] { tape.gradient(y, x); }, {"custom_gradient", "'forgets'", "returned 1 gradients", "scale/w float32[2]"});
}

TEST(CustomGradient, WrongGradientsAreErrorsNamingTheFunctionAndShapes) {
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  auto too_many = custom_gradient("too_many", [](const std::vector<Tensor>& in) {
    return OutputsAndGrad{{in[0] * 2.0f}, [](const std::vector<Tensor>& dy) { return std::vector<Tensor>{dy[0], dy[0]}; }};
  });
  auto bad_shape = custom_gradient("bad_shape", [](const Tensor& x) {
    return OutputAndGrad{x * 2.0f, [](const Tensor& dy) { return sum(dy); }};
  });
  auto bad_dtype = custom_gradient("bad_dtype", [](const Tensor& x) {
    return OutputAndGrad{x * 2.0f, [](const Tensor& dy) { return cast(dy, DType::float64); }};
  });
  auto run = [&](auto fn) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(fn(x));
    tape.gradient(y, x);
  };
  expect_error([&] { run([&](const Tensor& t) { return too_many({t})[0]; }); },
               {"[custom_gradient]", "'too_many'", "returned 2 gradients (float32[3], float32[3])", "one per input (float32[3])"});
  expect_error([&] { run(bad_shape); }, {"'bad_shape'", "returned float32[]", "for an input of float32[3]"});
  expect_error([&] { run(bad_dtype); }, {"'bad_dtype'", "float64[3]", "float32[3]"});
  // Traced: the same error when the traced step takes the gradient.
  auto step = function([&](const Tensor& t) {
    GradientTape tape;
    tape.watch(t);
    return tape.gradient(sum(bad_shape(t)), t);
  });
  expect_error([&] { step(x); }, {"'bad_shape'", "for an input of float32[3]"});
  // Misuse.
  CustomVjp no_rule("no_rule", [](const std::vector<Tensor>& in) { return in; });
  expect_error([&] { no_rule(x); }, {"custom_vjp", "'no_rule'", "defvjp"});
  expect_error([&] { fake_square(Tensor()); }, {"custom_gradient", "input 0 is undefined"});
  auto no_grad = custom_gradient("no_grad", [](const Tensor& x) { return OutputAndGrad{x, nullptr}; });
  GradientTape tape;
  tape.watch(x);
  expect_error([&] { no_grad(x); }, {"'no_grad'", "no gradient function"});
}

TEST(CustomGradient, SeveralInputsAndOutputs) {
  // (a, b) -> (a * b, a + b) with a rule that swaps the true gradients' roles.
  auto f = custom_gradient("two_by_two", [](const std::vector<Tensor>& in) {
    Tensor a = in[0], b = in[1];
    return OutputsAndGrad{{a * b, a + b}, [a, b](const std::vector<Tensor>& dy) {
                            return std::vector<Tensor>{dy[0] * a + dy[1], Tensor()};  // no gradient for b
                          }};
  });
  Tensor a = tensor({2.0f}), b = tensor({5.0f});
  GradientTape tape;
  tape.watch(a);
  tape.watch(b);
  std::vector<Tensor> y = f({a, b});
  std::vector<Tensor> g = tape.gradient(sum(y[0]) + 3.0f * sum(y[1]), std::vector<Tensor>{a, b});
  expect_close(g[0].to_vector<float>(), {5});  // dy0 * a + dy1 = 2 + 3
  EXPECT_FALSE(g[1].defined());
}

TEST(CustomGradient, ComposesWithJvpAndVmap) {
  // Forward mode is derived from the reverse rule, so it follows the rule too: J v = 2 x v.
  Tensor x = tensor({0.5f, 2.0f});
  auto [y, t] = jvp([](const Tensor& z) { return sin_with_square_rule(z); }, x, tensor({1.0f, 3.0f}));
  expect_close(y.to_vector<float>(), {std::sin(0.5f), std::sin(2.0f)});
  expect_close(t.to_vector<float>(), {1.0f, 12.0f});
  // Per-example gradients through the rule: 10 for every element.
  Tensor batch = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}});
  Tensor g = vmap(grad([](const Tensor& row) { return sum(fake_square(row)); }))(batch);
  ASSERT_EQ(g.shape(), Shape({3, 2}));
  expect_close(g.to_vector<float>(), {10, 10, 10, 10, 10, 10});
}

TEST(CustomGradient, ARuleThatCallsItsOwnFunctionIsAnErrorWhenTraced) {
  // Eagerly the rule runs only when asked, so calling the function again inside it is fine;
  // traced, the rule is traced with the forward pass, and doing so forever is an error.
  std::function<Tensor(const Tensor&)> self_exp;
  auto f = custom_gradient("self_exp", [&](const Tensor& x) {
    return OutputAndGrad{exp(x), [&self_exp, x](const Tensor& dy) { return dy * self_exp(x); }};
  });
  self_exp = f;
  Tensor x = tensor({0.5f});
  expect_close(grad([&](const Tensor& z) { return sum(f(z)); })(x).to_vector<float>(), {std::exp(0.5f)});
  auto traced = function([&](const Tensor& z) { return grad([&](const Tensor& w) { return sum(f(w)); })(z); });
  expect_error([&] { traced(x); }, {"self_exp/grad -> self_exp/grad"});
}

TEST(CustomGradient, ClipGradientExampleOfTheHeaderAndDocs) {
  // The forward pass hands back its input itself: the node still gets outputs of its own.
  CustomVjp clip_gradient("clip_gradient", [](const std::vector<Tensor>& x) { return x; });
  clip_gradient.defvjp(
      [](const std::vector<Tensor>& x) { return VjpForward{x, /*residuals=*/{}}; },
      [](const std::vector<Tensor>&, const std::vector<Tensor>& dy) {
        return std::vector<Tensor>{minimum(maximum(dy[0], scalar_like(dy[0], -1.0)), scalar_like(dy[0], 1.0))};
      });
  Tensor x = tensor({1.0f, 2.0f});
  auto loss = [&](const Tensor& z) { return sum(clip_gradient(z) * tensor({5.0f, -0.5f})); };
  expect_close(grad(loss)(x).to_vector<float>(), {1.0f, -0.5f});
  expect_close(function(grad(loss))(x).to_vector<float>(), {1.0f, -0.5f});
}
