// ef::allocator's functions that reach the kernels' caches. They live here, not in
// src/core/allocator.cpp, so that core does not depend on kernels (kernels depend on core).
#include "core/allocator_internal.h"
#include "eagerflow/core/allocator.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/gemm.h"

namespace ef::allocator {

void release_cached() {
  release_cached_buffers();
  cpu::release_primitive_caches();  // prepared kernels hold memory too
  cpu::release_conv_caches();
}

std::size_t cached_primitives() { return cpu::cached_primitives_on_this_thread(); }

}  // namespace ef::allocator
