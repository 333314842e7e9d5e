// Ops that compute bfloat16 themselves (Primitive::computes_bfloat16): elementwise math,
// relu's and gelu's gradients, max pooling and its gradient. Each must give the bits of the
// float32 op between casts (the path every other op takes), with no casts in a traced graph,
// and the convolution fusion must reach bfloat16 train steps where the CPU has native bfloat16.
#include <cmath>
#include <limits>

#include "kernels/cpu/gemm.h"
#include "ops/activation_grad_op.h"
#include "ops/primitives.h"
#include "test_util.h"

using namespace ef;

namespace {

// Random bfloat16 values with the special ones among them: zeros of both signs, infinities,
// NaN, the largest finite value and a denormal.
Tensor values(const Shape& shape, std::uint64_t seed, double lo = -3.0, double hi = 3.0, bool specials = true) {
  std::vector<float> v = random::stateless_uniform(shape, seed, lo, hi, DType::float32).to_vector<float>();
  if (!specials) return cast(reshape(tensor(v), shape), DType::bfloat16);
  const float special[] = {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN(), 3.38e38f, 1e-40f};
  for (std::size_t i = 0; i < v.size() && i < 7 * 13; i += 13) v[i] = special[i / 13];
  return cast(reshape(tensor(v), shape), DType::bfloat16);
}

// The bits of a bfloat16 tensor (NaN compares by its bits too).
std::vector<std::uint16_t> bits(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::bfloat16);
  const auto* p = static_cast<const std::uint16_t*>(t.raw_data());
  return std::vector<std::uint16_t>(p, p + t.num_elements());
}

Tensor widened(const Tensor& t) { return cast(t, DType::float32); }

std::size_t casts_in(const std::string& graph) {
  std::size_t n = 0;
  for (std::size_t at = graph.find("= cast"); at != std::string::npos; at = graph.find("= cast", at + 1)) ++n;
  return n;
}

}  // namespace

TEST(BFloat16Compute, UnaryOpsGiveTheFloat32OpsBitsInOnePass) {
  Tensor x = values({3, 1500}, 1);  // more than one block of 1024 per thread
  Tensor positive = values({3, 1500}, 2, 0.01, 4.0), unit = values({3, 1500}, 3, -0.99, 0.99);
  for (int k = 0; k <= static_cast<int>(UnaryKind::erfc); ++k) {
    auto kind = static_cast<UnaryKind>(k);
    if (kind == UnaryKind::logical_not) continue;
    SCOPED_TRACE(unary_name(kind));
    const Tensor& in = kind == UnaryKind::log || kind == UnaryKind::sqrt || kind == UnaryKind::rsqrt ||
                               kind == UnaryKind::acosh
                           ? positive
                       : kind == UnaryKind::asin || kind == UnaryKind::acos || kind == UnaryKind::atanh ? unit
                                                                                                         : x;
    Tensor got = dispatch1(Unary(kind), {in});
    EXPECT_EQ(bits(got), bits(cast(dispatch1(Unary(kind), {widened(in)}), DType::bfloat16)));
    auto f = function([kind](const Tensor& t) { return dispatch1(Unary(kind), {t}); });
    EXPECT_EQ(bits(f(in)), bits(got));
    EXPECT_EQ(casts_in(f.get_concrete_function(in.spec())->str()), 0u) << f.get_concrete_function(in.spec())->str();
  }
}

