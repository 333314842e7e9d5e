// Replay allocates nothing: a cached call of a static-shape graph makes no heap allocation.
// Its own binary because it replaces the global operator new to count.
#include <gtest/gtest.h>

#include <eagerflow/eagerflow.h>

#include "counting_new.h"

using ef::testing::heap_allocations;

TEST(NoAlloc, CachedCallOfAStaticGraphMakesNoHeapAllocation) {
  ef::set_num_threads(1);  // no OpenMP team start-up inside the window
  auto f = ef::function([](const ef::Tensor& a, const ef::Tensor& b) { return ef::relu(a * b + 1.0f) - a; });
  ef::Tensor a = ef::scalar(1.5f), b = ef::scalar(-2.0f);
  for (int i = 0; i < 3; ++i) f(a, b);  // trace, then warm the caches
  long before = heap_allocations.load();
  float last = 0;
  for (int i = 0; i < 100; ++i) last = f(a, b).item<float>();
  EXPECT_EQ(heap_allocations.load() - before, 0);
  EXPECT_EQ(last, 0.f - 1.5f);
}

TEST(NoAlloc, CachedCallsWithEveryArgumentKindHitTheIndexWithoutAllocating) {
  ef::set_num_threads(1);
  auto f = ef::function([](const ef::Tensor& x, const std::vector<ef::Tensor>& xs,
                           const std::map<std::string, ef::Tensor>& m, bool flag, int n, double d,
                           const std::string& mode) {
    ef::Tensor y = x + xs[0] + m.at("bias");
    return flag && mode == "scale" ? y * static_cast<float>(n * d) : y;
  });
  ef::Tensor x = ef::scalar(1.0f);
  std::vector<ef::Tensor> xs{ef::scalar(2.0f)};
  std::map<std::string, ef::Tensor> m{{"bias", ef::scalar(3.0f)}};
  std::string mode = "scale";
  for (int i = 0; i < 3; ++i) f(x, xs, m, true, 2, 0.5, mode);
  f(x, xs, m, false, 2, 0.5, mode);  // a second entry, so the index has to choose
  long before = heap_allocations.load();
  float a = 0, b = 0;
  for (int i = 0; i < 50; ++i) {
    a = f(x, xs, m, true, 2, 0.5, mode).item<float>();
    b = f(x, xs, m, false, 2, 0.5, mode).item<float>();
  }
  EXPECT_EQ(heap_allocations.load() - before, 0) << "a hit must not rebuild the signature";
  EXPECT_EQ(a, 6.f);
  EXPECT_EQ(b, 6.f);
  EXPECT_EQ(f.tracing_count(), 2);
}

TEST(NoAlloc, ProductsByKeptWeightsAllocateNothing) {
  // The GEMM finds the weights' panels packed by an earlier call (kernels/cpu/packed_b_cache.h):
  // the lookup allocates nothing, for the blocked GEMM (32 rows) and the few-rows product.
  ef::set_num_threads(1);
  ef::Tensor w = ef::random::stateless_normal({64, 48}, 1, 0.0, 1.0, ef::DType::float32);
  auto f = ef::function([w](const ef::Tensor& x) { return ef::matmul(x, w); });
  for (std::int64_t rows : {32, 2}) {
    ef::Tensor x = ef::random::stateless_normal({rows, 64}, 2, 0.0, 1.0, ef::DType::float32);
    for (int i = 0; i < 4; ++i) f(x);  // trace, first sight, packing, warm
    long before = heap_allocations.load();
    for (int i = 0; i < 50; ++i) f(x);
    EXPECT_EQ(heap_allocations.load() - before, 0) << rows << " rows";
  }
}
