// The convolution fusion pass (src/passes/conv_fusion.cpp) and its ops (src/ops/fused_conv.h),
// and max pooling's one-pass gradient (src/kernels/cpu/max_pool_grad.cpp).
#include <cmath>

#include "ops/fused_conv.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_tensor_near;

namespace {

Tensor uniform(Shape s, std::uint64_t seed, double lo = -1.0, double hi = 1.0) {
  return random::stateless_uniform(s, seed, lo, hi, DType::float32);
}

passes::PassOptions without_conv_fusion() {
  passes::PassOptions p;
  p.fuse_conv = false;
  return p;
}

// A small CNN's loss and gradients in (x, w1, b1, w2, b2): conv-bias-act-pool twice.
std::vector<Tensor> cnn_grads(const std::vector<Tensor>& a, Tensor (*act)(const Tensor&)) {
  GradientTape tape;
  for (const Tensor& t : a) tape.watch(t);
  Tensor h = max_pool2d(act(conv2d(a[0], a[1]) + a[2]));
  h = max_pool2d(act(conv2d(h, a[3], {1, 1}, "same") + a[4]), {3, 3}, Stride2{2, 2}, "same");
  Tensor loss = sum(h * h);
  return tape.gradient(loss, a);
}

}  // namespace

TEST(ConvFusion, ConvBiasActivationBecomeOneOpWithTheSameNumbers) {
  Tensor x = uniform({3, 9, 8, 4}, 1), w = uniform({3, 3, 4, 5}, 2), b = uniform({5}, 3);
  for (Tensor (*act)(const Tensor&) : {relu, sigmoid, tanh}) {
    auto fn = [&](const Tensor& in) { return act(conv2d(in, w, {2, 1}, "same") + b); };
    Tensor eager = fn(x);
    auto f = function(fn);
    std::string text = f.get_concrete_function(TensorSpec{DType::float32, {kDynamic, 9, 8, 4}})->str();
    EXPECT_NE(text.find("fused_conv2d"), std::string::npos) << text;
    EXPECT_EQ(text.find(" add "), std::string::npos) << text;
    Tensor traced = f(x);
    expect_tensor_near(traced, eager, 1e-6);
    auto unfused = function(fn, {.passes = without_conv_fusion()});
    EXPECT_EQ(unfused.get_concrete_function(x.spec())->str().find("fused_conv2d"), std::string::npos);
    expect_tensor_near(unfused(x), eager, 0.0);
  }
  // A bias alone, an activation alone.
  auto bias_only = function([&](const Tensor& in) { return conv2d(in, w) + b; });
  EXPECT_NE(bias_only.get_concrete_function(x.spec())->str().find("fused_conv2d[strides=(1,1) padding=valid bias=True]"),
            std::string::npos)
      << bias_only.get_concrete_function(x.spec())->str();
  expect_tensor_near(bias_only(x), conv2d(x, w) + b, 1e-6);
  auto relu_only = function([&](const Tensor& in) { return relu(conv2d(in, w)); });
  expect_tensor_near(relu_only(x), relu(conv2d(x, w)), 0.0);
}

TEST(ConvFusion, NaNStaysNaNThroughTheFusedRelu) {
  Tensor x = uniform({1, 4, 4, 2}, 4), w = uniform({2, 2, 2, 3}, 5), b = tensor(std::vector<float>{NAN, 0, 1});
  auto f = function([&](const Tensor& in) { return relu(conv2d(in, w) + b); });
  std::vector<float> got = f(x).to_vector<float>(), want = relu(conv2d(x, w) + b).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(std::isnan(got[i]), std::isnan(want[i])) << i;
  EXPECT_TRUE(std::isnan(got[0]));
}