TEST(BFloat16Compute, BinaryOpsGiveTheFloat32OpsBitsForEveryBroadcast) {
  const std::vector<std::pair<Shape, Shape>> shapes{
      {{4, 700}, {4, 700}},        // same shapes
      {{4, 700}, {}},              // a scalar
      {{1}, {4, 700}},             // a scalar first
      {{6, 5, 16}, {16}},          // a bias row (several rows per block)
      {{16}, {6, 5, 16}},          // the row first
      {{3, 1500}, {1, 1500}},      // rows longer than a block
      {{5, 1}, {1, 7}},            // a general broadcast: through float32 copies
      {{2, 3, 4}, {3, 1}}};
  for (int k = static_cast<int>(BinaryKind::add); k <= static_cast<int>(BinaryKind::minimum); ++k) {
    auto kind = static_cast<BinaryKind>(k);
    for (const auto& [sa, sb] : shapes) {
      SCOPED_TRACE(std::string(binary_name(kind)) + " " + sa.str() + " " + sb.str());
      Tensor a = values(sa, 4), b = kind == BinaryKind::pow ? values(sb, 5, 0.1, 2.0) : values(sb, 5);
      Tensor got = dispatch1(Binary(kind), {a, b});
      EXPECT_EQ(bits(got), bits(cast(dispatch1(Binary(kind), {widened(a), widened(b)}), DType::bfloat16)));
    }
  }
  // Comparisons still go through float32; mixing with float32 is still the error it was.
  EXPECT_EQ(less(values({5}, 6), values({5}, 7)).dtype(), DType::bool_);
  ef::testing::expect_error([] { return values({3}, 8) + ones({3}); }, {"add", "bfloat16 and float32 do not mix"});
}

TEST(BFloat16Compute, GradientsKeepTheFloat32FormulasAndRoundOnce) {
  Tensor x = values({4, 300}, 9, -2.0, 2.0);
  for (Tensor (*op)(const Tensor&) : {relu, gelu, sigmoid, tanh, exp}) {
    GradientTape tape;
    tape.watch(x);
    Tensor y = op(x);
    Tensor g = tape.gradient(sum(cast(y * y, DType::float32)), std::vector<Tensor>{x})[0];
    ASSERT_EQ(g.dtype(), DType::bfloat16);
    // The same chain with the op in float32 between casts.
    Tensor xf = widened(x);
    GradientTape ref;
    ref.watch(xf);
    Tensor yf = cast(op(xf), DType::bfloat16);
    Tensor want = ref.gradient(sum(cast(yf * yf, DType::float32)), std::vector<Tensor>{xf})[0];
    // Within bfloat16's rounding of the output the formulas read (sigmoid's 1 - y, tanh's 1 - y^2).
    std::vector<float> got = widened(g).to_vector<float>(), w = want.to_vector<float>();
    double scale = 0;
    for (float v : w)
      if (std::isfinite(v)) scale = std::max(scale, static_cast<double>(std::abs(v)));
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isfinite(w[i])) {
        EXPECT_NEAR(got[i], w[i], scale / 32) << i;
      } else {
        EXPECT_EQ(std::isnan(got[i]), std::isnan(w[i])) << i;
      }
    }
  }
  // relu_grad and gelu_grad themselves: the float32 kernels' bits.
  Tensor y = relu(x), dy = values({4, 300}, 10);
  EXPECT_EQ(bits(relu_grad(y, dy)), bits(cast(relu_grad(widened(y), widened(dy)), DType::bfloat16)));
  EXPECT_EQ(bits(gelu_grad(x, dy)), bits(cast(gelu_grad(widened(x), widened(dy)), DType::bfloat16)));
  Tensor row = values({300}, 11);  // broadcast shapes
  EXPECT_EQ(bits(gelu_grad(x, row)), bits(cast(gelu_grad(widened(x), widened(row)), DType::bfloat16)));
}

