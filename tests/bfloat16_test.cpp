// bfloat16: the storage dtype, its rounding, casts (scalar rule and every instruction set's
// vector kernel), the ops that compute in float32 for it, eager == traced, gradients through
// casts, saving, and the error for ops that do not support it.
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>

#include "eagerflow/io/safetensors.h"
#include "kernels/cpu/vec_math.h"
#include "ops/primitives.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

std::uint16_t bits_of(float f) { return bfloat16(f).bits; }
float from_bits32(std::uint32_t u) { return std::bit_cast<float>(u); }

Tensor randf(Shape s, std::uint64_t seed) { return cast(ef::testing::randn(s, seed), DType::float32); }
Tensor bf16(const Tensor& x) { return cast(x, DType::bfloat16); }
std::vector<float> values(const Tensor& x) { return cast(x, DType::float32).to_vector<float>(); }

// |got - want| within bfloat16's rounding of the result and of its inputs (8 significant bits).
void expect_bf16_close(const Tensor& got, const Tensor& want, float rel = 2e-2f, float abs = 2e-2f) {
  ASSERT_EQ(got.dtype(), DType::bfloat16);
  ASSERT_EQ(got.shape(), want.shape());
  auto g = values(got), w = values(want);
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], abs + rel * std::fabs(w[i])) << "at " << i;
}

std::vector<std::uint16_t> raw_bits(const Tensor& t) {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(t.num_elements()));
  if (!out.empty()) std::memcpy(out.data(), t.raw_data(), out.size() * 2);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- the number format
TEST(BFloat16, RoundsToNearestTiesToEven) {
  EXPECT_EQ(bits_of(1.0f), 0x3f80);
  EXPECT_EQ(bits_of(-2.0f), 0xc000);
  // 0x3f808000 is exactly halfway between 0x3f80 and 0x3f81: to the even one.
  EXPECT_EQ(bits_of(from_bits32(0x3f808000u)), 0x3f80);
  EXPECT_EQ(bits_of(from_bits32(0x3f818000u)), 0x3f82);
  // Just above or below the halfway point: to the nearer one.
  EXPECT_EQ(bits_of(from_bits32(0x3f808001u)), 0x3f81);
  EXPECT_EQ(bits_of(from_bits32(0x3f807fffu)), 0x3f80);
  // A carry out of the mantissa moves the exponent.
  EXPECT_EQ(bits_of(from_bits32(0x3fffc000u)), 0x4000);
  EXPECT_EQ(static_cast<float>(bfloat16(3.140625f)), 3.140625f);  // representable: exact
}

TEST(BFloat16, NanInfOverflowAndDenormals) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bits_of(inf), 0x7f80);
  EXPECT_EQ(bits_of(-inf), 0xff80);
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(nan))));
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(-nan))));
  EXPECT_EQ(bits_of(-nan) & 0x8000, 0x8000);  // the sign is kept
  // A NaN whose payload lives only in the low 16 bits must not round to Inf.
  float low_nan = from_bits32(0x7f800001u);
  ASSERT_TRUE(std::isnan(low_nan));
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(low_nan))));
  // Past the largest bfloat16 (0x7f7f, about 3.39e38) by half a step: Inf, as float32 rounds.
  EXPECT_EQ(bits_of(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(bits_of(from_bits32(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(bits_of(from_bits32(0x7f7f8000u)), 0x7f80);  // tie, odd below: up to Inf
  // Denormals are kept and rounded like any other value.
  EXPECT_EQ(bits_of(from_bits32(0x00010000u)), 0x0001);
  EXPECT_EQ(bits_of(from_bits32(0x00008000u)), 0x0000);  // tie to even (zero)
  EXPECT_EQ(bits_of(from_bits32(0x00018000u)), 0x0002);  // tie to even (2)
  EXPECT_EQ(bits_of(from_bits32(0x80010000u)), 0x8001);
  EXPECT_EQ(bits_of(-0.0f), 0x8000);
}

TEST(BFloat16, EveryValueRoundTripsThroughFloat32) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    auto v = bfloat16::from_bits(static_cast<std::uint16_t>(b));
    float f = v;
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(f))));
      continue;
    }
    ASSERT_EQ(bfloat16(f).bits, b) << "bits " << b;
  }
}

