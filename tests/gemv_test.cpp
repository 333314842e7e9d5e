// The few-rows product (src/kernels/cpu/gemv.cpp): what gemm_f32 runs for M <= 8 on an AVX2
// CPU. Checked against a scalar chain of fused multiply-adds (bit for bit), double-precision
// references, oneDNN's GEMM for the same rows, and through matmul, Dense and traced functions.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <vector>

#include "core/thread_budget.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemv.h"
#include "test_util.h"

using namespace ef;

namespace {

std::vector<float> draws(std::int64_t n, std::uint64_t seed) {
  return random::stateless_normal({n}, seed, 0.0, 1.0, DType::float32).to_vector<float>();
}

// op(A) element (r, p) and op(B) element (p, j) of row-major storage.
float at_a(const std::vector<float>& a, bool t, std::int64_t m, std::int64_t k, std::int64_t r, std::int64_t p) {
  return t ? a[static_cast<std::size_t>(p * m + r)] : a[static_cast<std::size_t>(r * k + p)];
}
float at_b(const std::vector<float>& b, bool t, std::int64_t k, std::int64_t n, std::int64_t p, std::int64_t j) {
  return t ? b[static_cast<std::size_t>(j * k + p)] : b[static_cast<std::size_t>(p * n + j)];
}

// The kernel's arithmetic for B stored [K,N]: one fused multiply-add chain over k in order.
std::vector<float> fma_chain(const std::vector<float>& a, const std::vector<float>& b, std::int64_t m, std::int64_t k,
                             std::int64_t n, bool ta) {
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (std::int64_t p = 0; p < k; ++p) acc = std::fma(at_a(a, ta, m, k, r, p), at_b(b, false, k, n, p, j), acc);
      c[static_cast<std::size_t>(r * n + j)] = acc;
    }
  return c;
}

// The exact sum in double and the sum of magnitudes (the scale of its float rounding).
void reference(const std::vector<float>& a, const std::vector<float>& b, std::int64_t m, std::int64_t k, std::int64_t n,
               bool ta, bool tb, std::vector<double>& sum, std::vector<double>& scale) {
  sum.assign(static_cast<std::size_t>(m * n), 0.0);
  scale.assign(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t j = 0; j < n; ++j)
      for (std::int64_t p = 0; p < k; ++p) {
        double v = static_cast<double>(at_a(a, ta, m, k, r, p)) * at_b(b, tb, k, n, p, j);
        sum[static_cast<std::size_t>(r * n + j)] += v;
        scale[static_cast<std::size_t>(r * n + j)] += std::fabs(v);
      }
}

void expect_within_rounding(const std::vector<float>& got, const std::vector<double>& sum, const std::vector<double>& scale,
                            std::int64_t k, const std::string& what) {
  ASSERT_EQ(got.size(), sum.size()) << what;
  double eps = std::numeric_limits<float>::epsilon();
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - sum[i]), (static_cast<double>(k) + 2) * eps * scale[i] + 1e-30) << what << " at " << i;
}

bool bit_equal(const std::vector<float>& x, const std::vector<float>& y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    bool nx = std::isnan(x[i]), ny = std::isnan(y[i]);
    if (nx != ny || (!nx && std::signbit(x[i]) != std::signbit(y[i])) || (!nx && x[i] != y[i])) return false;
  }
  return true;
}

std::vector<float> gemm(const std::vector<float>& a, const std::vector<float>& b, std::int64_t m, std::int64_t k,
                        std::int64_t n, bool ta, bool tb, const float* bias = nullptr) {
  std::vector<float> c(static_cast<std::size_t>(m * n), -7.0f);  // garbage the product must overwrite
  cpu::gemm_f32(a.data(), b.data(), c.data(), 1, m, k, n, false, false, bias, ta, tb);
  return c;
}

bool cpu_should_have_gemv() {
  const char* isa = std::getenv("EF_ISA");
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !(isa && std::string(isa) == "baseline");
}

const std::int64_t kKs[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 33, 100};
const std::int64_t kNs[] = {1, 3, 7, 8, 9, 15, 16, 17, 33, 100};

}  // namespace

TEST(Gemv, TakesFewRowsWhereTheCpuHasAvx2) {
  EXPECT_EQ(cpu::gemv_applicable(1), cpu_should_have_gemv());
  EXPECT_EQ(cpu::gemv_applicable(cpu::kGemvMaxRows), cpu_should_have_gemv());
  EXPECT_FALSE(cpu::gemv_applicable(0));
  EXPECT_FALSE(cpu::gemv_applicable(cpu::kGemvMaxRows + 1));
}

