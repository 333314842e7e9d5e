// The vector math kernels of every instruction set this CPU has: accuracy against libm in
// double precision over a sweep with the special values, agreement between instruction
// sets, results that do not depend on an element's position, and broadcasting that matches
// a plain index computation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "eagerflow/eagerflow.h"
#include "kernels/cpu/vec_math.h"
#include "ops/elementwise_math.h"

namespace {

using ef::BinaryKind;
using ef::UnaryKind;
using ef::cpu::vec::Isa;
using ef::cpu::vec::Kernels;

std::vector<const Kernels*> available() {
  std::vector<const Kernels*> out;
  for (Isa isa : {Isa::baseline, Isa::avx2, Isa::avx512})
    if (const Kernels* k = ef::cpu::vec::kernels_for(isa)) out.push_back(k);
  return out;
}

// Distance in representable floats (0 for equal values and for two NaNs).
std::int64_t ulp_distance(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  if (a == b) return 0;
  auto key = [](float f) {
    std::int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? -static_cast<std::int64_t>(i & 0x7fffffff) : static_cast<std::int64_t>(i);
  };
  return std::llabs(key(a) - key(b));
}

// Inputs: a random spread over several magnitudes, then the values that break math code.
std::vector<float> sweep(float lo, float hi) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> x;
  for (int i = 0; i < 20000; ++i) x.push_back(u(gen));
  for (float m : {1e-3f, 1e-6f, 1e-20f}) for (int i = 0; i < 300; ++i) x.push_back(u(gen) * m);
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(), 1e-40f, -3e-39f,
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                  88.7f, 89.0f, -87.3f, -103.0f, -104.0f, 1.0f, -1.0f, 9.0f, -9.0f, 20.0f})
    x.push_back(s);
  return x;
}

double reference(UnaryKind k, double x) {
  switch (k) {
    case UnaryKind::exp: return std::exp(x);
    case UnaryKind::log: return std::log(x);
    case UnaryKind::tanh: return std::tanh(x);
    case UnaryKind::erf: return std::erf(x);
    case UnaryKind::sin: return std::sin(x);
    case UnaryKind::cos: return std::cos(x);
    case UnaryKind::sqrt: return std::sqrt(x);
    case UnaryKind::rsqrt: return 1.0 / std::sqrt(x);
    case UnaryKind::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case UnaryKind::gelu: return std::isinf(x) && x < 0 ? -0.0 : 0.5 * x * std::erfc(-x * 0.70710678118654752440);
    default: return x;
  }
}

struct Bound {
  UnaryKind kind;
  std::int64_t ulps;  // stated bound + 1 for rounding the double reference to float
  float lo, hi;
};

class VecUnaryAccuracy : public ::testing::TestWithParam<Bound> {};

TEST_P(VecUnaryAccuracy, WithinStatedUlpsOfLibmInDouble) {
  Bound b = GetParam();
  std::vector<float> x = sweep(b.lo, b.hi), y(x.size());
  for (const Kernels* k : available()) {
    k->unary_f32(b.kind, x.data(), y.data(), static_cast<std::int64_t>(x.size()));
    std::int64_t worst = 0;
    float worst_x = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      float ref = static_cast<float>(reference(b.kind, static_cast<double>(x[i])));
      // Denormal results: SLEEF (like most vector libraries) may flush them; accept a zero.
      if (std::fpclassify(ref) == FP_SUBNORMAL && (y[i] == 0.0f || std::fpclassify(y[i]) == FP_SUBNORMAL)) continue;
      // gelu's tail x * erfc(-x / sqrt 2) is ill-conditioned in float (rounding x / sqrt 2
      // alone moves it ~x^2 / 2 ulps): there the bound is absolute.
      if (b.kind == UnaryKind::gelu && std::fabs(y[i] - ref) <= 2e-7f) continue;
      std::int64_t d = ulp_distance(y[i], ref);
      if (d > worst) worst = d, worst_x = x[i];
    }
    EXPECT_LE(worst, b.ulps) << k->name << " " << static_cast<int>(b.kind) << " worst at x=" << worst_x;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Functions, VecUnaryAccuracy,
    ::testing::Values(Bound{UnaryKind::exp, 2, -110.0f, 90.0f}, Bound{UnaryKind::log, 2, 0.0f, 1e30f},
                      Bound{UnaryKind::tanh, 5, -12.0f, 12.0f}, Bound{UnaryKind::erf, 2, -5.0f, 5.0f},
                      Bound{UnaryKind::sin, 5, -1000.0f, 1000.0f}, Bound{UnaryKind::cos, 5, -1000.0f, 1000.0f},
                      Bound{UnaryKind::sqrt, 0, 0.0f, 1e30f}, Bound{UnaryKind::rsqrt, 2, 0.0f, 1e30f},
                      Bound{UnaryKind::sigmoid, 4, -100.0f, 100.0f}, Bound{UnaryKind::gelu, 2, -12.0f, 12.0f}),
    [](const ::testing::TestParamInfo<Bound>& info) { return std::string(ef::unary_name(info.param.kind)); });

