#include "eagerflow/core/threading.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "eagerflow/core/error.h"

namespace ef {
namespace {
int default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}
std::atomic<int>& budget() {
  static std::atomic<int> n{default_threads()};
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
