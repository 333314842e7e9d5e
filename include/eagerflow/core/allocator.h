#pragma once
// A caching allocator: freed buffers go to per-size-class free lists and are handed out
// again, so steady-state eager loops and graph replays do not reach malloc.
#include <cstddef>

namespace ef::allocator {
void* allocate(std::size_t nbytes);      // 64-byte aligned; nullptr for 0 bytes
void deallocate(void* p, std::size_t nbytes);
std::size_t cached_bytes();
// Hands all cached buffers back to the system, and drops the oneDNN primitives each thread
// has prepared (at that thread's next matmul).
void release_cached();
std::size_t cached_primitives();         // oneDNN primitives this thread keeps (at most 64, LRU)
std::size_t system_allocations();        // how many times we had to ask the system (for tests)
// The largest single request since the last reset (tests check that loaders allocate no
// more than a file justifies).
std::size_t largest_request();
void reset_largest_request();
}  // namespace ef::allocator
