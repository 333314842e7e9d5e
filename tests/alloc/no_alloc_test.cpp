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
