// relu_grad and gelu_grad (src/ops/activation_grad_op.h): the one-pass gradients of relu and
// gelu give the composed formulas' numbers (float32 gelu: within a few ulp of the exact
// derivative, from its own kernel), run everywhere the gradient rules run (eager, traced,
// vmap) and differentiate again.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/activation_grad_op.h"
#include "test_util.h"

using namespace ef;
using ef::testing::randn;

namespace {

std::vector<std::uint64_t> bits(const Tensor& t) {
  Tensor d = cast(t, DType::float64);
  std::vector<double> v = d.to_vector<double>();
  std::vector<std::uint64_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(double));
  return b;
}

Tensor composed_relu_grad(const Tensor& x, const Tensor& g) { return where(x > 0.0, g, scalar_like(g, 0.0)); }
Tensor composed_gelu_grad(const Tensor& x, const Tensor& g) {
  return g * ((erf(x * 0.70710678118654752440) + 1.0) * 0.5 + x * exp(x * x * -0.5) * 0.39894228040143267794);
}

// g (Phi(x) + x phi(x)) in double, and the size of its terms (the bound's scale: the two terms
// cancel near x = -0.75, where no float32 formula keeps relative accuracy).
struct GeluGradRef {
  double value, scale;
};
GeluGradRef gelu_grad_ref(double x, double g) {
  double cdf = 0.5 * std::erfc(-x * 0.70710678118654752440);
  double xpdf = x * std::exp(-0.5 * x * x) * 0.39894228040143267794;
  if (std::isinf(x)) xpdf = 0.0;  // the limit
  return {g * (cdf + xpdf), std::fabs(g) * (cdf + std::fabs(xpdf))};
}

// Every float32 gelu_grad element within 4 ulp (of its terms' size) of the value in double.
void expect_float32_gelu_grad_near_exact(const Tensor& x, const Tensor& g, const Tensor& got) {
  std::vector<float> xv = x.to_vector<float>(), gv = g.to_vector<float>(), out = got.to_vector<float>();
  for (std::size_t i = 0; i < xv.size(); ++i) {
    GeluGradRef r = gelu_grad_ref(xv[i], gv[i]);
    EXPECT_NEAR(out[i], r.value, 4 * 5.96e-8 * r.scale + 1e-37) << "x=" << xv[i] << " g=" << gv[i];
  }
}

// Gradients of relu / gelu through a tape, for the cotangent g.
Tensor tape_grad(Tensor (*act)(const Tensor&), const Tensor& x, const Tensor& g) {
  Tensor in = x * 1.0;
  GradientTape tape;
  tape.watch(in);
  return tape.gradient(act(in), in, GradientOptions{UnconnectedGradients::none, g});
}

}  // namespace

TEST(ActivationGrad, EqualTheComposedFormulas) {
  // Large enough for the parallel loop and several gelu blocks; odd sizes leave tails.
  for (DType dt : {DType::float32, DType::float64})
    for (std::int64_t n : {1, 7, 513, 70001}) {
      SCOPED_TRACE(std::string(name_of(dt)) + " n=" + std::to_string(n));
      Tensor x = randn({n}, 1, dt) * 3.0, g = randn({n}, 2, dt);
      EXPECT_EQ(bits(relu_grad(relu(x), g)), bits(composed_relu_grad(x, g)));
      EXPECT_EQ(bits(tape_grad(relu, x, g)), bits(composed_relu_grad(x, g)));
      if (dt == DType::float64) {
        EXPECT_EQ(bits(gelu_grad(x, g)), bits(composed_gelu_grad(x, g)));
      } else {
        expect_float32_gelu_grad_near_exact(x, g, gelu_grad(x, g));
        ef::testing::expect_tensor_near(gelu_grad(x, g), composed_gelu_grad(x, g), 1e-6);
      }
      EXPECT_EQ(bits(tape_grad(gelu, x, g)), bits(gelu_grad(x, g)));
    }
}

TEST(ActivationGrad, ReluGradFromTheOutputMatchesTheInputAtEdges) {
  // relu's gradient reads relu's output: 0 where x <= 0, at -0, NaN and -inf; g where x > 0.
  Tensor x = tensor(std::vector<float>{-0.0f, 0.0f, NAN, -INFINITY, INFINITY, 1e-38f, -1e-38f, 2.0f});
  Tensor g = tensor(std::vector<float>{1, 2, 3, 4, 5, 6, 7, NAN});
  EXPECT_EQ(bits(tape_grad(relu, x, g)), bits(composed_relu_grad(x, g)));
  std::vector<float> got = tape_grad(relu, x, g).to_vector<float>();
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[2], 0.0f);
  EXPECT_EQ(got[4], 5.0f);
  EXPECT_EQ(got[5], 6.0f);
  EXPECT_TRUE(std::isnan(got[7]));  // the cotangent's NaN passes where x > 0
  // Integer relu too (its gradient op takes every non-bool dtype).
  Tensor xi = tensor(std::vector<std::int32_t>{-2, 0, 3}), gi = tensor(std::vector<std::int32_t>{5, 6, 7});
  EXPECT_EQ(relu_grad(relu(xi), gi).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 0, 7}));
}