TEST(VecMath, SpecialValuesFollowIeee) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  struct Case { UnaryKind k; float x, want; };
  std::vector<Case> cases = {
      {UnaryKind::exp, -inf, 0.0f},   {UnaryKind::exp, inf, inf},     {UnaryKind::exp, 0.0f, 1.0f},
      {UnaryKind::log, 0.0f, -inf},   {UnaryKind::log, inf, inf},     {UnaryKind::log, 1.0f, 0.0f},
      {UnaryKind::tanh, inf, 1.0f},   {UnaryKind::tanh, -inf, -1.0f}, {UnaryKind::tanh, -0.0f, -0.0f},
      {UnaryKind::sigmoid, inf, 1.0f}, {UnaryKind::sigmoid, -inf, 0.0f}, {UnaryKind::sigmoid, 0.0f, 0.5f},
      {UnaryKind::erf, inf, 1.0f},    {UnaryKind::erf, -inf, -1.0f},  {UnaryKind::sqrt, -0.0f, -0.0f},
      {UnaryKind::sqrt, inf, inf},    {UnaryKind::relu, -inf, 0.0f},  {UnaryKind::abs, -0.0f, 0.0f},
      {UnaryKind::gelu, -inf, -0.0f}, {UnaryKind::gelu, inf, inf},   {UnaryKind::neg, 0.0f, -0.0f}};
  for (const Kernels* k : available())
    for (const Case& c : cases) {
      float y;
      k->unary_f32(c.k, &c.x, &y, 1);
      EXPECT_EQ(std::signbit(y), std::signbit(c.want)) << k->name << " kind " << static_cast<int>(c.k) << " x=" << c.x;
      EXPECT_EQ(y, c.want) << k->name << " kind " << static_cast<int>(c.k) << " x=" << c.x;
    }
  // NaN in, NaN out, for every float kind; log and sqrt of a negative number are NaN.
  for (const Kernels* k : available()) {
    for (int kind = 0; kind <= static_cast<int>(UnaryKind::cos); ++kind) {
      float y = 0;
      k->unary_f32(static_cast<UnaryKind>(kind), &nan, &y, 1);
      EXPECT_TRUE(std::isnan(y)) << k->name << " kind " << kind;
    }
    float neg = -1.0f, y = 0;
    k->unary_f32(UnaryKind::log, &neg, &y, 1);
    EXPECT_TRUE(std::isnan(y));
    k->unary_f32(UnaryKind::sqrt, &neg, &y, 1);
    EXPECT_TRUE(std::isnan(y));
  }
}

TEST(VecMath, DoublePrecisionStaysNearLibm) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(-20.0, 20.0);
  std::vector<double> x(5000), y(5000);
  for (double& v : x) v = u(gen);
  for (const Kernels* k : available())
    for (UnaryKind kind : {UnaryKind::exp, UnaryKind::tanh, UnaryKind::erf, UnaryKind::sin, UnaryKind::sigmoid}) {
      k->unary_f64(kind, x.data(), y.data(), static_cast<std::int64_t>(x.size()));
      for (std::size_t i = 0; i < x.size(); ++i) {
        double ref = reference(kind, x[i]);
        EXPECT_NEAR(y[i], ref, 4e-16 * std::max(1.0, std::fabs(ref))) << k->name << " x=" << x[i];
      }
    }
}

TEST(VecMath, ResultDoesNotDependOnPositionOrLength) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-6.0f, 6.0f);
  std::vector<float> x(101);
  for (float& v : x) v = u(gen);
  for (const Kernels* k : available())
    for (UnaryKind kind : {UnaryKind::exp, UnaryKind::tanh, UnaryKind::gelu, UnaryKind::sigmoid, UnaryKind::sin}) {
      std::vector<float> whole(x.size());
      k->unary_f32(kind, x.data(), whole.data(), static_cast<std::int64_t>(x.size()));
      for (std::size_t i = 0; i < x.size(); ++i) {
        float one;
        k->unary_f32(kind, &x[i], &one, 1);  // alone, in the padded tail path
        ASSERT_EQ(std::memcmp(&one, &whole[i], 4), 0) << k->name << " kind " << static_cast<int>(kind) << " at " << i;
      }
    }
}

