// Keras layers of issue 17: activations, Lambda, Rescaling, Normalization, Conv2DTranspose,
// UpSampling2D, ZeroPadding2D, regularizers and add_loss, weight constraints. Numbers are
// compared with formulas computed here independently (naive loops), shapes with Keras'
// documented output shapes, gradients with finite differences, traced calls with eager ones.
#include <gtest/gtest.h>

#include <eagerflow/eagerflow.h>

#include <cmath>
#include <functional>
#include <limits>

#include "test_util.h"

namespace ef {
namespace {

using testing::expect_close;
using testing::expect_error;
using testing::expect_tensor_near;

std::vector<double> to_doubles(const Tensor& t) { return cast(t, DType::float64).to_vector<double>(); }

// d/ds f(x + s v) at 0 by central differences against <grad f(x), v>, for a random direction v.
void check_gradient(const std::string& what, const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
                    double eps, double tol, std::uint64_t seed = 7) {
  SCOPED_TRACE(what);
  Tensor w = testing::randn(f(x).shape(), seed + 1, x.dtype());
  auto loss = [&](const Tensor& in) { return sum(f(in) * w); };
  GradientTape tape;
  tape.watch(x);
  Tensor g = tape.gradient(loss(x), x);
  ASSERT_TRUE(g.defined());
  Tensor v = testing::randn(x.shape(), seed, x.dtype());
  double analytic = to_doubles(sum(g * v))[0];
  double numeric = (to_doubles(loss(x + v * eps))[0] - to_doubles(loss(x - v * eps))[0]) / (2 * eps);
  EXPECT_NEAR(analytic, numeric, tol * (1 + std::fabs(numeric)));
}

// Gradients of a layer's loss with respect to its input and each trainable weight.
void check_layer_gradient(const std::string& what, nn::Layer& layer, const Tensor& x, double eps = 1e-2,
                          double tol = 2e-2) {
  SCOPED_TRACE(what);
  Tensor y0 = layer(x);
  Tensor w = random::stateless_normal(y0.shape(), 11, 0.0, 1.0, DType::float32);
  auto loss = [&](const Tensor& in) { return sum(layer(in) * w); };
  std::vector<Variable> weights = layer.trainable_weights();
  GradientTape tape;
  tape.watch(x);
  std::vector<GradientSource> sources{x};
  for (const auto& v : weights) sources.emplace_back(v);
  std::vector<Tensor> grads = tape.gradient(loss(x), sources, GradientOptions{UnconnectedGradients::zero, {}});
  Tensor v = random::stateless_normal(x.shape(), 12, 0.0, 1.0, DType::float32);
  double analytic = to_doubles(sum(grads[0] * v))[0];
  double numeric = (to_doubles(loss(x + v * eps))[0] - to_doubles(loss(x - v * eps))[0]) / (2 * eps);
  EXPECT_NEAR(analytic, numeric, tol * (1 + std::fabs(numeric))) << "input gradient";
  for (std::size_t i = 0; i < weights.size(); ++i) {
    Tensor old = weights[i].value().clone();
    Tensor d = random::stateless_normal(old.shape(), 20 + i, 0.0, 1.0, DType::float32);
    weights[i].assign(old + d * eps);
    double up = to_doubles(loss(x))[0];
    weights[i].assign(old - d * eps);
    double down = to_doubles(loss(x))[0];
    weights[i].assign(old);
    double an = to_doubles(sum(grads[1 + i] * d))[0], nu = (up - down) / (2 * eps);
    EXPECT_NEAR(an, nu, tol * (1 + std::fabs(nu))) << weights[i].name();
  }
}

// The same layer call eagerly and through ef::function (a dynamic batch when asked).
void expect_traced_equals_eager(nn::Layer& layer, const Tensor& x, bool dynamic_batch = false) {
  Tensor eager = layer(x);
  FunctionOptions options;
  if (dynamic_batch) {
    std::vector<std::int64_t> dims = x.shape().dims();
    dims[0] = kDynamic;
    options.input_signature = InputSignature{TensorSpec{x.dtype(), Shape(dims), {}}};
  }
  auto f = function([&](const Tensor& in) { return layer(in); }, options);
  Tensor traced = f(x);
  ASSERT_EQ(traced.shape(), eager.shape());
  expect_tensor_near(traced, eager, 1e-6);
}

// ------------------------------------------------------------------ activations

double softplus_ref(double x) { return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0); }

TEST(KerasLayers, ActivationsByNameMatchTheirFormulas) {
  std::vector<double> xs{-100.0, -20.0, -3.0, -1.0, -0.5, -1e-3, 0.0, 1e-3, 0.5, 1.0, 3.0, 20.0, 100.0};
  Tensor x = tensor(xs, Shape{static_cast<std::int64_t>(xs.size())});
  const double selu_a = 1.6732632423543772, selu_s = 1.0507009873554805;
  std::vector<std::pair<std::string, std::function<double(double)>>> cases{
      {"leaky_relu", [](double v) { return v >= 0 ? v : 0.2 * v; }},  // keras.activations' default slope
      {"elu", [](double v) { return v > 0 ? v : std::expm1(v); }},
      {"selu", [&](double v) { return selu_s * (v > 0 ? v : selu_a * std::expm1(v)); }},
      {"softplus", softplus_ref},
      {"softsign", [](double v) { return v / (1 + std::fabs(v)); }},
      {"swish", [](double v) { return v / (1 + std::exp(-v)); }},
      {"silu", [](double v) { return v / (1 + std::exp(-v)); }},
      {"mish", [](double v) { return v * std::tanh(softplus_ref(v)); }},
      {"gelu", [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"relu6", [](double v) { return std::min(std::max(v, 0.0), 6.0); }},
      {"hard_sigmoid", [](double v) { return std::min(std::max(v + 3, 0.0), 6.0) / 6; }},
      {"relu", [](double v) { return std::max(v, 0.0); }},
  };
  for (const auto& [name, ref] : cases) {
    SCOPED_TRACE(name);
    nn::ActivationFn fn(name);
    EXPECT_EQ(fn.name(), name);
    std::vector<double> got = fn(x).to_vector<double>();
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double want = ref(xs[i]);
      EXPECT_NEAR(got[i], want, 1e-12 * (1 + std::fabs(want))) << "x = " << xs[i];
    }
  }
  expect_error([] { nn::ActivationFn("swishy"); }, {"swishy", "mish", "leaky_relu"});
}

TEST(KerasLayers, ActivationGradientsMatchFiniteDifferences) {
  // Points away from the kinks (0 for leaky_relu, elu, relu6 at 0 and 6).
  Tensor x = tensor(std::vector<double>{-4.0, -2.5, -1.2, -0.4, 0.3, 0.9, 1.7, 2.4, 3.3, 7.0}, Shape{2, 5});
  for (std::string name : {"leaky_relu", "elu", "selu", "softplus", "softsign", "swish", "mish", "gelu", "hard_sigmoid"}) {
    nn::ActivationFn fn(name);
    check_gradient(name, [&](const Tensor& t) { return fn(t); }, x, 1e-6, 1e-7);
  }
  // Large inputs: the branch not taken must not turn the gradient into NaN.
  Tensor big = tensor(std::vector<double>{-200.0, 200.0, 800.0}, Shape{3});
  for (std::string name : {"elu", "selu", "softplus", "mish", "swish"}) {
    SCOPED_TRACE(name);
    nn::ActivationFn fn(name);
    GradientTape tape;
    tape.watch(big);
    Tensor g = tape.gradient(sum(fn(big)), big);
    for (double v : g.to_vector<double>()) EXPECT_TRUE(std::isfinite(v));
    for (double v : fn(big).to_vector<double>()) EXPECT_TRUE(std::isfinite(v));
  }
}

TEST(KerasLayers, LeakyReLUAndELULayersUseKerasLayerDefaults) {
  Tensor x = tensor({-2.0f, -0.5f, 0.0f, 1.5f});
  nn::LeakyReLU leaky;
  EXPECT_DOUBLE_EQ(leaky.negative_slope(), 0.3);
  expect_close(leaky(x).to_vector<float>(), {-0.6f, -0.15f, 0.0f, 1.5f});
  nn::LeakyReLU half(0.5);
  expect_close(half(x).to_vector<float>(), {-1.0f, -0.25f, 0.0f, 1.5f});
  nn::ELU elu;
  expect_close(elu(x).to_vector<float>(), {std::expm1f(-2.0f), std::expm1f(-0.5f), 0.0f, 1.5f});
  nn::ELU elu2(2.0);
  expect_close(elu2(x).to_vector<float>(), {2 * std::expm1f(-2.0f), 2 * std::expm1f(-0.5f), 0.0f, 1.5f});
  expect_error([] { nn::LeakyReLU(-0.1); }, {"negative_slope", "-0.1"});
  Tensor y = random::stateless_normal({3, 4}, 3, 0.0, 1.0, DType::float32);
  expect_traced_equals_eager(leaky, y, true);
  expect_traced_equals_eager(elu, y, true);
  nn::Dense dense(3, "leaky_relu");
  Tensor out = dense(y);
  Tensor pre = matmul(y, dense.kernel()) + Tensor(dense.bias());
  expect_tensor_near(out, where(pre >= 0.0, pre, pre * 0.2), 1e-6);
}

// ------------------------------------------------------------------ Lambda, Rescaling

TEST(KerasLayers, LambdaWrapsAFunctionThatTracesAndDifferentiates) {
  int calls = 0;
  nn::Lambda lambda([&](const Tensor& x) {
    ++calls;
    return square(x) * 3.0f + 1.0f;
  });
  EXPECT_EQ(lambda.name().rfind("lambda", 0), 0u);
  Tensor x = tensor({{1.0f, -2.0f}, {0.5f, 3.0f}});
  expect_close(lambda(x).to_vector<float>(), {4.0f, 13.0f, 1.75f, 28.0f});
  auto f = function([&](const Tensor& in) { return lambda(in); });
  calls = 0;
  f(x);
  f(x);
  EXPECT_EQ(calls, 1);  // host code runs at trace time only
  expect_tensor_near(f(x), lambda(x), 1e-6);
  check_layer_gradient("lambda", lambda, x, 1e-2, 1e-2);
  expect_error([] { nn::Lambda(std::function<Tensor(const Tensor&)>()); }, {"lambda", "function"});
}

TEST(KerasLayers, RescalingScalesAndOffsetsAsFloat) {
  nn::Rescaling r(1.0 / 255);
  Tensor pixels = tensor(std::vector<std::int64_t>{0, 51, 255}, Shape{1, 3});
  Tensor y = r(pixels);
  EXPECT_EQ(y.dtype(), DType::float32);
  expect_close(y.to_vector<float>(), {0.0f, 0.2f, 1.0f});
  nn::Rescaling centered(1.0 / 127.5, -1.0);
  expect_close(centered(pixels).to_vector<float>(), {-1.0f, 51 / 127.5f - 1, 1.0f});
  Tensor d = tensor(std::vector<double>{2.0, 4.0}, Shape{1, 2});
  EXPECT_EQ(centered(d).dtype(), DType::float64);  // a float input keeps its dtype
  expect_traced_equals_eager(centered, random::stateless_normal({4, 3}, 5, 0.0, 1.0, DType::float32), true);
}

// ------------------------------------------------------------------ Normalization

TEST(KerasLayers, NormalizationAdaptMatchesKerasDocExamples) {
  Tensor adapt_data = tensor({{0.f, 7.f, 4.f}, {2.f, 9.f, 6.f}, {0.f, 7.f, 4.f}, {2.f, 9.f, 6.f}});
  nn::Normalization norm;
  norm.adapt(adapt_data);
  expect_close(norm(tensor({{0.f, 7.f, 4.f}})).to_vector<float>(), {-1.f, -1.f, -1.f});
  expect_close(norm.mean().to_vector<float>(), {1.f, 8.f, 5.f});
  expect_close(norm.variance().to_vector<float>(), {1.f, 1.f, 1.f});

  nn::Normalization inverse({-1}, std::nullopt, std::nullopt, /*invert=*/true);
  inverse.adapt(adapt_data);
  expect_close(inverse(tensor({{1.f, 2.f, 3.f}})).to_vector<float>(), {2.f, 10.f, 8.f});

  nn::Normalization given({-1}, scalar(3.0f), scalar(2.0f));
  expect_close(given(tensor(std::vector<float>{1.f, 2.f, 3.f}, Shape{3, 1})).to_vector<float>(), {-1.4142135f, -0.70710677f, 0.f});
  EXPECT_TRUE(given.weights().empty());  // Keras keeps given values as constants
}

TEST(KerasLayers, NormalizationStatisticsAreNonTrainableWeights) {
  Tensor data = random::stateless_normal({50, 4, 3}, 9, 2.0, 3.0, DType::float32);
  nn::Normalization norm({-1}, std::nullopt, std::nullopt, false, "norm");
  norm.adapt(data);
  ASSERT_EQ(norm.weights().size(), 3u);
  EXPECT_TRUE(norm.trainable_weights().empty());
  EXPECT_EQ(norm.weights()[0].name(), "norm/mean");
  EXPECT_EQ(norm.weights()[1].name(), "norm/variance");
  EXPECT_EQ(norm.weights()[2].name(), "norm/count");
  EXPECT_EQ(norm.weights()[2].value().item<std::int64_t>(), 200);
  // The statistics independently: per channel over 200 values, population variance.
  std::vector<float> v = data.to_vector<float>();
  for (int c = 0; c < 3; ++c) {
    double s = 0, s2 = 0;
    for (int i = 0; i < 200; ++i) s += v[i * 3 + c];
    double m = s / 200;
    for (int i = 0; i < 200; ++i) s2 += (v[i * 3 + c] - m) * (v[i * 3 + c] - m);
    EXPECT_NEAR(norm.mean().to_vector<float>()[c], m, 1e-5);
    EXPECT_NEAR(norm.variance().to_vector<float>()[c], s2 / 200, 1e-4);
  }
  // The normalized data has mean 0 and variance 1 per channel.
  Tensor y = norm(data);
  expect_close(ef::mean(y, {0, 1}).to_vector<float>(), {0.f, 0.f, 0.f}, 1e-5f);
  expect_close(ef::mean(square(y), {0, 1}).to_vector<float>(), {1.f, 1.f, 1.f}, 1e-4f);
  // Adapting again replaces the statistics; a traced call reads the new values.
  auto f = function([&](const Tensor& x) { return norm(x); });
  Tensor before = f(data);
  norm.adapt(data * 2.0f);
  Tensor after = f(data);
  expect_tensor_near(after, norm(data), 1e-6);
  EXPECT_GT(std::fabs(to_doubles(after)[0] - to_doubles(before)[0]), 1e-3);
  // One mean and variance for everything (Keras' axis=None); several kept axes.
  nn::Normalization all(std::vector<int>{});
  all.adapt(tensor({{1.f, 2.f}, {3.f, 4.f}}));
  EXPECT_EQ(all.mean().rank(), 0);
  EXPECT_NEAR(all.mean().item<float>(), 2.5f, 1e-6);
  EXPECT_NEAR(all.variance().item<float>(), 1.25f, 1e-6);
  nn::Normalization two({1, 2});
  two.adapt(data);
  EXPECT_EQ(two.mean().shape(), (Shape{4, 3}));
  check_layer_gradient("normalization", norm, random::stateless_normal({5, 4, 3}, 2, 0.0, 1.0, DType::float32));
}

TEST(KerasLayers, NormalizationBadInputIsAnErrorNamingTheLayer) {
  nn::Normalization norm({-1}, std::nullopt, std::nullopt, false, "norm");
  expect_error([&] { norm.adapt(zeros({0, 3})); }, {"norm", "empty", "[0,3]"});
  norm.adapt(ones({4, 3}));
  expect_error([&] { norm.adapt(ones({4, 5})); }, {"norm", "[4,5]", "incompatible"});
  expect_error([&] { norm(ones({2, 5})); }, {"norm", "[2,5]"});
  nn::Normalization bad_axis({3}, std::nullopt, std::nullopt, false, "bad_axis");
  expect_error([&] { bad_axis(ones({2, 3})); }, {"bad_axis", "axis", "[2,3]"});
  expect_error([] { nn::Normalization({-1}, scalar(1.0f), std::nullopt); }, {"mean", "variance"});
  nn::Normalization given({-1}, scalar(1.0f), scalar(1.0f), false, "given");
  expect_error([&] { given.adapt(ones({2, 2})); }, {"given", "adapt"});
}

// ------------------------------------------------------------------ Conv2DTranspose

// out[n, i*s + a - pad, j*s + b - pad, f] += x[n, i, j, c] * k[a, b, f, c], cropped to the
// output: a naive loop, independent of the op.
std::vector<float> naive_conv_transpose(const Tensor& x, const Tensor& k, const Tensor& bias, std::int64_t sh,
                                        std::int64_t sw, bool same, Shape& out_shape) {
  auto xs = x.shape(), ks = k.shape();
  std::int64_t n = xs[0], h = xs[1], w = xs[2], c = xs[3], kh = ks[0], kw = ks[1], f = ks[2];
  std::int64_t oh = same ? h * sh : h * sh + std::max<std::int64_t>(kh - sh, 0);
  std::int64_t ow = same ? w * sw : w * sw + std::max<std::int64_t>(kw - sw, 0);
  // "same": TF pads the forward convolution of the output by max(k - s, 0), half before.
  std::int64_t pt = same ? std::max<std::int64_t>(kh - sh, 0) / 2 : 0;
  std::int64_t pl = same ? std::max<std::int64_t>(kw - sw, 0) / 2 : 0;
  out_shape = Shape{n, oh, ow, f};
  std::vector<float> xv = x.to_vector<float>(), kv = k.to_vector<float>(), bv = bias.to_vector<float>();
  std::vector<double> out(static_cast<std::size_t>(n * oh * ow * f), 0.0);
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < h; ++i)
      for (std::int64_t j = 0; j < w; ++j)
        for (std::int64_t ch = 0; ch < c; ++ch)
          for (std::int64_t a = 0; a < kh; ++a)
            for (std::int64_t e = 0; e < kw; ++e) {
              std::int64_t oi = i * sh + a - pt, oj = j * sw + e - pl;
              if (oi < 0 || oi >= oh || oj < 0 || oj >= ow) continue;
              for (std::int64_t g = 0; g < f; ++g)
                out[((b * oh + oi) * ow + oj) * f + g] +=
                    double(xv[((b * h + i) * w + j) * c + ch]) * kv[((a * kw + e) * f + g) * c + ch];
            }
  std::vector<float> result(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) result[i] = static_cast<float>(out[i] + bv[i % f]);
  return result;
}

