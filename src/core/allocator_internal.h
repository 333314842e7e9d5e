#pragma once
// The allocator's own part of ef::allocator::release_cached (src/core/allocator.cpp); the
// kernels' part, and release_cached itself, are in src/kernels/cpu/kernel_caches.cpp.

namespace ef::allocator {

// Hands the cached buffers back to the system.
void release_cached_buffers();

}  // namespace ef::allocator