TEST(ActivationGrad, TheGradientRulesEmitOneOp) {
  auto f = function([](const Tensor& x) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(relu(x) + gelu(x));
    return tape.gradient(y, x);
  });
  std::string text = ir::to_text(f.get_concrete_function(TensorSpec{DType::float32, {4, 5}})->traced_graph());
  EXPECT_NE(text.find("relu_grad"), std::string::npos) << text;
  EXPECT_NE(text.find("gelu_grad"), std::string::npos) << text;
  EXPECT_EQ(text.find("where"), std::string::npos) << text;
  EXPECT_EQ(text.find("erf"), std::string::npos) << text;
  Tensor x = randn({4, 5}, 3, DType::float32);
  EXPECT_EQ(bits(f(x)), bits(composed_relu_grad(x, ones_like(x)) + gelu_grad(x, ones_like(x))));
}

TEST(ActivationGrad, SecondOrderInDouble) {
  Tensor x = randn({3, 4}, 4) * 2.0 + where(randn({3, 4}, 9) > 0.0, scalar<double>(0.1), scalar<double>(-0.1));
  Tensor v = randn({3, 4}, 5);
  auto hvp = [&](Tensor (*act)(const Tensor&)) {
    return grad([&](const Tensor& z) { return sum(grad([&](const Tensor& w) { return sum(act(w)); })(z) * v); })(x);
  };
  // gelu'' = phi(x) (2 - x^2); relu'' = 0 away from 0.
  Tensor want = v * exp(x * x * -0.5) * 0.39894228040143267794 * (2.0 - x * x);
  ef::testing::expect_tensor_near(hvp(gelu), want, 1e-12);
  ef::testing::expect_tensor_near(hvp(relu), zeros_like(x), 0.0);
  // Central differences of the gradient op itself in x (gelu) and in g (both: linear).
  double eps = 1e-6;
  Tensor g = randn({3, 4}, 6);
  Tensor dx = (gelu_grad(x + eps, g) - gelu_grad(x - eps, g)) / (2 * eps);
  ef::testing::expect_tensor_near(dx, g * exp(x * x * -0.5) * 0.39894228040143267794 * (2.0 - x * x), 1e-7);
  Tensor dg_numeric = (gelu_grad(x, g + eps * v) - gelu_grad(x, g - eps * v)) / (2 * eps);
  ef::testing::expect_tensor_near(dg_numeric, gelu_grad(x, v), 1e-7);
}

TEST(ActivationGrad, TracedEqualsEagerAndVmapEqualsALoop) {
  Tensor xs = randn({3, 6}, 7, DType::float32) * 2.0, gs = randn({3, 6}, 8, DType::float32);
  auto per_example = [](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{tape_grad(relu, a[0], a[1]) + tape_grad(gelu, a[0], a[1])};
  };
  auto traced = function([&](const Tensor& x, const Tensor& g) { return per_example({x, g})[0]; });
  EXPECT_EQ(bits(traced(xs, gs)), bits(per_example({xs, gs})[0]));
  // Batched in both arguments, and in x only (g shared: the op broadcasts).
  Tensor both = vmap([&](const Tensor& x, const Tensor& g) { return per_example({x, g})[0]; })(xs, gs);
  Tensor g0 = slice(gs, {0, 0}, {1, 6});
  Tensor shared = vmap([&](const Tensor& x) { return per_example({x, reshape(g0, {6})})[0]; })(xs);
  for (std::int64_t i = 0; i < 3; ++i) {
    Tensor xi = reshape(slice(xs, {i, 0}, {i + 1, 6}), {6}), gi = reshape(slice(gs, {i, 0}, {i + 1, 6}), {6});
    ef::testing::expect_tensor_near(reshape(slice(both, {i, 0}, {i + 1, 6}), {6}), per_example({xi, gi})[0], 1e-6);
    ef::testing::expect_tensor_near(reshape(slice(shared, {i, 0}, {i + 1, 6}), {6}), per_example({xi, reshape(g0, {6})})[0], 1e-6);
  }
}

