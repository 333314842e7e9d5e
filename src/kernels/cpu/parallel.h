#pragma once
// Our loops run on OpenMP, the same runtime oneDNN uses, so there is one thread pool.
#include <cstdint>

#include <omp.h>

#include "eagerflow/core/threading.h"

namespace ef::cpu {

// Below this many elements a loop stays on the calling thread: waking a team costs more.
inline constexpr std::int64_t kParallelGrain = 1 << 15;

template <class Fn>
void parallel_for(std::int64_t n, std::int64_t cost_per_item, Fn&& fn) {
  int threads = num_threads();
  if (threads <= 1 || n * cost_per_item < kParallelGrain || n < 2) {
    fn(std::int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
#ifdef _OPENMP
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    int t = 0, nt = 1;
#endif
    std::int64_t chunk = (n + nt - 1) / nt;
    std::int64_t begin = t * chunk, end = begin + chunk < n ? begin + chunk : n;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace ef::cpu
