#pragma once
// A per-thread cache of fixed-size blocks for the small records every op creates (tensor
// handles and storage records, through std::allocate_shared), so that a graph replay does not
// call operator new. Blocks freed on another thread join that thread's cache.
#include <cstddef>
#include <new>
#include <vector>

namespace ef::detail {

inline thread_local bool block_caches_gone = false;  // trivially destructible: safe at thread exit

template <std::size_t Size>
struct BlockCache {
  static constexpr std::size_t kMaxBlocks = 4096;
  std::vector<void*> blocks;
  BlockCache() { blocks.reserve(kMaxBlocks); }
  ~BlockCache() {
    for (void* p : blocks) ::operator delete(p);
    block_caches_gone = true;
  }
  static BlockCache& get() {
    thread_local BlockCache cache;
    return cache;
  }
};

template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U> PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT: rebinding

  T* allocate(std::size_t n) {
    if (n == 1 && !block_caches_gone) {
      auto& cache = BlockCache<sizeof(T)>::get();
      if (!cache.blocks.empty()) {
        void* p = cache.blocks.back();
        cache.blocks.pop_back();
        return static_cast<T*>(p);
      }
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) {
    if (n == 1 && !block_caches_gone) {
      auto& cache = BlockCache<sizeof(T)>::get();
      if (cache.blocks.size() < BlockCache<sizeof(T)>::kMaxBlocks) {
        cache.blocks.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }
  template <class U> bool operator==(const PoolAllocator<U>&) const { return true; }
};

}  // namespace ef::detail
