// The packed-B cache under threads of the caller's own (Python threads serving one model,
// several models at once): lookups, packing and trimming from many threads give every product
// the bits of an uncached one (run under ThreadSanitizer in CI).
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/cpu/gemm_chain.h"
#include "kernels/cpu/packed_b_cache.h"
#include "test_util.h"

using namespace ef;

namespace {

Tensor normal(Shape s, std::uint64_t seed) { return random::stateless_normal(std::move(s), seed, 0.0, 1.0, DType::float32); }

std::vector<float> uncached(const Tensor& x, const Tensor& w) {
  const std::int64_t m = x.dim(0), k = x.dim(1), n = w.dim(1);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  cpu::gemm_chain_f32(x.data<float>().data(), w.data<float>().data(), c.data(), 1, m, k, n, false, false, nullptr,
                      false, false);
  return c;
}

}  // namespace

TEST(PackedBCacheThreads, ManyCallersShareAndTrimTheCache) {
  if (!cpu::gemm_chain_applicable()) GTEST_SKIP() << "no AVX2+FMA here: the blocked GEMM does not run";
  const Tensor shared_w = normal({96, 40}, 1);
  const Tensor x = normal({24, 96}, 2);
  const std::vector<float> want = uncached(x, shared_w);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        // The shared weights, and weights of this thread's own that come and go.
        const std::vector<float> got = matmul(x, shared_w).to_vector<float>();
        if (std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) != 0) ++mismatches[t];
        const Tensor own = normal({96, 24}, 100 + static_cast<std::uint64_t>(t * 1000 + i % 5));
        const std::vector<float> own_want = uncached(x, own);
        for (int r = 0; r < 3; ++r) {
          const std::vector<float> own_got = matmul(x, own).to_vector<float>();
          if (std::memcmp(own_got.data(), own_want.data(), own_want.size() * sizeof(float)) != 0) ++mismatches[t];
        }
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  EXPECT_GT(cpu::packed_b_bytes(), 0u);
}
