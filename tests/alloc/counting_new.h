#pragma once
// Replaces the global operator new/delete with counting versions. Include in exactly one
// source file of a binary (a test or a benchmark tool), never in the library.
#include <atomic>
#include <cstdlib>
#include <new>

namespace ef::testing {
inline std::atomic<long> heap_allocations{0};
}  // namespace ef::testing

void* operator new(std::size_t n) {
  ef::testing::heap_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Out of line: where GCC sees this free() inlined next to a new-expression it takes the pair for
// a mismatch (-Wmismatched-new-delete), though operator new above is malloc.
[[gnu::noinline]] inline void ef_counting_free(void* p) noexcept { std::free(p); }
void operator delete(void* p) noexcept { ef_counting_free(p); }
void operator delete(void* p, std::size_t) noexcept { ef_counting_free(p); }