TEST(BFloat16Compute, MaxPoolingAndItsGradientsGiveTheFloat32Bits) {
  // 19 channels: eight at a time and the rest; 32: sixteen at a time where the CPU has AVX-512.
  // No NaN here (oneDNN's float32 pooling and the bfloat16 kernel each keep their own rule for
  // NaN; the window's first maximum in bfloat16).
  for (std::int64_t channels : {19, 32}) {
  SCOPED_TRACE(std::to_string(channels) + " channels");
  Tensor x = values({3, 9, 10, channels}, 12, -3.0, 3.0, false);
  {
    std::vector<float> v = widened(x).to_vector<float>();
    v[0] = std::numeric_limits<float>::infinity();
    v[1] = -std::numeric_limits<float>::infinity();
    v[channels + 2] = -0.0f;
    v[2 * 10 * channels + 5] = v[2 * 10 * channels + channels + 5];  // a tie in a window
    x = cast(reshape(tensor(v), x.shape()), DType::bfloat16);
  }
  struct Case {
    Stride2 pool, strides;
    const char* padding;
  };
  for (Case c : {Case{{2, 2}, {2, 2}, "valid"}, Case{{2, 3}, {2, 3}, "same"}, Case{{3, 3}, {2, 2}, "same"},
                 Case{{3, 3}, {1, 1}, "valid"}}) {
    SCOPED_TRACE(std::to_string(c.pool.h) + "x" + std::to_string(c.pool.w) + " " + c.padding);
    Tensor y = max_pool2d(x, c.pool, c.strides, c.padding);
    EXPECT_EQ(bits(y), bits(cast(max_pool2d(widened(x), c.pool, c.strides, c.padding), DType::bfloat16)));
    Tensor dy = values(y.shape(), 13);
    Pool2DParams p{c.pool.h, c.pool.w, c.strides.h, c.strides.w, std::string(c.padding) == "same", true};
    Tensor dx = dispatch1(Pool2DGrad(p), {x, dy});
    EXPECT_EQ(bits(dx), bits(cast(dispatch1(Pool2DGrad(p), {widened(x), widened(dy)}), DType::bfloat16)));
    Tensor rx = relu(x);
    Tensor masked = dispatch1(Pool2DGrad(p), {rx, dy});
    // The value pooled is the one the gradient goes to: each window's first maximum.
    std::vector<float> routed = widened(dispatch1(Pool2DGrad(p), {x, ones_like(y)})).to_vector<float>();
    std::vector<float> xs = widened(x).to_vector<float>();
    double pooled = 0, picked = 0;
    for (float v : widened(y).to_vector<float>()) pooled += std::isfinite(v) ? v : 0;
    for (std::size_t i = 0; i < xs.size(); ++i) picked += routed[i] * (std::isfinite(xs[i]) ? xs[i] : 0);
    if (std::string(c.padding) == "valid" && c.pool.h == c.strides.h) {
      EXPECT_NEAR(pooled, picked, 1e-3);
    }
    EXPECT_EQ(bits(relu_grad(rx, masked)), bits(cast(relu_grad(widened(rx), dispatch1(Pool2DGrad(p), {widened(rx), widened(dy)})),
                                                    DType::bfloat16)));
  }
}
}

TEST(BFloat16Compute, AveragePoolingStaysWithinOneRoundingOfFloat32) {
  // Where the CPU has native bfloat16, average pooling runs on oneDNN's bfloat16 pooling (float32
  // sums, one rounding); elsewhere through float32. Either way: one bfloat16 rounding of the
  // float32 result, traced as eager, and its gradient through float32.
  Tensor x = values({2, 7, 9, 5}, 19, -3.0, 3.0, false);
  for (const char* padding : {"valid", "same"}) {
    SCOPED_TRACE(padding);
    Tensor y = avg_pool2d(x, {3, 2}, Stride2{2, 2}, padding);
    ASSERT_EQ(y.dtype(), DType::bfloat16);
    std::vector<float> got = widened(y).to_vector<float>();
    std::vector<float> want = avg_pool2d(widened(x), {3, 2}, Stride2{2, 2}, padding).to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], std::abs(want[i]) / 256 + 1e-6) << i;
    auto f = function([padding](const Tensor& t) { return avg_pool2d(t, {3, 2}, Stride2{2, 2}, padding); });
    EXPECT_EQ(bits(f(x)), bits(y));
    GradientTape tape;
    tape.watch(x);
    Tensor g = tape.gradient(sum(widened(avg_pool2d(x, {3, 2}, Stride2{2, 2}, padding))), std::vector<Tensor>{x})[0];
    ASSERT_EQ(g.dtype(), DType::bfloat16);
    double total = 0;
    for (float v : widened(g).to_vector<float>()) total += v;
    EXPECT_NEAR(total, static_cast<double>(got.size()), 0.05 * got.size());  // each window passes on 1 in all
  }
}

