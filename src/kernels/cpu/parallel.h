#pragma once
// Our loops run on OpenMP, the same runtime oneDNN uses, so there is one thread pool.
#include <cstdint>
#include <initializer_list>

#include <omp.h>

#include "core/thread_budget.h"

// libgomp is not built with ThreadSanitizer, so TSan cannot see that a parallel region's fork
// and join order the team's work with the code before and after it; it then reports the
// caller reading what a worker wrote as a race. The fork and join are announced to it here.
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define EF_TSAN_RELEASE(addr) __tsan_release(addr)
#define EF_TSAN_ACQUIRE(addr) __tsan_acquire(addr)
#else
#define EF_TSAN_RELEASE(addr) ((void)(addr))
#define EF_TSAN_ACQUIRE(addr) ((void)(addr))
#endif

namespace ef::cpu {

// Below this much work (elements times a per-element cost) a loop stays on the calling thread:
// waking a team costs more than it saves, and far more when the machine is busy.
inline constexpr std::int64_t kParallelGrain = 1 << 16;
// The same for oneDNN's matmul and convolution, in multiply-adds (about 6 us on one core): a
// second thread made a small Keras fit (Dense(64) on batches of 64: 262,144) 1.2-1.6x slower on
// a quiet machine, and still gains on the seed layer's Dense(32) on [60,28,28] (1.5 million).
inline constexpr std::int64_t kGemmParallelGrain = 1 << 19;

// The product of sizes, saturating: hostile geometries (a huge pooling window) must not overflow.
inline std::int64_t work_of(std::initializer_list<std::int64_t> sizes) {
  std::int64_t w = 1;
  for (std::int64_t s : sizes)
    if (s <= 0 || __builtin_mul_overflow(w, s, &w)) return s <= 0 ? 0 : INT64_MAX;
  return w;
}

// Threads for `work` units of work against `grain`: 1 when small, else what the budget allows now.
inline int threads_for_work(std::int64_t work, std::int64_t grain) {
  return work < grain ? 1 : detail::parallel_threads();
}

// fn(begin, end) over [0, n) in one contiguous run per thread. `grain`: the work (n times
// cost_per_item) below which the loop stays on the calling thread.
template <class Fn>
void parallel_for(std::int64_t n, std::int64_t cost_per_item, Fn&& fn, std::int64_t grain = kParallelGrain) {
  int threads = n < 2 ? 1 : threads_for_work(work_of({n, cost_per_item}), grain);
  if (threads <= 1) {
    fn(std::int64_t{0}, n);
    return;
  }
  detail::count_parallel_region();
  [[maybe_unused]] char fork_join = 0;
  EF_TSAN_RELEASE(&fork_join);
#pragma omp parallel num_threads(threads)
  {
    EF_TSAN_ACQUIRE(&fork_join);
#ifdef _OPENMP
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    int t = 0, nt = 1;
#endif
    if (t == 0) detail::note_parallel_team(nt);
    std::int64_t chunk = (n + nt - 1) / nt;
    std::int64_t begin = t * chunk, end = begin + chunk < n ? begin + chunk : n;
    if (begin < end) fn(begin, end);
    EF_TSAN_RELEASE(&fork_join);
  }
  EF_TSAN_ACQUIRE(&fork_join);
}

}  // namespace ef::cpu