TEST(VecMath, InstructionSetsAgreeWithinTheBound) {
  std::vector<float> x = sweep(-30.0f, 30.0f);
  auto sets = available();
  for (UnaryKind kind : {UnaryKind::exp, UnaryKind::tanh, UnaryKind::erf, UnaryKind::gelu, UnaryKind::sigmoid}) {
    std::vector<float> first(x.size()), other(x.size());
    sets[0]->unary_f32(kind, x.data(), first.data(), static_cast<std::int64_t>(x.size()));
    for (std::size_t s = 1; s < sets.size(); ++s) {
      sets[s]->unary_f32(kind, x.data(), other.data(), static_cast<std::int64_t>(x.size()));
      for (std::size_t i = 0; i < x.size(); ++i)
        if (std::fabs(first[i]) > 1e-30f) {
          EXPECT_LE(ulp_distance(first[i], other[i]), 8) << sets[s]->name << " kind " << static_cast<int>(kind) << " x=" << x[i]; }
    }
  }
}

TEST(VecMath, BinaryArithmeticIsExactAndMaxKeepsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1.5f, -2.0f, 3.0f, nan, 1.0f, 0.0f, -0.0f, 7.0f, 1e30f, -1e-40f, 2.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f};
  std::vector<float> b = {0.25f, 4.0f, nan, 1.0f, nan, -0.0f, 0.0f, 3.0f, 1e30f, 1e-40f, -2.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 11.0f};
  std::int64_t n = static_cast<std::int64_t>(a.size());
  std::vector<float> y(a.size());
  for (const Kernels* k : available()) {
    k->binary_f32(BinaryKind::mul, a.data(), 0, 1, b.data(), 0, 1, y.data(), 1, n);
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!std::isnan(a[i] * b[i])) { EXPECT_EQ(y[i], a[i] * b[i]); }
    k->binary_f32(BinaryKind::div, a.data(), 0, 1, b.data(), 0, 0, y.data(), 1, n);  // b[0] for every row
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!std::isnan(a[i])) { EXPECT_EQ(y[i], a[i] / b[0]); }
    k->binary_f32(BinaryKind::maximum, a.data(), 0, 1, b.data(), 0, 1, y.data(), 1, n);
    EXPECT_TRUE(std::isnan(y[2]) && std::isnan(y[3]) && std::isnan(y[4])) << k->name;
    EXPECT_EQ(y[0], 1.5f);
    EXPECT_EQ(y[1], 4.0f);
    k->binary_f32(BinaryKind::minimum, a.data(), 0, 1, b.data(), 0, 1, y.data(), 1, n);
    EXPECT_TRUE(std::isnan(y[2]) && std::isnan(y[3]) && std::isnan(y[4])) << k->name;
    EXPECT_EQ(y[16], 10.0f);
    k->binary_f32(BinaryKind::pow, a.data(), 0, 1, b.data(), 0, 1, y.data(), 1, n);
    for (std::size_t i = 0; i < a.size(); ++i) {
      float ref = static_cast<float>(std::pow(static_cast<double>(a[i]), static_cast<double>(b[i])));
      EXPECT_LE(ulp_distance(y[i], ref), 2) << k->name << " " << a[i] << "^" << b[i];
    }
  }
}

