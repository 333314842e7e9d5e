// Issue 18's ops replay without heap allocations (their kernels keep per-thread buffers): a
// cached call of a static graph of them, as a generation step and a masked-attention score
// computation use them, allocates nothing once warm. (operator new is counted by
// counting_new.h, included once in no_alloc_test.cpp of this binary.)
#include <gtest/gtest.h>

#include <atomic>

#include <eagerflow/eagerflow.h>

namespace ef::testing {
inline std::atomic<long> heap_allocations{0};  // the counter of counting_new.h (an inline variable)
}  // namespace ef::testing

namespace {

// Allocations in 50 cached calls of f (after a trace and two warm-up calls).
template <class F>
long allocations_of(F& f, const ef::Tensor& x) {
  for (int i = 0; i < 3; ++i) f(x);
  long before = ef::testing::heap_allocations.load();
  for (int i = 0; i < 50; ++i) f(x);
  return ef::testing::heap_allocations.load() - before;
}

}  // namespace

TEST(NoAlloc, SequenceOpsReplayWithoutHeapAllocations) {
  ef::set_num_threads(1);  // no OpenMP team start-up inside the window
  // A generation step's filtering and a causal mask.
  auto sampling = ef::function([](const ef::Tensor& scores) {
    ef::Tensor masked = ef::where(ef::tril(ef::ones_like(scores) > 0.0), scores, -1e9);
    auto [values, indices] = ef::top_k(masked, 2);
    return values + ef::cast(indices, ef::DType::float32);
  });
  auto sorting = ef::function([](const ef::Tensor& x) {
    ef::Tensor s = ef::sort(x, 1, true) + ef::cast(ef::argsort(x, 0), ef::DType::float32);
    return s + ef::take_along_axis(x, ef::argsort(x, 1), 1) + ef::clip(ef::round(ef::cumsum(x, 1, true)), -2.0, 2.0) +
           ef::cumprod(x, 0);
  });
  auto shaping = ef::function([](const ef::Tensor& x) {
    return ef::repeat(ef::pad(ef::tile(x, {1, 2}), {{1, 0}, {2, 2}}, "reflect"), 2, 0);
  });
  ef::Tensor scores = ef::random::stateless_normal({4, 6}, 1), x = ef::random::stateless_normal({3, 4}, 2);
  EXPECT_EQ(allocations_of(sampling, scores), 0);
  EXPECT_EQ(allocations_of(sorting, x), 0);
  EXPECT_EQ(allocations_of(shaping, x), 0);
  EXPECT_EQ(shaping(x).shape(), (ef::Shape{8, 12}));
}
