// Native bfloat16 matmul (AVX512_BF16 / AMX through oneDNN): the same results as the float32
// path that converts bfloat16 operands, multiplies in float32 and rounds once, to the rounding
// of one bfloat16 ulp; eagerly, traced, with gradients. On a CPU without native bfloat16 the
// float32 path runs and the same comparisons hold exactly.
#include "kernels/cpu/gemm.h"
#include "test_util.h"

using namespace ef;

namespace {

Tensor random_bf16(const Shape& shape, std::uint64_t seed) {
  random::set_seed(seed);
  return cast(random::normal(shape), DType::bfloat16);
}

// The float32 path's result: operands converted exactly, one rounding of the float32 product.
Tensor reference(const Tensor& a, const Tensor& b, bool ta = false, bool tb = false) {
  return cast(matmul(cast(a, DType::float32), cast(b, DType::float32), ta, tb), DType::bfloat16);
}

void expect_close(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), DType::bfloat16);
  ASSERT_EQ(got.shape(), want.shape());
  std::vector<float> g = cast(got, DType::float32).to_vector<float>(), w = cast(want, DType::float32).to_vector<float>();
  for (std::size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], w[i], std::abs(w[i]) * (1.0 / 128) + 1e-2) << "element " << i;  // one bfloat16 ulp, plus sums near 0
}

}  // namespace

TEST(BFloat16Native, MatmulMatchesTheFloat32PathInEveryLayout) {
  Tensor a = random_bf16({37, 64}, 1), b = random_bf16({64, 19}, 2);
  expect_close(matmul(a, b), reference(a, b));
  expect_close(matmul(transpose(a), b, true, false), reference(transpose(a), b, true, false));
  expect_close(matmul(a, transpose(b), false, true), reference(a, transpose(b), false, true));
  Tensor batched = random_bf16({3, 5, 64}, 3);
  expect_close(matmul(batched, b), reference(batched, b));                       // Dense on a sequence
  Tensor bb = random_bf16({3, 64, 7}, 4);
  expect_close(matmul(batched, bb), reference(batched, bb));                     // batch x batch
  expect_close(matmul(random_bf16({1, 5, 64}, 5), bb), reference(random_bf16({1, 5, 64}, 5), bb));  // broadcast a
  Tensor general = random_bf16({2, 1, 4, 8}, 6), other = random_bf16({1, 3, 8, 2}, 7);
  expect_close(matmul(general, other), reference(general, other));              // general broadcast: float32 path
  EXPECT_EQ(matmul(zeros({2, 0}, DType::bfloat16), zeros({0, 3}, DType::bfloat16)).shape(), (Shape{2, 3}));
  Tensor empty_k = matmul(zeros({2, 0}, DType::bfloat16), zeros({0, 3}, DType::bfloat16));
  EXPECT_EQ(cast(empty_k, DType::float32).to_vector<float>(), std::vector<float>(6, 0.f));
}

TEST(BFloat16Native, TracedAndDifferentiatedLikeEager) {
  Tensor a = random_bf16({16, 32}, 8), b = random_bf16({32, 8}, 9);
  auto f = function([](const Tensor& x, const Tensor& w) { return matmul(x, w); });
  EXPECT_EQ(cast(f(a, b), DType::float32).to_vector<float>(), cast(matmul(a, b), DType::float32).to_vector<float>());
  Variable w(b, "w");
  GradientTape tape;
  Tensor loss = sum(cast(matmul(a, Tensor(w)), DType::float32));
  Tensor g = tape.gradient(loss, std::vector<Variable>{w})[0];
  ASSERT_EQ(g.dtype(), DType::bfloat16);
  // d/dw sum(a w) = a^T 1: each column is a's column sums.
  std::vector<float> col = cast(sum(cast(a, DType::float32), {0}), DType::float32).to_vector<float>();
  std::vector<float> got = cast(g, DType::float32).to_vector<float>();
  for (std::int64_t i = 0; i < 32; ++i)
    for (std::int64_t j = 0; j < 8; ++j) EXPECT_NEAR(got[i * 8 + j], col[i], std::abs(col[i]) / 64 + 2e-2);
}

TEST(BFloat16Native, FloatSixteenStillComputesInFloat32) {
  Tensor a = cast(random_bf16({4, 8}, 10), DType::float16), b = cast(random_bf16({8, 3}, 11), DType::float16);
  Tensor want = cast(matmul(cast(a, DType::float32), cast(b, DType::float32)), DType::float16);
  EXPECT_EQ(cast(matmul(a, b), DType::float32).to_vector<float>(), cast(want, DType::float32).to_vector<float>());
}

TEST(BFloat16Native, ARowsBitsDoNotDependOnItsBatch) {
  Tensor a = random_bf16({64, 96}, 12), b = random_bf16({96, 48}, 13);
  std::vector<float> full = cast(matmul(a, b), DType::float32).to_vector<float>();
  for (std::int64_t r : {0, 17, 63}) {
    std::vector<float> one = cast(matmul(slice(a, {r, 0}, {r + 1, 96}), b), DType::float32).to_vector<float>();
    for (std::int64_t j = 0; j < 48; ++j) EXPECT_EQ(one[j], full[r * 48 + j]) << "row " << r << " col " << j;
  }
  std::cout << "[ native bfloat16: " << (cpu::native_bfloat16() ? "yes" : "no (float32 path)") << " ]\n";
}

TEST(BFloat16Native, ConvolutionsMatchTheFloat32PathWithGradients) {
  Tensor x = random_bf16({2, 9, 9, 3}, 14), w = random_bf16({3, 3, 3, 8}, 15);
  for (const char* padding : {"valid", "same"}) {
    Tensor want = cast(conv2d(cast(x, DType::float32), cast(w, DType::float32), {2, 1}, padding), DType::bfloat16);
    expect_close(conv2d(x, w, {2, 1}, padding), want);
  }
  // Gradients come back in bfloat16 and agree with the float32 path's, with 1 and 3 input
  // channels (the filter gradient on oneDNN's AVX512_BF16 kernel, not AMX's) and with 16.
  for (std::int64_t channels : {1, 3, 16}) {
    SCOPED_TRACE("channels " + std::to_string(channels));
    Tensor xc = random_bf16({4, 12, 12, channels}, 20 + static_cast<std::uint64_t>(channels));
    Tensor wc = random_bf16({3, 3, channels, 8}, 30 + static_cast<std::uint64_t>(channels));
    Variable xv(xc, "x"), wv(wc, "w");
    GradientTape tape;
    Tensor loss = sum(cast(conv2d(Tensor(xv), Tensor(wv), {1, 1}, "same"), DType::float32));
    std::vector<Tensor> g = tape.gradient(loss, std::vector<Variable>{xv, wv});
    Variable xf(cast(xc, DType::float32), "xf"), wf(cast(wc, DType::float32), "wf");
    GradientTape tape32;
    Tensor loss32 = sum(conv2d(Tensor(xf), Tensor(wf), {1, 1}, "same"));
    std::vector<Tensor> g32 = tape32.gradient(loss32, std::vector<Variable>{xf, wf});
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(g[i].defined());
      expect_close(g[i], cast(g32[i], DType::bfloat16));
    }
  }
  // float16 convolutions still compute in float32.
  Tensor h = cast(x, DType::float16), hw = cast(w, DType::float16);
  Tensor want16 = cast(conv2d(cast(h, DType::float32), cast(hw, DType::float32)), DType::float16);
  EXPECT_EQ(cast(conv2d(h, hw), DType::float32).to_vector<float>(), cast(want16, DType::float32).to_vector<float>());
}