// Broadcasting through the public ops, against a plain index computation, over random shapes
// (the bias-add and column fast paths and the general walk all get hit).
TEST(VecMath, BroadcastingMatchesIndexArithmetic) {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 300; ++trial) {
    int rank = 1 + static_cast<int>(gen() % 4);
    std::vector<std::int64_t> out_dims, a_dims, b_dims;
    for (int d = 0; d < rank; ++d) {
      std::int64_t n = 1 + static_cast<std::int64_t>(gen() % 5);
      out_dims.push_back(n);
      a_dims.push_back(gen() % 3 == 0 ? 1 : n);
      b_dims.push_back(gen() % 3 == 0 ? 1 : n);
    }
    if (gen() % 2) b_dims.erase(b_dims.begin(), b_dims.begin() + static_cast<long>(gen() % b_dims.size()));
    for (int d = 0; d < rank; ++d) {  // what broadcasting makes of the two
      int bd = d - (rank - static_cast<int>(b_dims.size()));
      out_dims[static_cast<std::size_t>(d)] = std::max(a_dims[static_cast<std::size_t>(d)],
                                                      bd >= 0 ? b_dims[static_cast<std::size_t>(bd)] : 1);
    }
    ef::Tensor a = ef::random::normal(ef::Shape(a_dims)), b = ef::random::normal(ef::Shape(b_dims));
    for (BinaryKind kind : {BinaryKind::sub, BinaryKind::maximum}) {
      ef::Tensor y = kind == BinaryKind::sub ? a - b : ef::maximum(a, b);
      ef::Tensor lt = ef::less(a, b);
      ASSERT_EQ(y.shape(), ef::Shape(out_dims));
      auto pa = a.data<float>(), pb = b.data<float>(), py = y.data<float>();
      auto pl = lt.data<bool>();
      std::int64_t total = y.num_elements();
      for (std::int64_t flat = 0; flat < total; ++flat) {
        std::int64_t rem = flat, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int d = rank - 1; d >= 0; --d) {
          std::int64_t idx = rem % out_dims[static_cast<std::size_t>(d)];
          rem /= out_dims[static_cast<std::size_t>(d)];
          std::int64_t ad = a_dims[static_cast<std::size_t>(d)];
          ia += (ad == 1 ? 0 : idx) * sa;
          sa *= ad;
          int bd_index = d - (rank - static_cast<int>(b_dims.size()));
          if (bd_index >= 0) {
            std::int64_t bd = b_dims[static_cast<std::size_t>(bd_index)];
            ib += (bd == 1 ? 0 : idx) * sb;
            sb *= bd;
          }
        }
        float x = pa[static_cast<std::size_t>(ia)], z = pb[static_cast<std::size_t>(ib)];
        float want = kind == BinaryKind::sub ? x - z : std::max(x, z);
        ASSERT_EQ(py[static_cast<std::size_t>(flat)], want) << "trial " << trial << " at " << flat;
        ASSERT_EQ(pl[static_cast<std::size_t>(flat)], x < z);
      }
    }
  }
}

// Fused and unfused graphs use the same vector routines: identical bits, also on a length
// that leaves a tail.
TEST(VecMath, FusedChainEqualsEagerBitForBit) {
  auto chain = [](const ef::Tensor& x, const ef::Tensor& y) {
    return ef::gelu(ef::tanh(x * 1.5f + y) * ef::sigmoid(y)) - ef::exp(x * 0.1f) / (ef::abs(y) + 1.0f);
  };
  ef::Tensor x = ef::random::normal({1037}), y = ef::random::normal({1037});
  ef::Tensor eager = chain(x, y);
  auto f = ef::function(chain);
  ef::Tensor traced = f(x, y);
  ASSERT_EQ(std::memcmp(eager.data<float>().data(), traced.data<float>().data(), 1037 * sizeof(float)), 0);
}

}  // namespace

// Casts follow ef's one saturating rule on every instruction set; where selects exactly.
TEST(VecMath, CastsSaturateAndWhereSelects) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {nan, inf, -inf, 3e9f, -3e9f, 2.7f, -2.7f, 0.0f, -0.0f, 1e-40f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f};
  std::int64_t n = static_cast<std::int64_t>(x.size());
  for (const Kernels* k : available()) {
    std::vector<std::int32_t> i32(x.size());
    ASSERT_TRUE(k->cast(0, 2, x.data(), i32.data(), n));
    EXPECT_EQ(std::vector<std::int32_t>(i32.begin(), i32.begin() + 8),
              (std::vector<std::int32_t>{0, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 2, -2, 0})) << k->name;
    std::vector<std::int64_t> i64(x.size());
    ASSERT_TRUE(k->cast(0, 3, x.data(), i64.data(), n));
    EXPECT_EQ(i64[1], INT64_MAX);
    EXPECT_EQ(i64[3], 3000000000LL);
    bool b[17];
    ASSERT_TRUE(k->cast(0, 4, x.data(), b, n));
    EXPECT_TRUE(b[0]) << "NaN is not zero: true";
    EXPECT_FALSE(b[7]);
    EXPECT_FALSE(b[8]);
    EXPECT_TRUE(b[9]);
    std::vector<double> d(x.size());
    ASSERT_TRUE(k->cast(0, 1, x.data(), d.data(), n));
    EXPECT_EQ(d[5], static_cast<double>(2.7f));
    std::vector<float> back(x.size());
    ASSERT_TRUE(k->cast(4, 0, b, back.data(), n));
    EXPECT_EQ(back[0], 1.0f);
    EXPECT_EQ(back[7], 0.0f);
    bool c[17];
    for (int i = 0; i < 17; ++i) c[i] = i % 3 == 0;
    std::vector<float> w(x.size());
    float zero = 0.0f;
    k->where_f32(c, 1, x.data(), 1, &zero, 0, w.data(), n);
    for (int i = 0; i < 17; ++i) {
      float want = c[i] ? x[static_cast<std::size_t>(i)] : 0.0f;
      EXPECT_EQ(std::memcmp(&w[static_cast<std::size_t>(i)], &want, 4), 0) << k->name << " at " << i;
    }
  }
}