TEST(KerasLayers, Conv2DTransposeMatchesANaiveLoopAndKerasShapes) {
  struct Case {
    std::int64_t kh, kw, sh, sw;
    std::string padding;
  };
  std::vector<Case> cases{{3, 3, 1, 1, "valid"}, {3, 3, 2, 2, "valid"}, {3, 3, 2, 2, "same"}, {2, 2, 2, 2, "same"},
                          {4, 3, 2, 1, "same"},  {1, 1, 3, 3, "valid"}, {2, 3, 3, 2, "valid"}, {5, 5, 2, 3, "same"}};
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE("kernel " + std::to_string(c.kh) + "x" + std::to_string(c.kw) + " strides " + std::to_string(c.sh) +
                 "x" + std::to_string(c.sw) + " " + c.padding);
    nn::Conv2DTransposeOptions o;
    o.strides = {c.sh, c.sw};
    o.padding = c.padding;
    nn::Conv2DTranspose layer(4, {c.kh, c.kw}, o);
    Tensor x = random::stateless_normal({2, 5, 4, 3}, seed++, 0.0, 1.0, DType::float32);
    Tensor y = layer(x);
    EXPECT_EQ(layer.kernel().shape(), (Shape{c.kh, c.kw, 4, 3}));  // Keras: [kh, kw, filters, in_channels]
    layer.bias().assign(random::stateless_normal({4}, seed++, 0.0, 1.0, DType::float32));
    y = layer(x);
    Shape want_shape;
    std::vector<float> want = naive_conv_transpose(x, layer.kernel(), layer.bias(), c.sh, c.sw, c.padding == "same", want_shape);
    ASSERT_EQ(y.shape(), want_shape);
    expect_close(y.to_vector<float>(), want, 1e-4f);
    expect_traced_equals_eager(layer, x, /*dynamic_batch=*/true);
  }
  // Keras' documented sizes: "valid" in * s + max(k - s, 0), "same" in * s.
  EXPECT_EQ(nn::Conv2DTranspose::output_length(7, 3, 2, false), 15);
  EXPECT_EQ(nn::Conv2DTranspose::output_length(7, 1, 2, false), 14);
  EXPECT_EQ(nn::Conv2DTranspose::output_length(7, 3, 2, true), 14);
}