TEST(ConvFusion, NoFusionWhenTheConvolutionIsReadTwice) {
  Tensor w = uniform({2, 2, 3, 4}, 6), b = uniform({4}, 7);
  auto f = function([&](const Tensor& in) {
    Tensor y = conv2d(in, w);
    return std::make_pair(relu(y + b), y);
  });
  Tensor x = uniform({2, 5, 5, 3}, 8);
  EXPECT_EQ(f.get_concrete_function(x.spec())->str().find("fused_conv2d"), std::string::npos);
  auto [a, y] = f(x);
  expect_tensor_near(y, conv2d(x, w), 0.0);
  expect_tensor_near(a, relu(conv2d(x, w) + b), 0.0);
  // A bias that is not one value per filter stays a separate add.
  Tensor wide = uniform({4, 4, 4}, 9);
  auto g = function([&](const Tensor& in) { return relu(conv2d(in, w) + wide); });
  EXPECT_EQ(g.get_concrete_function(x.spec())->str().find("bias=True"), std::string::npos);
  expect_tensor_near(g(x), relu(conv2d(x, w) + wide), 0.0);
}

TEST(ConvFusion, TrainStepGradientsMatchTheUnfusedGraph) {
  std::vector<Tensor> a{uniform({4, 12, 12, 2}, 10), uniform({3, 3, 2, 6}, 11, -0.5, 0.5), uniform({6}, 12, -0.1, 0.1),
                        uniform({3, 3, 6, 5}, 13, -0.5, 0.5), uniform({5}, 14, -0.1, 0.1)};
  for (Tensor (*act)(const Tensor&) : {relu, tanh}) {
    auto body = [&](const std::vector<Tensor>& xs) { return cnn_grads(xs, act); };
    auto fused = function(body);
    auto unfused = function(body, {.passes = without_conv_fusion()});
    std::string text = fused.get_concrete_function(a)->str();
    EXPECT_NE(text.find("fused_conv2d"), std::string::npos) << text;
    EXPECT_NE(text.find("conv2d_backprop_filter_bias"), std::string::npos) << text;
    EXPECT_EQ(text.find("sum_to"), std::string::npos) << text;
    EXPECT_EQ(text.find("max_pool2d_relu_grad") != std::string::npos, act == relu) << text;
    EXPECT_EQ(text.find("relu_grad "), std::string::npos) << text;
    std::vector<Tensor> got = fused(a), want = unfused(a), eager = cnn_grads(a, act);
    ASSERT_EQ(got.size(), 5u);
    for (std::size_t i = 0; i < got.size(); ++i) {
      SCOPED_TRACE(i);
      expect_tensor_near(got[i], want[i], 2e-5);
      expect_tensor_near(want[i], eager[i], 0.0);  // unfused replay: the eager kernels
    }
  }
}

TEST(ConvFusion, FusedOpsDifferentiateLikeTheComposedOps) {
  // The passes make these ops after autodiff; a graph holding them can still be differentiated
  // (first and second order) through their own rules.
  Tensor x = uniform({2, 6, 5, 3}, 15), w = uniform({3, 2, 3, 4}, 16), b = uniform({4}, 17), r = uniform({2, 4, 4, 4}, 18);
  Conv2DParams p{1, 1, 1, 1, false};
  for (auto act : {std::optional<UnaryKind>(UnaryKind::relu), std::optional<UnaryKind>(UnaryKind::sigmoid),
                   std::optional<UnaryKind>()}) {
    GradientTape fused_tape, composed_tape;
    for (const Tensor* t : {&x, &w, &b}) {
      fused_tape.watch(*t);
      composed_tape.watch(*t);
    }
    Tensor y = dispatch1(FusedConv2D(p, true, act), {x, w, b});
    Tensor z = conv2d(x, w) + b;
    Tensor want_y = act == UnaryKind::relu ? relu(z) : act == UnaryKind::sigmoid ? sigmoid(z) : z;
    expect_tensor_near(y, want_y, 1e-6);
    std::vector<Tensor> got = fused_tape.gradient(sum(y * r), std::vector<Tensor>{x, w, b});
    std::vector<Tensor> want = composed_tape.gradient(sum(want_y * r), std::vector<Tensor>{x, w, b});
    for (std::size_t i = 0; i < 3; ++i) expect_tensor_near(got[i], want[i], 1e-5);
  }
  // (dw, db) from one primitive, and its own gradient in dy and x.
  Tensor dy = uniform({2, 4, 4, 4}, 19), rw = uniform({3, 2, 3, 4}, 20), rb = uniform({4}, 21);
  GradientTape t1, t2;
  t1.watch(dy);
  t1.watch(x);
  t2.watch(dy);
  t2.watch(x);
  std::vector<Tensor> both = dispatch(Conv2DBackpropFilterBias(p), std::vector<Tensor>{x, dy, w});
  GradientTape filter_tape;
  filter_tape.watch(w);
  Tensor dw = filter_tape.gradient(sum(conv2d(x, w) * dy), w);
  expect_tensor_near(both[0], dw, 1e-5);
  expect_tensor_near(both[1], sum(dy, {0, 1, 2}), 1e-5);
  std::vector<Tensor> got = t1.gradient(sum(both[0] * rw) + sum(both[1] * rb), std::vector<Tensor>{dy, x});
  Tensor dw2;
  {
    GradientTape inner;
    inner.watch(w);
    dw2 = inner.gradient(sum(conv2d(x, w) * dy), w);
  }
  std::vector<Tensor> want = t2.gradient(sum(dw2 * rw) + sum(sum(dy, {0, 1, 2}) * rb), std::vector<Tensor>{dy, x});
  for (std::size_t i = 0; i < 2; ++i) expect_tensor_near(got[i], want[i], 1e-5);
  // Bad input: a bias that does not match the filters.
  ef::testing::expect_error([&] { dispatch1(FusedConv2D(p, true, UnaryKind::relu), {x, w, ones({5})}); },
                            {"fused_conv2d", "bias"});
  ef::testing::expect_error([&] { FusedConv2D(p, false, UnaryKind::gelu); }, {"fused_conv2d", "gelu"});
}