TEST(BFloat16, FromFloat64RoundsOnce) {
  // 1 + 2^-8 + 2^-40: just above the halfway point between 1 and 1 + 2^-7, so it rounds up.
  // Rounding to float32 first would land exactly on the halfway point and then go to 1.
  double d = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(bfloat16(d).bits, 0x3f81);
  EXPECT_EQ(raw_bits(cast(scalar<double>(d), DType::bfloat16))[0], 0x3f81);
  EXPECT_EQ(raw_bits(full({1}, d, DType::bfloat16))[0], 0x3f81);
  EXPECT_EQ(bfloat16(1e300).bits, 0x7f80);
  EXPECT_EQ(bfloat16(-1e300).bits, 0xff80);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<double>::quiet_NaN()))));
}

// ---------------------------------------------------------------- casts
TEST(BFloat16, VectorCastsMatchTheScalarRuleOnEveryInstructionSet) {
  // Special values and a sweep of bit patterns, through each instruction set's kernel.
  std::vector<float> xs{0.0f, -0.0f, 1.0f, from_bits32(0x3f808000u), from_bits32(0x3f818000u),
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), from_bits32(0x7f800001u),
                        std::numeric_limits<float>::max(), from_bits32(0x00018000u), from_bits32(0x80008000u)};
  for (std::uint32_t u = 0; u < 4000; ++u) xs.push_back(from_bits32(u * 1073741u + 12345u));
  for (auto isa : {cpu::vec::Isa::baseline, cpu::vec::Isa::avx2, cpu::vec::Isa::avx512}) {
    const cpu::vec::Kernels* k = cpu::vec::kernels_for(isa);
    if (!k) continue;
    std::vector<std::uint16_t> out(xs.size());
    ASSERT_TRUE(k->cast(0, 5, xs.data(), out.data(), static_cast<std::int64_t>(xs.size())));
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (std::isnan(xs[i])) EXPECT_TRUE(std::isnan(float_from_bfloat16_bits(out[i]))) << k->name << " at " << i;
      else EXPECT_EQ(out[i], bits_of(xs[i])) << k->name << " at " << i;
    }
    std::vector<float> back(xs.size());
    ASSERT_TRUE(k->cast(5, 0, out.data(), back.data(), static_cast<std::int64_t>(xs.size())));
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (!std::isnan(xs[i])) { EXPECT_EQ(std::bit_cast<std::uint32_t>(back[i]), std::uint32_t{out[i]} << 16); }
  }
}

TEST(BFloat16, CastsToAndFromEveryDtype) {
  Tensor x = tensor<float>({1.5f, -2.25f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN(), 0.0f});
  Tensor b = bf16(x);
  EXPECT_EQ(b.dtype(), DType::bfloat16);
  EXPECT_EQ(b.nbytes(), 12u);
  // Integers saturate and NaN becomes 0, as for float32.
  auto i32 = cast(b, DType::int32).to_vector<std::int32_t>();
  EXPECT_EQ(i32, (std::vector<std::int32_t>{1, -2, 2147483647, -2147483647 - 1, 0, 0}));
  auto flags = cast(b, DType::bool_).to_vector<bool>();
  EXPECT_EQ(flags, (std::vector<bool>{true, true, true, true, true, false}));
  EXPECT_EQ(cast(b, DType::float64).to_vector<double>()[1], -2.25);
  EXPECT_EQ(values(bf16(tensor<std::int32_t>({7, -3, 257}))), (std::vector<float>{7, -3, 256}));  // 257: 9 bits
  EXPECT_EQ(values(bf16(tensor<std::int64_t>({1, 2}))), (std::vector<float>{1, 2}));
  EXPECT_EQ(values(bf16(tensor<bool>({true, false}))), (std::vector<float>{1, 0}));
  // bfloat16 to bfloat16: the same values.
  EXPECT_EQ(raw_bits(bf16(b)), raw_bits(b));
  // The C++ element type reads the storage.
  EXPECT_EQ(b.data<bfloat16>()[0].bits, 0x3fc0);
  EXPECT_EQ(tensor<bfloat16>({bfloat16(2.0f)}).dtype(), DType::bfloat16);
}