TEST(KerasLayers, Conv2DTransposeGradientsMatchFiniteDifferences) {
  nn::Conv2DTransposeOptions o;
  o.strides = {2, 2};
  o.padding = "same";
  o.activation = "tanh";
  nn::Conv2DTranspose layer(3, {3, 3}, o);
  check_layer_gradient("conv2d_transpose", layer, random::stateless_normal({2, 3, 4, 2}, 3, 0.0, 1.0, DType::float32));
}

TEST(KerasLayers, Conv2DTransposeBadInputIsAnErrorNamingTheLayerAndShapes) {
  nn::Conv2DTranspose layer(4, {3, 3}, {}, "deconv");
  expect_error([&] { layer(ones({2, 5, 3})); }, {"deconv", "rank 4", "[2,5,3]"});
  layer(ones({1, 5, 5, 3}));
  expect_error([&] { layer(ones({1, 5, 5, 2})); }, {"deconv", "[1,5,5,2]", "3"});
  expect_error([] { nn::Conv2DTranspose(0, {3, 3}); }, {"conv2d_transpose", "filters"});
  nn::Conv2DTransposeOptions bad;
  bad.padding = "full";
  expect_error([&] { nn::Conv2DTranspose(2, {3, 3}, bad); }, {"conv2d_transpose", "full"});
}

