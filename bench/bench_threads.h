#pragma once
// The thread setting of a benchmark row. EF_BENCH_THREADS=default leaves the library's own
// load-aware default in place (OMP_NUM_THREADS unset), so bench/busy_steps.sh can time the same
// row at the default and at fixed counts under one load; otherwise the row's count is set.
#include <cstdlib>
#include <cstring>

#include <eagerflow/eagerflow.h>

namespace ef_bench {

inline bool default_threads_requested() {
  const char* e = std::getenv("EF_BENCH_THREADS");
  return e != nullptr && std::strcmp(e, "default") == 0;
}

// Sets n threads unless the default is asked for; true when the row runs at n.
inline bool apply_threads(int n) {
  if (default_threads_requested()) return false;
  ef::set_num_threads(n);
  ef::sync_thread_budget();
  return true;
}

}  // namespace ef_bench