TEST(BFloat16, NamesFactoriesAndPrinting) {
  EXPECT_EQ(name_of(DType::bfloat16), "bfloat16");
  EXPECT_EQ(short_name_of(DType::bfloat16), "bf16");
  EXPECT_EQ(dtype_named("bfloat16"), DType::bfloat16);
  EXPECT_EQ(dtype_named("bf16"), DType::bfloat16);
  EXPECT_FALSE(dtype_named("bfloat32").has_value());
  EXPECT_TRUE(is_floating(DType::bfloat16));
  EXPECT_EQ(size_of(DType::bfloat16), 2u);
  EXPECT_EQ(values(zeros({2}, DType::bfloat16)), (std::vector<float>{0, 0}));
  EXPECT_EQ(values(ones({2}, DType::bfloat16)), (std::vector<float>{1, 1}));
  EXPECT_EQ(values(full({1}, 0.1, DType::bfloat16))[0], static_cast<float>(bfloat16(0.1)));
  Tensor t = bf16(tensor<float>({1.0f, 0.5f}));
  EXPECT_EQ(t.str(), "Tensor([1.  0.5], shape=(2,), dtype=bfloat16)");
  EXPECT_EQ(t.spec().str(), "bfloat16[2]");
}

// ---------------------------------------------------------------- ops
TEST(BFloat16, ElementwiseOpsMatchFloat32WithinBf16Rounding) {
  Tensor x = randf({4, 33}, 1), y = randf({4, 33}, 2);
  Tensor xb = bf16(x), yb = bf16(y);
  // Against float32 on the rounded inputs: only the result's rounding differs.
  Tensor xr = cast(xb, DType::float32), yr = cast(yb, DType::float32);
  for (auto fn : std::vector<Tensor (*)(const Tensor&)>{relu, exp, tanh, sigmoid, gelu, neg, abs, square, sin})
    expect_bf16_close(fn(xb), fn(xr), 1e-2f, 1e-6f);
  expect_bf16_close(add(xb, yb), add(xr, yr), 1e-2f, 1e-6f);
  expect_bf16_close(mul(xb, yb), mul(xr, yr), 1e-2f, 1e-6f);
  expect_bf16_close(maximum(xb, yb), maximum(xr, yr), 0, 0);
  expect_bf16_close(xb * 2.0, xr * 2.0, 0, 0);  // a scalar operand takes the tensor's dtype
  EXPECT_EQ(greater(xb, yb).to_vector<bool>(), greater(xr, yr).to_vector<bool>());
  expect_bf16_close(where(greater(xb, yb), xb, yb), where(greater(xr, yr), xr, yr), 0, 0);
  // Broadcast bias add, as Dense does.
  Tensor bias = bf16(randf({33}, 3));
  expect_bf16_close(add(xb, bias), add(xr, cast(bias, DType::float32)), 1e-2f, 1e-6f);
  // Against the unrounded float32 inputs: bfloat16's tolerance.
  expect_bf16_close(add(xb, yb), add(x, y));
}

TEST(BFloat16, ReductionsAccumulateInFloat32) {
  // 4096 ones plus small values: a bfloat16 accumulator would stop at 256 (1 + 256 rounds to
  // 256 in 8 bits); float32 accumulation gets 4096.
  Tensor ones_b = ones({4096}, DType::bfloat16);
  EXPECT_EQ(values(sum(ones_b))[0], 4096.0f);
  EXPECT_EQ(values(mean(ones_b))[0], 1.0f);
  Tensor x = randf({8, 64}, 4);
  Tensor xb = bf16(x), xr = cast(xb, DType::float32);
  expect_bf16_close(sum(xb, {1}), sum(xr, {1}), 1e-2f, 1e-5f);
  expect_bf16_close(max(xb, {0}), max(xr, {0}), 0, 0);
  expect_bf16_close(softmax(xb), softmax(xr), 1e-2f, 1e-6f);
  EXPECT_EQ(argmax(xb, 1).to_vector<std::int64_t>(), argmax(xr, 1).to_vector<std::int64_t>());
}

