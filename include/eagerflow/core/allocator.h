#pragma once
// A caching allocator: freed buffers go to per-size-class free lists and are handed out
// again, so steady-state eager loops and graph replays do not reach malloc.
#include <cstddef>

namespace ef::allocator {
void* allocate(std::size_t nbytes);      // 64-byte aligned; nullptr for 0 bytes
void deallocate(void* p, std::size_t nbytes);
std::size_t cached_bytes();
void release_cached();                   // hands all cached buffers back to the system
std::size_t system_allocations();        // how many times we had to ask the system (for tests)
}  // namespace ef::allocator