TEST(BFloat16Compute, AWindowsFirstNaNIsItsMaximum) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Windows [nan, 1, 4, 0.5] and [2, 3, 5, nan]: a NaN is the maximum only where it comes first.
  const std::vector<float> image{nan, 1, 2, 3, 4, 0.5f, 5, nan};
  for (std::int64_t channels : {1, 16}) {  // one at a time, and sixteen at a time on AVX-512
    SCOPED_TRACE(std::to_string(channels) + " channels");
    std::vector<float> v;
    for (float e : image) v.insert(v.end(), static_cast<std::size_t>(channels), e);
    Tensor x = cast(reshape(tensor(v), Shape{1, 2, 4, channels}), DType::bfloat16);
    Tensor pooled = max_pool2d(x);
    std::vector<float> y = widened(pooled).to_vector<float>();
    ASSERT_EQ(y.size(), static_cast<std::size_t>(2 * channels));
    for (std::int64_t c = 0; c < channels; ++c) {
      EXPECT_TRUE(std::isnan(y[c]));
      EXPECT_EQ(y[channels + c], 5.0f);
    }
    // Its gradient goes to the first window's NaN and to the second's 5.
    Pool2DParams p{2, 2, 2, 2, false, true};
    std::vector<float> dx = widened(dispatch1(Pool2DGrad(p), {x, ones_like(pooled)})).to_vector<float>();
    for (std::int64_t c = 0; c < channels; ++c) {
      EXPECT_EQ(dx[0 * channels + c], 1.0f);
      EXPECT_EQ(dx[6 * channels + c], 1.0f);
      for (int i : {1, 2, 3, 4, 5, 7}) EXPECT_EQ(dx[i * channels + c], 0.0f) << i;
    }
  }
}

TEST(BFloat16Compute, ConvolutionTrainStepsFuseAndStayNearFloat32) {
  auto grads = [](const std::vector<Tensor>& a) {
    GradientTape tape;
    for (const Tensor& t : a) tape.watch(t);
    Tensor h = max_pool2d(relu(conv2d(a[0], a[1]) + a[2]));
    h = max_pool2d(relu(conv2d(h, a[3]) + a[4]));
    Tensor loss = sum(cast(h * h, DType::float32));
    return tape.gradient(loss, a);
  };
  std::vector<Tensor> a{values({4, 14, 14, 2}, 14, -1, 1, false), values({3, 3, 2, 16}, 15, -0.5, 0.5, false),
                        values({16}, 16, -0.1, 0.1, false), values({3, 3, 16, 8}, 17, -0.3, 0.3, false),
                        values({8}, 18, -0.1, 0.1, false)};
  auto f = function(grads);
  std::string text = f.get_concrete_function(a)->str();
  if (cpu::native_bfloat16()) {
    EXPECT_NE(text.find("fused_conv2d"), std::string::npos) << text;
    EXPECT_NE(text.find("conv2d_backprop_filter_bias"), std::string::npos) << text;
    EXPECT_NE(text.find("max_pool2d_relu_grad"), std::string::npos) << text;
  }
  // Fusion rounds once where the chain rounds twice: a conv output one bfloat16 step apart can
  // move a pooling window's maximum (ties are common in 8 bits), which routes that window's
  // gradient elsewhere; so the gradients are compared as wholes, within 10% of their norm.
  std::vector<Tensor> got = f(a), eager = grads(a);
  for (std::size_t i = 0; i < got.size(); ++i) {
    std::vector<float> g = widened(got[i]).to_vector<float>(), e = widened(eager[i]).to_vector<float>();
    double diff = 0, norm = 0;
    for (std::size_t j = 0; j < g.size(); ++j) {
      diff += (g[j] - e[j]) * static_cast<double>(g[j] - e[j]);
      norm += e[j] * static_cast<double>(e[j]);
    }
    EXPECT_GT(norm, 0.0) << i;
    EXPECT_LE(std::sqrt(diff), 0.1 * std::sqrt(norm)) << "gradient " << i;
  }
  // Without the fusion, the replay runs eager's kernels: the same bits.
  passes::PassOptions unfused_passes;
  unfused_passes.fuse_conv = false;
  auto unfused = function(grads, {.passes = unfused_passes});
  std::vector<Tensor> plain = unfused(a);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(bits(plain[i]), bits(eager[i])) << i;
  std::vector<Tensor> again = f(a);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(bits(again[i]), bits(got[i]));  // replay is deterministic
}