// ------------------------------------------------------------------ UpSampling2D, ZeroPadding2D

TEST(KerasLayers, UpSampling2DNearestAndBilinear) {
  Tensor x = random::stateless_normal({2, 3, 4, 2}, 4, 0.0, 1.0, DType::float32);
  std::vector<float> xv = x.to_vector<float>();
  nn::UpSampling2D up;  // (2, 2), nearest
  Tensor y = up(x);
  ASSERT_EQ(y.shape(), (Shape{2, 6, 8, 2}));
  std::vector<float> yv = y.to_vector<float>();
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 8; ++j)
        for (int c = 0; c < 2; ++c)
          ASSERT_EQ(yv[((n * 6 + i) * 8 + j) * 2 + c], xv[((n * 3 + i / 2) * 4 + j / 2) * 2 + c]);
  nn::UpSampling2D up31({3, 1});
  EXPECT_EQ(up31(x).shape(), (Shape{2, 9, 4, 2}));

  nn::UpSampling2D bilinear({2, 3}, "bilinear");
  Tensor b = bilinear(x);
  ASSERT_EQ(b.shape(), (Shape{2, 6, 12, 2}));
  // Half-pixel centers: out o samples (o + 0.5) / s - 0.5, clamped to the image.
  auto sample = [](double o, int s, int in, int& lo, int& hi) {
    double src = (o + 0.5) / s - 0.5, fl = std::floor(src);
    lo = std::clamp(static_cast<int>(fl), 0, in - 1);
    hi = std::clamp(static_cast<int>(fl) + 1, 0, in - 1);
    return src - fl;
  };
  std::vector<float> bv = b.to_vector<float>();
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 12; ++j)
        for (int c = 0; c < 2; ++c) {
          int i0, i1, j0, j1;
          double fi = sample(i, 2, 3, i0, i1), fj = sample(j, 3, 4, j0, j1);
          auto at = [&](int r, int q) { return double(xv[((n * 3 + r) * 4 + q) * 2 + c]); };
          double want = (1 - fi) * ((1 - fj) * at(i0, j0) + fj * at(i0, j1)) + fi * ((1 - fj) * at(i1, j0) + fj * at(i1, j1));
          ASSERT_NEAR(bv[((n * 6 + i) * 12 + j) * 2 + c], want, 1e-5);
        }
  // A constant image stays constant; traced equals eager with a dynamic batch.
  expect_close(bilinear(full({1, 2, 2, 1}, 3.0)).to_vector<float>(), std::vector<float>(24, 3.0f));
  expect_traced_equals_eager(up, x, true);
  expect_traced_equals_eager(bilinear, x, true);
  check_layer_gradient("nearest", up, x);
  check_layer_gradient("bilinear", bilinear, x);
  expect_error([&] { up(ones({2, 3, 4})); }, {"up_sampling2d", "rank 4", "[2,3,4]"});
  expect_error([] { nn::UpSampling2D({2, 2}, "bicubic"); }, {"up_sampling2d", "bicubic"});
  expect_error([] { nn::UpSampling2D({0, 2}); }, {"up_sampling2d", "size"});
}