namespace {

// Max pooling's gradient the slow way: each window's first maximum (row-major, padding
// excluded) takes dy, in double.
std::vector<double> max_pool_grad_reference(const Tensor& x, const Tensor& dy, std::int64_t kh, std::int64_t kw,
                                            std::int64_t sh, std::int64_t sw, std::int64_t pt, std::int64_t pl) {
  std::int64_t n = x.shape()[0], h = x.shape()[1], w = x.shape()[2], c = x.shape()[3];
  std::int64_t oh = dy.shape()[1], ow = dy.shape()[2];
  std::vector<float> xv = x.to_vector<float>(), gv = dy.to_vector<float>();
  std::vector<double> dx(xv.size(), 0.0);
  for (std::int64_t b = 0; b < n; ++b)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j)
        for (std::int64_t k = 0; k < c; ++k) {
          std::int64_t best = -1;
          for (std::int64_t u = i * sh - pt; u < i * sh - pt + kh; ++u)
            for (std::int64_t v = j * sw - pl; v < j * sw - pl + kw; ++v) {
              if (u < 0 || v < 0 || u >= h || v >= w) continue;
              std::int64_t at = ((b * h + u) * w + v) * c + k;
              if (best < 0 || xv[static_cast<std::size_t>(at)] > xv[static_cast<std::size_t>(best)]) best = at;
            }
          if (best >= 0) dx[static_cast<std::size_t>(best)] += gv[static_cast<std::size_t>(((b * oh + i) * ow + j) * c + k)];
        }
  return dx;
}

// relu's gradient after max pooling's, as autodiff composes them.
Tensor relu_grad_of_pool(const Tensor& y, const Tensor& dy, Stride2 pool, Stride2 strides, const char* padding) {
  GradientTape tape;
  tape.watch(y);
  Tensor dx = tape.gradient(max_pool2d(y, pool, strides, padding), y, GradientOptions{UnconnectedGradients::none, dy});
  return where(y > 0.0, dx, scalar_like(dx, 0.0));
}

}  // namespace