TEST(BFloat16, MatmulConvPoolingLayerNormMatchFloat32) {
  Tensor a = randf({16, 64}, 5), w = randf({64, 8}, 6);
  expect_bf16_close(matmul(bf16(a), bf16(w)), matmul(a, w), 3e-2f, 0.15f);
  // Exactly the float32 product of the rounded inputs, rounded once.
  Tensor exact = bf16(matmul(cast(bf16(a), DType::float32), cast(bf16(w), DType::float32)));
  EXPECT_EQ(raw_bits(matmul(bf16(a), bf16(w))), raw_bits(exact));
  Tensor img = randf({2, 8, 8, 3}, 7), k = randf({3, 3, 3, 4}, 8);
  Tensor cb = conv2d(bf16(img), bf16(k), {1, 1}, "same");
  expect_bf16_close(cb, conv2d(img, k, {1, 1}, "same"), 3e-2f, 0.1f);
  expect_bf16_close(max_pool2d(cb), max_pool2d(cast(cb, DType::float32)), 0, 0);
  expect_bf16_close(avg_pool2d(cb), avg_pool2d(cast(cb, DType::float32)), 1e-2f, 1e-5f);
  Tensor g = ones({64}), b = zeros({64});
  expect_bf16_close(nn::layer_norm(bf16(a), bf16(g), bf16(b)), nn::layer_norm(a, g, b), 2e-2f, 3e-2f);
}

TEST(BFloat16, ShapeOpsMoveTheBitsUnchanged) {
  Tensor x = bf16(randf({3, 4}, 9));
  auto bits = raw_bits(x);
  EXPECT_EQ(raw_bits(reshape(x, {4, 3})), bits);
  Tensor t = transpose(x);
  EXPECT_EQ(t.dtype(), DType::bfloat16);
  EXPECT_EQ(raw_bits(t)[1], bits[4]);
  EXPECT_EQ(raw_bits(slice(x, {1, 0}, {2, 4})), std::vector<std::uint16_t>(bits.begin() + 4, bits.begin() + 8));
  Tensor c = concat({x, x}, 0);
  EXPECT_EQ(c.shape(), (Shape{6, 4}));
  EXPECT_EQ(raw_bits(c)[12], bits[0]);
  EXPECT_EQ(raw_bits(gather(x, tensor<std::int64_t>({2}), 0))[0], bits[8]);
  EXPECT_EQ(raw_bits(expand_dims(x, 0)), bits);
  EXPECT_EQ(raw_bits(broadcast_to(slice(x, {0, 0}, {1, 4}), {3, 4}))[8], bits[0]);
  EXPECT_EQ(raw_bits(zeros_like(x)), std::vector<std::uint16_t>(12, 0));
}

TEST(BFloat16, TracedEqualsEagerBitForBit) {
  Tensor w = bf16(randf({20, 10}, 10));
  Tensor bias = bf16(randf({10}, 11));
  auto body = [&](const Tensor& x) { return softmax(relu(matmul(x, w) + bias) * 0.5); };
  auto f = function(body);
  Tensor x = bf16(randf({5, 20}, 12));
  Tensor traced = f(x), eager = body(x);
  EXPECT_EQ(traced.dtype(), DType::bfloat16);
  EXPECT_EQ(raw_bits(traced), raw_bits(eager));
  EXPECT_EQ(raw_bits(f(x)), raw_bits(eager));  // replay
  // The graph shows the conversions at the ops' boundaries.
  std::string text = f.get_concrete_function(x)->str();
  EXPECT_NE(text.find("bf16[5,20]"), std::string::npos) << text;
  EXPECT_NE(text.find("cast"), std::string::npos) << text;
}

// ---------------------------------------------------------------- gradients
TEST(BFloat16, GradientsFlowThroughCastsAndArriveFloat32) {
  Variable w(randf({6, 3}, 13), "w");
  Tensor x = randf({4, 6}, 14);
  auto loss_of = [&](bool low) {
    Tensor xw = low ? matmul(bf16(x), cast(Tensor(w), DType::bfloat16)) : matmul(x, Tensor(w));
    return mean(square(cast(xw, DType::float32)));
  };
  Tensor g_low, g_ref;
  {
    GradientTape tape;
    g_low = tape.gradient(loss_of(true), w);
  }
  {
    GradientTape tape;
    g_ref = tape.gradient(loss_of(false), w);
  }
  EXPECT_EQ(g_low.dtype(), DType::float32);
  auto a = g_low.to_vector<float>(), b = g_ref.to_vector<float>();
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.03 + 0.03 * std::fabs(b[i])) << i;
  // The gradient of a cast is the cast back.
  Tensor v = tensor<float>({1.0f, 2.0f, 3.0f});
  GradientTape tape;
  tape.watch(v);
  Tensor y = sum(cast(v, DType::bfloat16) * 3.0);
  Tensor gv = tape.gradient(y, v);
  EXPECT_EQ(gv.dtype(), DType::float32);
  EXPECT_EQ(gv.to_vector<float>(), (std::vector<float>{3, 3, 3}));
}

