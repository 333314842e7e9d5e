// Counts heap allocations (operator new) per call on the hot paths, to keep "replay allocates
// nothing" honest: tensor buffers come from the caching allocator, so what remains are
// handle objects (tensor, storage, shape) and what oneDNN allocates inside execute().
#include <eagerflow/eagerflow.h>

#include <cstdio>

#include "../tests/alloc/counting_new.h"

namespace {
using ef::testing::heap_allocations;

template <class Fn>
double per_call(int n, Fn&& fn) {
  fn();
  fn();
  long before = heap_allocations.load();
  for (int i = 0; i < n; ++i) fn();
  return static_cast<double>(heap_allocations.load() - before) / n;
}
}  // namespace

int main() {
  auto add = ef::function([](const ef::Tensor& a, const ef::Tensor& b) { return a + b; });
  ef::Tensor a = ef::scalar(1.0f), b = ef::scalar(2.0f);
  std::printf("heap allocations per call (operator new):\n");
  std::printf("  eager add, 1-element tensors:        %.1f\n", per_call(1000, [&] { ef::add(a, b); }));
  std::printf("  cached ef::function call of that add: %.1f\n", per_call(1000, [&] { add(a, b); }));
  ef::nn::Dense dense(32);
  auto layer = ef::function(dense);
  ef::Tensor x = ef::random::uniform({60, 28, 28});
  std::printf("  seed layer replay (fused Dense):      %.1f\n", per_call(100, [&] { layer(x); }));
  std::size_t system = ef::allocator::system_allocations();
  for (int i = 0; i < 100; ++i) layer(x);
  std::printf("  tensor buffers from the system in 100 replays: %zu\n", ef::allocator::system_allocations() - system);
  return 0;
}