TEST(KerasLayers, ZeroPadding2DPadsEachSideAsKeras) {
  Tensor x = random::stateless_normal({2, 3, 4, 2}, 6, 0.0, 1.0, DType::float32);
  std::vector<float> xv = x.to_vector<float>();
  auto check = [&](nn::ZeroPadding2D& layer, std::int64_t t, std::int64_t bo, std::int64_t l, std::int64_t r) {
    Tensor y = layer(x);
    std::int64_t oh = 3 + t + bo, ow = 4 + l + r;
    ASSERT_EQ(y.shape(), (Shape{2, oh, ow, 2}));
    std::vector<float> yv = y.to_vector<float>();
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t i = 0; i < oh; ++i)
        for (std::int64_t j = 0; j < ow; ++j)
          for (std::int64_t c = 0; c < 2; ++c) {
            std::int64_t si = i - t, sj = j - l;
            float want = si >= 0 && si < 3 && sj >= 0 && sj < 4 ? xv[((n * 3 + si) * 4 + sj) * 2 + c] : 0.0f;
            ASSERT_EQ(yv[((n * oh + i) * ow + j) * 2 + c], want);
          }
    expect_traced_equals_eager(layer, x, true);
  };
  nn::ZeroPadding2D one;  // Keras' default (1, 1)
  check(one, 1, 1, 1, 1);
  nn::ZeroPadding2D pair(2, 0);
  check(pair, 2, 2, 0, 0);
  nn::ZeroPadding2D full_spec(nn::Padding2D{0, 3, 1, 2});
  check(full_spec, 0, 3, 1, 2);
  check_layer_gradient("zero_padding", full_spec, x);
  expect_error([] { nn::ZeroPadding2D(nn::Padding2D{1, -2, 0, 0}); }, {"zero_padding2d", "-2", ">= 0"});
  expect_error([] { nn::ZeroPadding2D(-1); }, {"zero_padding2d", "-1"});
  expect_error([&] { one(ones({3, 4})); }, {"zero_padding2d", "rank 4", "[3,4]"});
}

