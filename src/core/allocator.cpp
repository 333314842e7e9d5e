#include "eagerflow/core/allocator.h"

#include "core/allocator_internal.h"

#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace ef::allocator {
namespace {

constexpr std::size_t kAlignment = 64;
constexpr std::size_t kHugePage = std::size_t{1} << 21;
constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;  // never hoard more than 1 GiB
constexpr int kClasses = 64;  // every power of two a std::size_t can hold

// Size classes are powers of two from 64 bytes: a freed 3 KiB buffer serves a later 2.5 KiB
// request, which is what reuse across replays of the same graph needs.
int size_class(std::size_t n) {
  if (n > (std::size_t{1} << (kClasses - 2))) throw std::bad_alloc();  // no power of two above it fits
  std::size_t rounded = std::bit_ceil(n < kAlignment ? kAlignment : n);
  return std::countr_zero(rounded);
}

struct Cache {
  std::mutex mutex;
  std::vector<void*> free_lists[kClasses];
  std::size_t cached = 0;
  std::atomic<std::size_t> system_allocations{0};

  ~Cache() {
    for (auto& list : free_lists)
      for (void* p : list) std::free(p);
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked on purpose: tensors may die during static teardown
  return *c;
}

}  // namespace

namespace {
std::atomic<std::size_t> largest{0};
}  // namespace

std::size_t largest_request() { return largest.load(std::memory_order_relaxed); }
void reset_largest_request() { largest.store(0, std::memory_order_relaxed); }

void* allocate(std::size_t nbytes) {
  if (nbytes == 0) return nullptr;
  for (std::size_t seen = largest.load(std::memory_order_relaxed); nbytes > seen;)
    if (largest.compare_exchange_weak(seen, nbytes, std::memory_order_relaxed)) break;
  int cls = size_class(nbytes);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    auto& list = c.free_lists[cls];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      c.cached -= std::size_t{1} << cls;
      return p;
    }
  }
  c.system_allocations.fetch_add(1, std::memory_order_relaxed);
  std::size_t bytes = std::size_t{1} << cls;
  // Big buffers on 2 MiB boundaries, as transparent huge pages where the kernel allows them
  // (madvise mode): streaming a 16 MiB tensor then walks 8 pages, not 4096.
  bool huge = bytes >= kHugePage;
  void* p = std::aligned_alloc(huge ? kHugePage : kAlignment, bytes);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  if (huge) ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
  return p;
}

void deallocate(void* p, std::size_t nbytes) {
  if (!p) return;
  int cls = size_class(nbytes);
  std::size_t bytes = std::size_t{1} << cls;
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (c.cached + bytes <= kMaxCachedBytes) {
      c.free_lists[cls].push_back(p);
      c.cached += bytes;
      return;
    }
  }
  std::free(p);
}

std::size_t cached_bytes() {
  std::lock_guard lock(cache().mutex);
  return cache().cached;
}

// release_cached() and cached_primitives() also reach the kernels' caches, so they live with
// the kernels (src/kernels/cpu/kernel_caches.cpp): core does not depend on kernels.
void release_cached_buffers() {
  Cache& c = cache();
  std::lock_guard lock(c.mutex);
  for (auto& list : c.free_lists) {
    for (void* p : list) std::free(p);
    list.clear();
  }
  c.cached = 0;
}

std::size_t system_allocations() { return cache().system_allocations.load(); }

}  // namespace ef::allocator
