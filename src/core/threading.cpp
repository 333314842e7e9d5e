#include "eagerflow/core/threading.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#include "eagerflow/core/error.h"

namespace ef {
namespace {
int default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}
// The machine's cores, unless OMP_NUM_THREADS asks for fewer (or more, within reason): the
// usual way to limit a process's intra-op threads from outside.
int initial_budget() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && n >= 1 && n <= 8L * default_threads() + 256) return static_cast<int>(n);
  }
  return default_threads();
}
std::atomic<int>& budget() {
  static std::atomic<int> n{initial_budget()};
  return n;
}
thread_local int synced_threads = 0;
}  // namespace

int max_threads() { return std::max(256, 8 * default_threads()); }

void set_num_threads(int n) {
  if (n < 1) fail("set_num_threads", "need at least 1 thread, got " + std::to_string(n));
  // The OpenMP runtime ends the process when it cannot start the threads it is asked for.
  if (n > max_threads())
    fail("set_num_threads", std::to_string(n) + " threads is more than this machine can run (at most " +
                                std::to_string(max_threads()) + "; it has " + std::to_string(default_threads()) + " cores)");
  budget().store(n);
}

int num_threads() { return budget().load(std::memory_order_relaxed); }

void sync_thread_budget() {
  int n = num_threads();
  if (synced_threads != n) {
    omp_set_num_threads(n);
    synced_threads = n;
  }
}

}  // namespace ef