// ------------------------------------------------------------------ regularizers and add_loss

double sum_of(const Tensor& t, const std::function<double(double)>& f) {
  double s = 0;
  for (double v : to_doubles(t)) s += f(v);
  return s;
}

TEST(KerasLayers, RegularizersComputeKerasPenalties) {
  Tensor w = tensor({{1.0f, -2.0f}, {0.5f, -0.25f}});
  EXPECT_NEAR(nn::l1()(w).item<float>(), 0.01 * 3.75, 1e-7);
  EXPECT_NEAR(nn::l2()(w).item<float>(), 0.01 * 5.3125, 1e-7);
  EXPECT_NEAR(nn::l1_l2()(w).item<float>(), 0.01 * 3.75 + 0.01 * 5.3125, 1e-7);
  EXPECT_NEAR(nn::l1_l2(0.5, 0.0)(w).item<float>(), 0.5 * 3.75, 1e-6);
  EXPECT_NEAR(nn::Regularizer("l2")(w).item<float>(), 0.01 * 5.3125, 1e-7);
  EXPECT_NEAR(nn::Regularizer("l1_l2")(w).item<float>(), 0.01 * 9.0625, 1e-7);
  EXPECT_EQ(nn::Regularizer("l1").name(), "l1");
  expect_error([] { nn::Regularizer("l3"); }, {"regularizer", "l3"});
  expect_error([] { nn::l2(-1.0); }, {"regularizer", "l2", "non-negative"});
}

TEST(KerasLayers, DenseRegularizersAppearInLossesFromTheCurrentWeights) {
  nn::Dense dense(3);
  dense.kernel_regularizer = nn::l2(0.1);
  dense.bias_regularizer = nn::l1(0.5);
  dense.bias_initializer = nn::constant_initializer(0.25);
  EXPECT_TRUE(dense.losses().empty());
  Tensor x = random::stateless_normal({4, 2}, 1, 0.0, 1.0, DType::float32);
  dense(x);
  std::vector<Tensor> losses = dense.losses();
  ASSERT_EQ(losses.size(), 2u);
  EXPECT_NEAR(losses[0].item<float>(), 0.1 * sum_of(dense.kernel(), [](double v) { return v * v; }), 1e-6);
  EXPECT_NEAR(losses[1].item<float>(), 0.5 * 3 * 0.25, 1e-6);
  // From the current value: assigning the kernel changes the penalty without a call.
  dense.kernel().assign(ones({2, 3}));
  EXPECT_NEAR(dense.losses()[0].item<float>(), 0.1 * 6, 1e-6);
  // A frozen layer's weights are not trainable: Keras leaves their penalties out.
  dense.set_trainable(false);
  EXPECT_TRUE(dense.losses().empty());
}

TEST(KerasLayers, ActivityRegularizerIsDividedByTheBatchSize) {
  nn::Conv2DOptions o;
  o.activity_regularizer = nn::l2(0.01);
  nn::Conv2D conv(2, {3, 3}, o);
  Tensor x = random::stateless_normal({5, 6, 6, 1}, 2, 0.0, 1.0, DType::float32);
  Tensor y = conv(x);
  std::vector<Tensor> losses = conv.losses();
  ASSERT_EQ(losses.size(), 1u);
  EXPECT_NEAR(losses[0].item<float>(), 0.01 * sum_of(y, [](double v) { return v * v; }) / 5, 1e-5);
  // Each call replaces it (a new outermost call clears the add_loss values).
  conv(x * 2.0f);
  ASSERT_EQ(conv.losses().size(), 1u);
  EXPECT_NEAR(conv.losses()[0].item<float>(), 4 * losses[0].item<float>(), 1e-4);
  // Any layer takes one; with a dynamic batch inside a trace the batch comes from the runtime shape.
  nn::Dense dense(2);
  dense.set_activity_regularizer(nn::l1(1.0));
  Tensor in = random::stateless_normal({3, 4}, 3, 0.0, 1.0, DType::float32);
  auto f = function([&](const Tensor& t) {
    Tensor out = dense(t);
    return dense.losses()[0];
  }, FunctionOptions{.input_signature = InputSignature{TensorSpec{DType::float32, Shape{kDynamic, 4}, {}}}});
  Tensor traced = f(in);
  EXPECT_NEAR(traced.item<float>(), sum_of(dense(in), [](double v) { return std::fabs(v); }) / 3, 1e-5);
}

// A layer that adds a loss in call() and holds a regularized sub-layer.
class PenaltyBlock : public nn::Layer {
 public:
  PenaltyBlock() { inner_.kernel_regularizer = nn::l2(0.01); }
  nn::Dense& inner() { return inner_; }