// Every M, odd K and N (tails of the 8-lane and k-unrolled loops), A stored either way: the
// same bits as the scalar chain of fused multiply-adds.
TEST(Gemv, EqualsTheFmaChainBitForBit) {
  if (!cpu::gemv_applicable(1)) return;  // oneDNN's GEMM runs instead (checked below)
  std::uint64_t seed = 1;
  for (std::int64_t m = 1; m <= cpu::kGemvMaxRows; ++m)
    for (std::int64_t k : kKs)
      for (std::int64_t n : kNs)
        for (bool ta : {false, true}) {
          auto a = draws(m * k, seed++), b = draws(k * n, seed++);
          ASSERT_TRUE(bit_equal(gemm(a, b, m, k, n, ta, false), fma_chain(a, b, m, k, n, ta)))
              << "m=" << m << " k=" << k << " n=" << n << " ta=" << ta;
        }
}

// All four transpose combinations against the exact sum, within float rounding.
TEST(Gemv, TransposedOperandsWithinRoundingOfTheExactSum) {
  std::uint64_t seed = 100;
  std::vector<double> sum, scale;
  for (std::int64_t m : {1, 2, 3, 5, 8})
    for (std::int64_t k : kKs)
      for (std::int64_t n : {1, 7, 9, 33})
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            auto a = draws(m * k, seed++), b = draws(k * n, seed++);
            reference(a, b, m, k, n, ta, tb, sum, scale);
            expect_within_rounding(gemm(a, b, m, k, n, ta, tb), sum, scale, k,
                                   "m=" + std::to_string(m) + " k=" + std::to_string(k) + " n=" + std::to_string(n) +
                                       " ta=" + std::to_string(ta) + " tb=" + std::to_string(tb));
          }
}

// The same rows through oneDNN's GEMM (32 rows, past the few-rows path) agree within rounding.
TEST(Gemv, AgreesWithTheGemmPathOnTheSameRows) {
  for (auto [k, n] : {std::pair<std::int64_t, std::int64_t>{784, 512}, {512, 10}, {37, 129}}) {
    auto a = draws(32 * k, 7), b = draws(k * n, 8);
    auto big = gemm(a, b, 32, k, n, false, false);
    std::vector<double> sum, scale;
    for (std::int64_t m = 1; m <= cpu::kGemvMaxRows; ++m) {
      std::vector<float> rows(a.begin(), a.begin() + m * k);
      auto few = gemm(rows, b, m, k, n, false, false);
      reference(rows, b, m, k, n, false, false, sum, scale);
      double eps = std::numeric_limits<float>::epsilon();
      for (std::size_t i = 0; i < few.size(); ++i)
        ASSERT_LE(std::fabs(few[i] - big[i]), 2 * (static_cast<double>(k) + 2) * eps * scale[i]) << "m=" << m << " at " << i;
    }
  }
}

// A row's result does not depend on the rows beside it, the thread count or the bias: the
// bias is added after the sum, as a separate add would.
TEST(Gemv, RowsThreadsAndBiasDoNotChangeTheBits) {
  const std::int64_t k = 784, n = 515;
  auto a = draws(8 * k, 11), b = draws(k * n, 12), bias = draws(n, 13);
  struct Restore {
    int explicit_count = detail::explicit_thread_count();
    ~Restore() {
      if (explicit_count > 0) set_num_threads(explicit_count);
      else detail::use_default_threads_for_testing();
    }
  } restore;
  set_num_threads(1);
  auto eight = gemm(a, b, 8, k, n, false, false);
  auto with_bias = gemm(a, b, 8, k, n, false, false, bias.data());
  set_num_threads(2);
  std::int64_t regions = detail::parallel_regions_opened();
  auto eight_2 = gemm(a, b, 8, k, n, false, false);
  if (cpu::gemv_applicable(8)) { EXPECT_GT(detail::parallel_regions_opened(), regions); }  // split over N
  EXPECT_TRUE(bit_equal(eight, eight_2));
  for (std::int64_t r = 0; r < 8; ++r) {
    std::vector<float> row(a.begin() + r * k, a.begin() + (r + 1) * k);
    auto one = gemm(row, b, 1, k, n, false, false);
    EXPECT_TRUE(bit_equal(one, std::vector<float>(eight.begin() + r * n, eight.begin() + (r + 1) * n))) << "row " << r;
  }
  for (std::int64_t i = 0; i < 8 * n; ++i) {
    float want = eight[static_cast<std::size_t>(i)] + bias[static_cast<std::size_t>(i % n)];
    ASSERT_EQ(with_bias[static_cast<std::size_t>(i)], want) << "at " << i;
  }
}