TEST(BFloat16, GradientOfBf16InputsIsBf16) {
  Tensor x = bf16(tensor<float>({-1.0f, 0.5f, 2.0f}));
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(relu(x) * x);
  Tensor g = tape.gradient(y, x);
  EXPECT_EQ(g.dtype(), DType::bfloat16);
  EXPECT_EQ(values(g), (std::vector<float>{0.0f, 1.0f, 4.0f}));
}

// ---------------------------------------------------------------- errors
TEST(BFloat16, MixingDtypesAndUnwritableOutputsAreErrors) {
  Tensor x = bf16(tensor<float>({3.0f, 1.0f, 2.0f}));
  // bfloat16 and float32 do not mix silently, as in TensorFlow (float64 meets the op's own rule).
  expect_error([&] { add(x, tensor<float>({1.0f, 1.0f, 1.0f})); }, {"[add]", "dtypes differ", "bfloat16[3]", "float32[3]"});
  expect_error([&] { matmul(reshape(x, {1, 3}), ones({3, 1})); }, {"[matmul]", "dtypes differ", "ef::cast"});
  expect_error([&] { where(x > 1.0, x, tensor<double>({0.0, 0.0, 0.0})); }, {"[where]", "float64[3]", "computed in float32 for the bfloat16 inputs", "bfloat16[3]"});
  // An op asked to produce bfloat16 from no bfloat16 input, whose kernel cannot write it (the
  // primitive itself; ef::one_hot makes float32 rows and casts them).
  expect_error([&] { dispatch1(OneHot(3, DType::bfloat16), {tensor<std::int64_t>({1})}); }, {"[one_hot]", "bfloat16[1,3]"});
  Tensor hot = one_hot(tensor<std::int64_t>({1, 0}), 3, DType::bfloat16);
  EXPECT_EQ(hot.dtype(), DType::bfloat16);
  EXPECT_EQ(values(hot), (std::vector<float>{0, 1, 0, 1, 0, 0}));
  // The failed ops left nothing behind: the same tensors still work.
  EXPECT_EQ(values(x + x), (std::vector<float>{6, 2, 4}));
}

TEST(BFloat16, OpsBeyondMixedPrecisionsCoreComputeInFloat32Too) {
  // sort, top_k, cumprod, einsum: no list names them; every op that computes does so in float32.
  Tensor x = bf16(tensor<float>({3.0f, 1.0f, 2.5f, -4.0f}));
  Tensor s = sort(x);
  EXPECT_EQ(s.dtype(), DType::bfloat16);
  EXPECT_EQ(values(s), (std::vector<float>{-4.0f, 1.0f, 2.5f, 3.0f}));
  EXPECT_EQ(values(cumprod(x)), (std::vector<float>{3.0f, 3.0f, 7.5f, -30.0f}));
  auto [v, i] = top_k(x, 2);
  EXPECT_EQ(v.dtype(), DType::bfloat16);
  EXPECT_EQ(i.dtype(), DType::int32);  // integer results keep their dtype
  EXPECT_EQ(i.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(argsort(x).dtype(), DType::int64);
}

// ---------------------------------------------------------------- saving
TEST(BFloat16, SafetensorsSavesBf16AndReadsItBack) {
  auto dir = ef::testing::fresh_temp_dir("bf16_safetensors");
  Tensor x = bf16(tensor<float>({1.0f, -0.1f, 3e38f, std::numeric_limits<float>::infinity()}));
  std::string path = (dir / "w.safetensors").string();
  io::save_safetensors(path, {{"x", x}});
  io::TensorFile file = io::load_safetensors(path);
  const Tensor* back = file.find("x");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->dtype(), DType::bfloat16);
  EXPECT_EQ(raw_bits(*back), raw_bits(x));
  // The header names the dtype as safetensors does.
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("\"BF16\""), std::string::npos);
}
