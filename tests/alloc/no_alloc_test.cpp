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