 protected:
  Tensor call(const Tensor& x) override {
    Tensor h = inner_(x);
    add_loss(ef::mean(square(h)) * 0.5f);
    return h;
  }

 private:
  nn::Dense inner_{3};
};

class TwoBlocks : public nn::Layer {
 protected:
  Tensor call(const Tensor& x) override { return b_(a_(x)); }

 public:
  PenaltyBlock a_, b_;
};

TEST(KerasLayers, AddLossCollectsFromSubLayersAndClearsOnTheNextOutermostCall) {
  TwoBlocks model;
  Tensor x = random::stateless_normal({4, 3}, 4, 0.0, 1.0, DType::float32);
  Tensor h1 = model.a_.inner()(x);  // an outermost call of the sub-layer alone: no add_loss there
  Tensor y = model(x);
  std::vector<Tensor> losses = model.losses();
  // Keras' order: add_loss values (outer first, then sub-layers), then weight penalties.
  ASSERT_EQ(losses.size(), 4u);
  Tensor ha = model.a_.inner()(x);
  EXPECT_NEAR(losses[0].item<float>(), 0.5 * sum_of(ha, [](double v) { return v * v; }) / 12, 1e-5);
  EXPECT_NEAR(losses[2].item<float>(), 0.01 * sum_of(model.a_.inner().kernel(), [](double v) { return v * v; }), 1e-6);
  EXPECT_NEAR(losses[3].item<float>(), 0.01 * sum_of(model.b_.inner().kernel(), [](double v) { return v * v; }), 1e-6);
  // Calling block a alone is a new outermost call: it clears its own values only, keeps b's.
  model.a_(x * 2.0f);
  EXPECT_EQ(model.a_.losses().size(), 2u);  // its add_loss + its kernel penalty
  EXPECT_NEAR(model.a_.losses()[0].item<float>(), 4 * losses[0].item<float>(), 1e-4);
  // The next outermost model call starts clean: still one add_loss value per block.
  model(x);
  EXPECT_EQ(model.losses().size(), 4u);
  EXPECT_NEAR(model.losses()[0].item<float>(), losses[0].item<float>(), 1e-6);
  expect_error([&] { model.add_loss(Tensor()); }, {"add_loss", "undefined"});
}

TEST(KerasLayers, LossesJoinTheGradientOfACustomTrainingLoop) {
  nn::Dense dense(2);
  dense.kernel_regularizer = nn::l2(0.05);
  Tensor x = random::stateless_normal({6, 3}, 5, 0.0, 1.0, DType::float32);
  Tensor target = random::stateless_normal({6, 2}, 6, 0.0, 1.0, DType::float32);
  dense(x);
  auto data_loss = [&](const Tensor& pred) { return ef::mean(square(pred - target)); };
  auto grads_with = [&](bool with_losses) {
    GradientTape tape;
    Tensor loss = data_loss(dense(x));
    if (with_losses)
      for (const Tensor& l : dense.losses()) loss = loss + l;
    return tape.gradient(loss, dense.trainable_weights());
  };
  std::vector<Tensor> plain = grads_with(false), reg = grads_with(true);
  // d/dk (0.05 * sum(k^2)) = 0.1 * k: Keras' result for loss + sum(model.losses).
  expect_tensor_near(reg[0], plain[0] + Tensor(dense.kernel()) * 0.1f, 1e-5);
  expect_tensor_near(reg[1], plain[1], 1e-6);

  // The same step traced: the losses are tensors of that trace, the gradient the same.
  auto step = function([&](const Tensor& in) {
    GradientTape tape;
    Tensor loss = data_loss(dense(in));
    for (const Tensor& l : dense.losses()) loss = loss + l;
    return tape.gradient(loss, dense.kernel());
  });
  expect_tensor_near(step(x), reg[0], 1e-5);
}

// ------------------------------------------------------------------ constraints

TEST(KerasLayers, ConstraintsProjectAsKeras) {
  Tensor w = tensor({{3.0f, 0.1f, -1.0f}, {4.0f, 0.2f, 1.0f}});  // column norms 5, sqrt(.05), sqrt(2)
  std::vector<float> col_norm{5.0f, std::sqrt(0.05f), std::sqrt(2.0f)};
  std::vector<float> wv = w.to_vector<float>();
  auto expect_columns = [&](const Tensor& got, const std::function<double(double)>& desired) {
    std::vector<float> g = got.to_vector<float>();
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(g[r * 3 + c], wv[r * 3 + c] * desired(col_norm[c]) / (1e-7 + col_norm[c]), 1e-6);
  };
  expect_columns(nn::max_norm()(w), [](double n) { return std::min(n, 2.0); });
  expect_columns(nn::max_norm(1.0)(w), [](double n) { return std::min(n, 1.0); });
  expect_columns(nn::unit_norm()(w), [](double) { return 1.0; });
  expect_columns(nn::min_max_norm(0.5, 1.5)(w), [](double n) { return std::clamp(n, 0.5, 1.5); });
  expect_columns(nn::min_max_norm(0.5, 1.5, 0.5)(w), [](double n) { return 0.5 * std::clamp(n, 0.5, 1.5) + 0.5 * n; });
  expect_close(nn::Constraint("non_neg")(w).to_vector<float>(), {3.0f, 0.1f, 0.0f, 4.0f, 0.2f, 1.0f});
  // Along rows (axis 1): row norms.
  Tensor rows = nn::max_norm(1.0, {1})(w);
  std::vector<float> rv = rows.to_vector<float>();
  double n0 = std::sqrt(9 + 0.01 + 1);
  EXPECT_NEAR(rv[0], 3.0 / (1e-7 + n0), 1e-6);
  expect_error([] { nn::Constraint("maxnorm"); }, {"constraint", "maxnorm"});
  expect_error([&] { nn::max_norm(2.0, {2})(w); }, {"constraint", "axis 2"});
}