TEST(Gemv, NanAndInfPropagate) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::int64_t k = 37, n = 19;
  for (bool tb : {false, true}) {
    auto a = draws(3 * k, 21), b = draws(k * n, 22);
    a[5] = nan;                                       // row 0: NaN everywhere
    a[static_cast<std::size_t>(k + 4)] = 0.0f;        // row 1: 0 * inf = NaN in column 2
    a[static_cast<std::size_t>(2 * k + 4)] = 2.0f;    // row 2: 2 * inf = inf in column 2 ...
    a[static_cast<std::size_t>(2 * k + 6)] = -3.0f;   // ... and -3 * -inf = inf in column 3
    auto put = [&](std::int64_t p, std::int64_t j, float v) { b[static_cast<std::size_t>(tb ? j * k + p : p * n + j)] = v; };
    put(4, 2, inf);
    put(6, 3, -inf);
    auto c = gemm(a, b, 3, k, n, false, tb);
    for (std::int64_t j = 0; j < n; ++j) EXPECT_TRUE(std::isnan(c[static_cast<std::size_t>(j)])) << j;
    EXPECT_TRUE(std::isnan(c[static_cast<std::size_t>(n + 2)]));
    EXPECT_FALSE(std::isnan(c[static_cast<std::size_t>(n + 1)]));
    EXPECT_EQ(c[static_cast<std::size_t>(2 * n + 2)], inf);
    EXPECT_EQ(c[static_cast<std::size_t>(2 * n + 3)], inf);
    EXPECT_TRUE(std::isfinite(c[static_cast<std::size_t>(2 * n + 4)]));
  }
}

// matmul's batched forms at a few rows: stacked, A broadcast, B broadcast, broadcast batch dims.
TEST(Gemv, BatchedMatmulMatchesPerMatrixProducts) {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  for (const Case& cs : {Case{{3, 2, 5}, {3, 5, 7}, false, false}, Case{{2, 5}, {3, 5, 7}, false, false},
                         Case{{3, 2, 5}, {5, 7}, false, false}, Case{{4, 1, 3, 6}, {3, 6, 9}, false, false},
                         Case{{3, 5, 2}, {3, 7, 5}, true, true}, Case{{5, 2}, {3, 5, 7}, true, false}}) {
    Tensor a = random::stateless_normal(cs.a, 31, 0.0, 1.0, DType::float32);
    Tensor b = random::stateless_normal(cs.b, 32, 0.0, 1.0, DType::float32);
    Tensor got = matmul(a, b, cs.ta, cs.tb);
    Tensor want = matmul(cast(a, DType::float64), cast(b, DType::float64), cs.ta, cs.tb);
    ef::testing::expect_tensor_near(cast(got, DType::float64), want, 1e-5);
  }
}

// Dense at a few rows: eager (the fused kernel), the composed ops a tape records, and a traced
// function give the same bits.
TEST(Gemv, DenseEagerTapeAndTracedAgreeBitForBit) {
  for (std::int64_t rows : {1, 3, 8, 9}) {
    nn::Dense dense(67, "relu");
    Tensor x = random::stateless_normal({rows, 45}, 41, 0.0, 1.0, DType::float32);
    Tensor eager = dense(x);
    Tensor composed = relu(matmul(x, dense.kernel().value()) + dense.bias().value());
    auto f = function([&](const Tensor& t) { return dense(t); });
    Tensor traced = f(x);
    EXPECT_TRUE(bit_equal(eager.to_vector<float>(), composed.to_vector<float>())) << rows;
    EXPECT_TRUE(bit_equal(eager.to_vector<float>(), traced.to_vector<float>())) << rows;
  }
}

// The batch-1 MLP of the benchmark, traced, against a double-precision forward pass.
TEST(Gemv, Batch1MlpInferenceMatchesReference) {
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(512, "relu");
  model->add<nn::Dense>(512, "relu");
  model->add<nn::Dense>(10);
  Tensor x = random::stateless_uniform({1, 784}, 51, 0.0, 1.0, DType::float32);
  auto f = function([&](const Tensor& t) { return (*model)(t); });
  Tensor traced = f(x);
  Tensor h = cast(x, DType::float64);
  const auto& layers = model->stack();
  for (std::size_t i = 0; i < layers.size(); ++i) {
    auto* d = dynamic_cast<nn::Dense*>(layers[i].get());
    ASSERT_NE(d, nullptr);
    h = matmul(h, cast(d->kernel().value(), DType::float64)) + cast(d->bias().value(), DType::float64);
    if (i + 1 < layers.size()) h = relu(h);
  }
  ef::testing::expect_tensor_near(cast(traced, DType::float64), h, 1e-4);
  EXPECT_TRUE(bit_equal(traced.to_vector<float>(), (*model)(x).to_vector<float>()));
}
