// float16 (IEEE binary16): the storage dtype, its rounding against the compiler's _Float16 on
// every float16 value and on many float32/float64 values, casts, printing, the ops that compute
// in float32 for it, eager == traced, gradients through casts, saving, and mixing errors.
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

#include "eagerflow/io/safetensors.h"
#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;

namespace {

Tensor f16(const Tensor& x) { return cast(x, DType::float16); }
std::vector<float> values(const Tensor& x) { return cast(x, DType::float32).to_vector<float>(); }
std::vector<std::uint16_t> raw_bits(const Tensor& t) {
  std::vector<std::uint16_t> out(static_cast<std::size_t>(t.num_elements()));
  if (!out.empty()) std::memcpy(out.data(), t.raw_data(), out.size() * 2);
  return out;
}
std::uint16_t reference_bits(float f) { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(f)); }
std::uint16_t reference_bits(double d) { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(d)); }
bool is_nan_bits(std::uint16_t b) { return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu); }

}  // namespace

TEST(Float16, EveryValueRoundTripsAndMatchesTheCompiler) {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    auto bits = static_cast<std::uint16_t>(b);
    float f = float_from_float16_bits(bits);
    float want = static_cast<float>(std::bit_cast<_Float16>(bits));
    if (is_nan_bits(bits)) {
      EXPECT_TRUE(std::isnan(f)) << b;
      continue;
    }
    ASSERT_EQ(std::bit_cast<std::uint32_t>(f), std::bit_cast<std::uint32_t>(want)) << b;
    ASSERT_EQ(float16_bits_from_float(f), bits) << b;
  }
}

TEST(Float16, RoundsFloat32AndFloat64AsTheCompilerDoes) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000000; ++i) {
    std::uint32_t u = static_cast<std::uint32_t>(rng());
    float f = std::bit_cast<float>(u);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float16_bits_from_float(f), reference_bits(f)) << f;
    // Values near float16's range, where the interesting roundings are.
    float g = std::ldexp(static_cast<float>(rng() % (1u << 24)) / 16777216.0f, static_cast<int>(rng() % 44) - 28);
    ASSERT_EQ(float16_bits_from_float(g), reference_bits(g)) << g;
    double d = std::ldexp(static_cast<double>(rng() >> 11) / 9007199254740992.0, static_cast<int>(rng() % 44) - 28);
    ASSERT_EQ(float16_bits_from_double(d), reference_bits(d)) << d;
  }
  EXPECT_EQ(float16_bits_from_float(65504.0f), 0x7bffu);
  EXPECT_EQ(float16_bits_from_float(65520.0f), 0x7c00u);  // rounds to inf
  EXPECT_EQ(float16_bits_from_float(-0.0f), 0x8000u);
  EXPECT_TRUE(is_nan_bits(float16_bits_from_float(std::numeric_limits<float>::quiet_NaN())));
}

TEST(Float16, CastsPrintingAndNames) {
  Tensor x = f16(tensor<float>({1.0f, -0.1f, 70000.0f, 6e-8f}));
  EXPECT_EQ(x.dtype(), DType::float16);
  EXPECT_EQ(std::string(name_of(DType::float16)), "float16");
  EXPECT_EQ(dtype_named("f16"), DType::float16);
  std::vector<float> v = values(x);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], static_cast<float>(static_cast<_Float16>(-0.1f)));
  EXPECT_TRUE(std::isinf(v[2]));
  EXPECT_EQ(v[3], std::ldexp(1.0f, -24));  // the smallest subnormal
  EXPECT_EQ(cast(f16(tensor<double>({2.5, -3.75})), DType::int32).to_vector<std::int32_t>(), (std::vector<std::int32_t>{2, -3}));
  EXPECT_EQ(cast(f16(tensor<std::int64_t>({2049})), DType::float64).to_vector<double>(), (std::vector<double>{2048.0}));  // ties to even
  EXPECT_EQ(cast(cast(x, DType::bfloat16), DType::float16).dtype(), DType::float16);
  EXPECT_NE(x.str().find("float16"), std::string::npos);
}

TEST(Float16, OpsComputeInFloat32AndRoundOnce) {
  Tensor a = f16(tensor<float>({1.0f, 2.0f, 3.0f, 4.0f}, Shape{2, 2}));
  Tensor b = f16(tensor<float>({0.5f, -1.0f, 0.25f, 2.0f}, Shape{2, 2}));
  Tensor sum_ab = a + b;
  EXPECT_EQ(sum_ab.dtype(), DType::float16);
  EXPECT_EQ(values(sum_ab), (std::vector<float>{1.5f, 1.0f, 3.25f, 6.0f}));
  Tensor m = matmul(a, b);
  EXPECT_EQ(m.dtype(), DType::float16);
  EXPECT_EQ(values(m), (std::vector<float>{1.0f, 3.0f, 2.5f, 5.0f}));
  EXPECT_EQ(values(exp(f16(tensor<float>({0.0f})))), (std::vector<float>{1.0f}));
  EXPECT_EQ(sum(a).dtype(), DType::float16);
  EXPECT_EQ(values(sum(a)), (std::vector<float>{10.0f}));
  EXPECT_EQ(argmax(a, 1).dtype(), DType::int64);  // integer results keep their dtype
  EXPECT_EQ(reshape(a, {4}).dtype(), DType::float16);
  EXPECT_EQ(raw_bits(transpose(a, {1, 0}))[1], raw_bits(a)[2]);
  // float16 mixes with neither float32 nor bfloat16.
  expect_error([&] { a + tensor<float>({1.0f, 1.0f, 1.0f, 1.0f}, Shape{2, 2}); }, {"dtypes differ", "float16"});
  expect_error([&] { a + cast(b, DType::bfloat16); }, {"bfloat16 and float16 do not mix"});
}

TEST(Float16, TracedEqualsEagerAndGradientsFlow) {
  Tensor x = f16(tensor<float>({0.5f, -1.5f, 2.0f}));
  auto body = [](const Tensor& t) { return tanh(t) * t + 1.0f; };
  Tensor eager = body(x);
  auto f = function(body);
  EXPECT_EQ(raw_bits(f(x)), raw_bits(eager));
  Tensor w = tensor<float>({0.5f, -1.5f, 2.0f});
  GradientTape tape;
  tape.watch(w);
  Tensor g = tape.gradient(sum(cast(square(cast(w, DType::float16)), DType::float32)), w);
  EXPECT_EQ(g.dtype(), DType::float32);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1.0f, -3.0f, 4.0f}));
}

TEST(Float16, SafetensorsSavesF16AndReadsItBack) {
  auto dir = ef::testing::fresh_temp_dir("f16_safetensors");
  Tensor x = f16(tensor<float>({1.0f, -0.1f, 65504.0f, std::numeric_limits<float>::infinity()}));
  std::string path = (dir / "w.safetensors").string();
  io::save_safetensors(path, {{"x", x}});
  io::TensorFile file = io::load_safetensors(path);
  const Tensor* back = file.find("x");
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->dtype(), DType::float16);
  EXPECT_EQ(raw_bits(*back), raw_bits(x));
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("\"F16\""), std::string::npos);
}
