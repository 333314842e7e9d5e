// The blocked FMA-chain GEMM (src/kernels/cpu/gemm_chain.cpp) on its register tiles: the
// AVX-512 tiles (12x32; 6x64 for a multiple of 64 columns; 12x16 for at most 16) give the same bits as the AVX2 tile
// (6x16) and as a scalar chain of
// fused multiply-adds, for every edge of both tiles, several K blocks, operands stored either
// way, broadcast operands, the bias, and one or two threads.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/thread_budget.h"
#include "kernels/cpu/gemm_chain.h"
#include "kernels/cpu/vec_math.h"
#include "test_util.h"

using namespace ef;

namespace {

std::vector<float> draws(std::int64_t n, std::uint64_t seed) {
  return random::stateless_normal({n}, seed, 0.0, 1.0, DType::float32).to_vector<float>();
}

struct Case {
  std::int64_t batch, m, k, n;
  bool a_broadcast, b_broadcast, bias, ta, tb;
};

std::string describe(const Case& c) {
  return "batch=" + std::to_string(c.batch) + " m=" + std::to_string(c.m) + " k=" + std::to_string(c.k) +
         " n=" + std::to_string(c.n) + " ab=" + std::to_string(c.a_broadcast) + " bb=" + std::to_string(c.b_broadcast) +
         " bias=" + std::to_string(c.bias) + " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb);
}

// The arithmetic both tiles promise: one FMA chain over k in order from +0, then + bias.
std::vector<float> scalar_chain(const Case& c, const std::vector<float>& a, const std::vector<float>& b,
                                const std::vector<float>& bias) {
  std::vector<float> out(static_cast<std::size_t>(c.batch * c.m * c.n));
  for (std::int64_t i = 0; i < c.batch; ++i) {
    const float* ai = a.data() + (c.a_broadcast ? 0 : i * c.m * c.k);
    const float* bi = b.data() + (c.b_broadcast ? 0 : i * c.k * c.n);
    for (std::int64_t r = 0; r < c.m; ++r)
      for (std::int64_t j = 0; j < c.n; ++j) {
        float acc = 0.0f;
        for (std::int64_t p = 0; p < c.k; ++p) {
          const float x = c.ta ? ai[p * c.m + r] : ai[r * c.k + p];
          const float y = c.tb ? bi[j * c.k + p] : bi[p * c.n + j];
          acc = std::fma(x, y, acc);
        }
        out[static_cast<std::size_t>((i * c.m + r) * c.n + j)] = c.bias ? acc + bias[static_cast<std::size_t>(j)] : acc;
      }
  }
  return out;
}

void check(const Case& c) {
  const std::vector<float> a = draws((c.a_broadcast ? 1 : c.batch) * c.m * c.k, 11 + c.m * 7 + c.k);
  const std::vector<float> b = draws((c.b_broadcast ? 1 : c.batch) * c.k * c.n, 13 + c.n * 5 + c.k);
  const std::vector<float> bias = draws(c.n, 17);
  const float* bias_p = c.bias ? bias.data() : nullptr;
  const std::vector<float> want = scalar_chain(c, a, b, bias);
  std::vector<float> best(want.size(), -1.0f), avx2(want.size(), -2.0f);
  cpu::gemm_chain_f32(a.data(), b.data(), best.data(), c.batch, c.m, c.k, c.n, c.a_broadcast, c.b_broadcast, bias_p,
                      c.ta, c.tb);
  cpu::gemm_chain_f32_avx2(a.data(), b.data(), avx2.data(), c.batch, c.m, c.k, c.n, c.a_broadcast, c.b_broadcast,
                           bias_p, c.ta, c.tb);
  ASSERT_EQ(std::memcmp(best.data(), want.data(), want.size() * sizeof(float)), 0) << describe(c) << " (widest tile)";
  ASSERT_EQ(std::memcmp(avx2.data(), want.data(), want.size() * sizeof(float)), 0) << describe(c) << " (AVX2 tile)";
}

}  // namespace

TEST(GemmChain, WidestTileIsAvx512WhereTheCpuHasIt) {
  if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
  // AVX-512's tile exactly where the vector kernels run AVX-512 (the CPU has it and EF_ISA
  // does not cap it): EF_ISA=avx2 keeps AVX2's tile on an AVX-512 CPU.
  __builtin_cpu_init();
  const bool wide = __builtin_cpu_supports("avx512f") && cpu::vec::kernels().isa == cpu::vec::Isa::avx512;
  EXPECT_EQ(cpu::gemm_chain_has_avx512(), wide);
}

TEST(GemmChain, BothTilesEqualTheScalarChainAtEveryEdge) {
  if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
  // m crosses 6- and 12-row tiles, ends on AVX-512's 8- and 4-row tiles (16, 20) and on the
  // 64-column tile's 4- and 2-row tiles (16, 20), or pads (9, 13, 25), and crosses the 144-row
  // A block; n crosses 16 and 32 columns, and 64 and 128 run the 64-column tile.
  for (std::int64_t m : {9, 12, 13, 16, 20, 25, 150})
    for (std::int64_t n : {1, 15, 16, 31, 33, 64, 70, 128})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) check({1, m, 37, n, false, false, n % 2 == 1, ta, tb});
}

TEST(GemmChain, BothTilesEqualTheScalarChainAcrossKBlocks) {
  if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
  for (std::int64_t k : {255, 256, 257, 600})
    for (bool tb : {false, true}) check({1, 30, k, 40, false, false, true, false, tb});
  // Full panels of a B stored [K,N] are packed by the first tile that reads them and reused by
  // every later tile, row block and A stored either way: a wrong or stale panel shows here.
  for (bool ta : {false, true}) check({1, 150, 600, 64, false, false, true, ta, false});
  for (bool ta : {false, true}) check({1, 128, 300, 64, false, false, true, ta, false});  // 10 tiles and 8 rows
}

TEST(GemmChain, NarrowProductsEqualTheScalarChain) {
  if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
  // At most 16 columns run AVX-512's 16-column tile: a classifier's Dense(10) and its kernel's
  // gradient (X^T dY, A stored transposed), across K blocks, with its 8- and 4-row tiles.
  for (std::int64_t n : {10, 16, 17})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) check({1, 128, 600, n, false, false, n != 16, ta, tb});
  check({1, 512, 128, 10, false, false, false, true, false});
  check({1, 140, 50, 3, false, false, true, false, false});
}

TEST(GemmChain, BatchedAndBroadcastOperands) {
  if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
  check({3, 20, 50, 35, false, false, false, false, false});
  check({3, 20, 50, 35, true, false, true, false, true});
  check({3, 20, 50, 35, false, true, true, true, false});
}

TEST(GemmChain, TwoThreadsGiveTheSameBits) {
  if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
  const int before = ef::num_threads();
  ef::set_num_threads(2);
  ef::sync_thread_budget();
  check({1, 300, 300, 700, false, false, true, false, false});  // large enough to split over threads
  check({2, 130, 70, 90, false, false, true, true, true});
  check({1, 128, 200, 70, false, false, true, false, false});  // 64 rows a thread: 5 tiles and 4 rows
  check({1, 128, 4096, 10, false, false, true, false, false});  // the 16-column tile on each thread's rows
  ef::set_num_threads(before);
  ef::sync_thread_budget();
}