TEST(MaxPoolGrad, MatchesTheReferenceForEveryWindowLayout) {
  struct Case {
    Shape x;
    Stride2 pool, strides;
    const char* padding;
    std::int64_t pt, pl;
  };
  // Tiling windows, tails left over, gaps between windows, overlapping windows with and
  // without padding, more channels than one block.
  for (const Case& c : std::vector<Case>{{{2, 6, 6, 3}, {2, 2}, {2, 2}, "valid", 0, 0},
                                         {{2, 7, 5, 3}, {2, 2}, {2, 2}, "valid", 0, 0},
                                         {{1, 9, 8, 2}, {2, 2}, {3, 3}, "valid", 0, 0},
                                         {{2, 7, 7, 3}, {3, 3}, {2, 2}, "same", 1, 1},
                                         {{1, 6, 7, 5}, {3, 2}, {1, 1}, "valid", 0, 0},
                                         {{3, 4, 4, 70}, {2, 2}, {2, 2}, "same", 0, 0},
                                         {{1, 5, 5, 9}, {2, 2}, {2, 2}, "same", 0, 0},
                                         {{2, 7, 7, 29}, {3, 3}, {2, 2}, "same", 1, 1}}) {
    SCOPED_TRACE(c.x.str() + " pool " + std::to_string(c.pool.h) + "x" + std::to_string(c.pool.w) + " strides " +
                 std::to_string(c.strides.h) + " " + c.padding);
    // NaN never wins a window unless it comes first (x > NaN is false), as in the reference.
    Tensor x = uniform(c.x, 22), dy;
    x = where(uniform(c.x, 21) > 0.9, full({}, NAN), x);
    GradientTape tape;
    tape.watch(x);
    Tensor y = max_pool2d(x, c.pool, c.strides, c.padding);
    dy = uniform(y.shape(), 23);
    Tensor dx = tape.gradient(y, x, GradientOptions{UnconnectedGradients::none, dy});
    std::vector<double> want = max_pool_grad_reference(x, dy, c.pool.h, c.pool.w, c.strides.h, c.strides.w, c.pt, c.pl);
    std::vector<float> got = dx.to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6 * (1 + std::fabs(want[i]))) << i;
    // Traced: the same kernel, the same bits.
    auto f = function([&](const Tensor& in, const Tensor& g) {
      GradientTape t;
      t.watch(in);
      return t.gradient(max_pool2d(in, c.pool, c.strides, c.padding), in, GradientOptions{UnconnectedGradients::none, g});
    });
    EXPECT_EQ(f(x, dy).to_vector<float>(), got);
  }
}

TEST(MaxPoolGrad, ReluGradFusedIntoThePoolingGradientIsBitEqual) {
  // relu_grad(y, max_pool2d_grad(y, dy)) in one op: the same bits, windows tiling, with tails
  // and overlapping; maxima <= 0 and NaN take no gradient.
  for (auto [pool, strides, padding] : std::vector<std::tuple<Stride2, Stride2, const char*>>{
           {{2, 2}, {2, 2}, "valid"}, {{3, 3}, {2, 2}, "same"}, {{2, 2}, {2, 2}, "same"}}) {
    // 29 channels: a 16-wide AVX-512 block, an 8-wide AVX2 block, a 4-wide SSE2 block and one
    // channel alone.
    Tensor z = uniform({2, 7, 7, 29}, 24);
    z = where(uniform({2, 7, 7, 29}, 25) > 0.9, full({}, NAN), z);
    Tensor y = relu(z);
    Tensor dy = uniform(max_pool2d(y, pool, strides, padding).shape(), 26);
    Pool2DParams p{pool.h, pool.w, strides.h, strides.w, std::string(padding) == "same", true};
    Tensor fused = dispatch1(MaxPool2DReluGrad(p), {y, dy});
    Tensor composed = relu_grad_of_pool(y, dy, pool, strides, padding);
    EXPECT_EQ(fused.to_vector<float>(), composed.to_vector<float>());
  }
  ef::testing::expect_error([] { dispatch1(MaxPool2DReluGrad({}), {ones({1, 4, 4, 2}), ones({1, 3, 2, 2})}); },
                            {"max_pool2d_relu_grad", "does not fit"});
}

TEST(MaxPoolGrad, TiesGoToTheFirstMaximumOfEachWindow) {
  // 29 channels: every vector width the kernel has (16, 8, 4 and 1) sees the ties.
  Tensor x = ones({1, 4, 4, 29});
  GradientTape tape;
  tape.watch(x);
  Tensor dx = tape.gradient(max_pool2d(x), x);
  std::vector<float> got = dx.to_vector<float>();
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t j = 0; j < 4; ++j)
      for (std::int64_t c = 0; c < 29; ++c)
        EXPECT_EQ(got[static_cast<std::size_t>((i * 4 + j) * 29 + c)], i % 2 == 0 && j % 2 == 0 ? 1.0f : 0.0f)
            << i << "," << j << "," << c;
}