TEST(ActivationGrad, BadInputsAreErrors) {
  Tensor x = ones({2, 3});
  ef::testing::expect_error([&] { relu_grad(x, ones({2, 3}, DType::float64)); }, {"relu_grad", "float32[2,3]", "float64[2,3]"});
  ef::testing::expect_error([&] { gelu_grad(x, ones({4})); }, {"gelu_grad"});
  ef::testing::expect_error([&] { gelu_grad(tensor(std::vector<std::int32_t>{1}), tensor(std::vector<std::int32_t>{1})); },
                            {"gelu_grad", "int32"});
  ef::testing::expect_error([&] { relu_grad(x > 0.0, x > 0.0); }, {"relu_grad", "bool"});
  // Broadcasting shapes: the same numbers as the shapes expanded (float32 gelu's kernel, the
  // composed formulas otherwise).
  Tensor row = randn({3}, 9, DType::float32);
  EXPECT_EQ(bits(gelu_grad(x, row)), bits(gelu_grad(x, broadcast_to(row, {2, 3}))));
  EXPECT_EQ(bits(gelu_grad(row, x)), bits(gelu_grad(broadcast_to(row, {2, 3}), x)));
  Tensor row64 = cast(row, DType::float64), x64 = cast(x, DType::float64);
  EXPECT_EQ(bits(gelu_grad(x64, row64)), bits(composed_gelu_grad(x64, row64)));
  EXPECT_EQ(bits(relu_grad(row, x)), bits(composed_relu_grad(broadcast_to(row, {2, 3}), x)));
}

TEST(ActivationGrad, ReluGradOnBitsEqualsTheComposedFormulaForEveryBfloat16Value) {
  // The kernel compares float32 bits (bfloat16 comes to it as float32 at the op's boundary):
  // every bfloat16 bit pattern of y (signs, zeros, subnormals, inf, NaN), in bfloat16 and
  // widened to float32, against where(y > 0, g, 0).
  std::vector<float> ys, gs;
  for (std::uint32_t b = 0; b < 0x10000u; b += 7) {
    ys.push_back(std::bit_cast<float>(b << 16));
    gs.push_back(static_cast<float>(b % 13) - 6.0f);
  }
  for (std::uint32_t b : {0x0000u, 0x8000u, 0x0001u, 0x8001u, 0x7f80u, 0xff80u, 0x7f81u, 0x7fc0u, 0xffc0u, 0x7f7fu}) {
    ys.push_back(std::bit_cast<float>(b << 16));
    gs.push_back(3.0f);
  }
  Tensor y = cast(tensor(ys), DType::bfloat16), g = cast(tensor(gs), DType::bfloat16);
  EXPECT_EQ(bits(relu_grad(y, g)), bits(composed_relu_grad(y, g)));
  Tensor y32 = tensor(ys), g32 = tensor(gs);
  EXPECT_EQ(bits(relu_grad(y32, g32)), bits(composed_relu_grad(y32, g32)));
}

TEST(ActivationGrad, Float32GeluGradAcrossItsRangeAndAtItsLimits) {
  // A fine sweep through both pieces of Phi (|x| <= 0.75 and the tail) and far beyond the
  // point where the tail leaves float's range.
  std::vector<float> xs, gs;
  for (float v = -30.0f; v <= 30.0f; v += 0.00390625f) {
    xs.push_back(v);
    gs.push_back(v < 0 ? 1.5f : -0.75f);
  }
  for (float v : {0.75f, -0.75f, std::nextafter(0.75f, 1.0f), std::nextafter(-0.75f, -1.0f), 1e-30f, -1e-30f,
                  -0.0f, 0.0f, 20.0f, -20.0f, std::nextafter(20.0f, 30.0f), -1e30f, 1e30f}) {
    xs.push_back(v);
    gs.push_back(2.0f);
  }
  Tensor x = tensor(xs), g = tensor(gs);
  expect_float32_gelu_grad_near_exact(x, g, gelu_grad(x, g));
  // The limits: 0 at -inf, g at +inf, NaN from a NaN on either side; 0.5 g at zero.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> got = gelu_grad(tensor(std::vector<float>{-inf, inf, nan, 1.0f, -0.0f}),
                                     tensor(std::vector<float>{3.0f, 3.0f, 1.0f, nan, 3.0f}))
                               .to_vector<float>();
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], 3.0f);
  EXPECT_TRUE(std::isnan(got[2]));
  EXPECT_TRUE(std::isnan(got[3]));
  EXPECT_EQ(got[4], 1.5f);
  // The gradient of gelu's own float32 numbers: central differences agree where gelu is smooth
  // at float32's resolution.
  for (float v : {-3.0f, -1.0f, -0.5f, 0.25f, 0.9f, 2.5f}) {
    float h = 1e-2f;
    float up = gelu(scalar<float>(v + h)).item<float>(), down = gelu(scalar<float>(v - h)).item<float>();
    float d = gelu_grad(scalar<float>(v), scalar<float>(1.0f)).item<float>();
    EXPECT_NEAR((up - down) / (2 * h), d, 2e-4) << v;
  }
}