TEST(KerasLayers, ApplyConstraintsAssignsEachConstrainedTrainableWeight) {
  class Net : public nn::Layer {
   public:
    Net() {
      a.kernel_constraint = nn::max_norm(0.5);
      a.bias_constraint = "non_neg";
      b.kernel_constraint = nn::non_neg();
    }
    nn::Dense a{4}, b{2};

   protected:
    Tensor call(const Tensor& x) override { return b(a(x)); }
  } net;
  net.a.bias_initializer = nn::constant_initializer(-1.0);
  Tensor x = random::stateless_normal({3, 5}, 8, 0.0, 1.0, DType::float32);
  net(x);
  Tensor ka = net.a.kernel().value().clone(), kb = net.b.kernel().value().clone();
  net.apply_constraints();
  expect_tensor_near(net.a.kernel(), nn::max_norm(0.5)(ka), 1e-7);
  for (double v : to_doubles(ef::sqrt(sum(square(net.a.kernel()), {0})))) EXPECT_LE(v, 0.5 + 1e-6);
  expect_close(net.a.bias().value().to_vector<float>(), {0, 0, 0, 0});
  expect_tensor_near(net.b.kernel(), maximum(kb, zeros({4, 2})), 0);
  // Inside a traced step (Keras applies them right after the optimizer update).
  auto step = function([&](const Tensor& in) {
    net.a.kernel().assign(Tensor(net.a.kernel()) * 10.0f);
    net.apply_constraints();
    return net(in);
  });
  step(x);
  for (double v : to_doubles(ef::sqrt(sum(square(net.a.kernel()), {0})))) EXPECT_NEAR(v, 0.5, 1e-5);
  // Frozen weights are not updated by the optimizer, so not projected either.
  net.b.kernel().assign(full({4, 2}, -1.0));
  net.b.set_trainable(false);
  net.apply_constraints();
  expect_close(net.b.kernel().value().to_vector<float>(), std::vector<float>(8, -1.0f));
}

TEST(KerasLayers, Conv2DAndConv2DTransposeTakeRegularizersAndConstraints) {
  nn::Conv2DOptions o;
  o.kernel_regularizer = "l1";
  o.kernel_constraint = nn::max_norm(0.1, {0, 1, 2});
  nn::Conv2D conv(2, {3, 3}, o);
  nn::Conv2DTransposeOptions t;
  t.kernel_regularizer = nn::l2(0.5);
  t.bias_constraint = nn::non_neg();
  nn::Conv2DTranspose deconv(3, {2, 2}, t);
  Tensor x = random::stateless_normal({2, 5, 5, 1}, 9, 0.0, 1.0, DType::float32);
  deconv(conv(x));
  ASSERT_EQ(conv.losses().size(), 1u);
  EXPECT_NEAR(conv.losses()[0].item<float>(), 0.01 * sum_of(conv.kernel(), [](double v) { return std::fabs(v); }), 1e-6);
  ASSERT_EQ(deconv.losses().size(), 1u);
  EXPECT_NEAR(deconv.losses()[0].item<float>(), 0.5 * sum_of(deconv.kernel(), [](double v) { return v * v; }), 1e-5);
  conv.apply_constraints();
  for (double v : to_doubles(ef::sqrt(sum(square(conv.kernel()), {0, 1, 2})))) EXPECT_LE(v, 0.1 + 1e-6);
  deconv.bias().assign(tensor({-1.0f, 2.0f, -3.0f}));
  deconv.apply_constraints();
  expect_close(deconv.bias().value().to_vector<float>(), {0.0f, 2.0f, 0.0f});
}

// Conv2D takes Keras' kernel_initializer / bias_initializer (glorot uniform and zeros when empty).
TEST(KerasLayersConv2D, UsesTheGivenInitializers) {
  nn::Conv2DOptions o;
  o.kernel_initializer = nn::constant_initializer(0.5);
  o.bias_initializer = nn::ones_initializer();
  nn::Conv2D conv(2, {3, 3}, o);
  Tensor y = conv(ones({1, 4, 4, 1}));
  EXPECT_EQ(max(abs(Tensor(conv.kernel()) - 0.5)).item<float>(), 0.0f);
  // Each output: 9 taps of 1 * 0.5, plus the bias 1.
  EXPECT_EQ(max(abs(y - 5.5)).item<float>(), 0.0f);
  nn::Conv2D plain(2, {3, 3});
  plain(ones({1, 4, 4, 3}));
  double limit = std::sqrt(6.0 / (27 + 18));
  EXPECT_LE(max(abs(Tensor(plain.kernel()))).item<float>(), limit);
  EXPECT_GT(max(abs(Tensor(plain.kernel()))).item<float>(), 0.5 * limit);
  EXPECT_EQ(max(abs(Tensor(plain.bias()))).item<float>(), 0.0f);
}

}  // namespace
}  // namespace ef
