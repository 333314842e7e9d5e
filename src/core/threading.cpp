#include "eagerflow/core/threading.h"

#include <fcntl.h>
#include <omp.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/thread_budget.h"
#include "eagerflow/core/error.h"
#include "eagerflow/core/log.h"

namespace ef {
namespace {
int default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}
// 0 when OMP_NUM_THREADS is unset or unusable.
int env_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && n >= 1 && n <= 8L * default_threads() + 256) return static_cast<int>(n);
  }
  return 0;
}
// 0: the load-aware default. Otherwise the explicit count, used exactly.
std::atomic<int>& explicit_threads() {
  static std::atomic<int> n{env_threads()};
  return n;
}
thread_local int synced_threads = 0;
thread_local bool single_threaded_here = false;

// ---- the default: measure what other processes use of our cores, and leave it to them.
//
// An OpenMP team larger than the free cores is the worst case: a worker that waits for a core
// holds up the whole team at every barrier, and libgomp's idle workers spin for milliseconds
// (its wait policy is read from the environment when libgomp loads, before any code of ours
// runs, so the library cannot change it). Fewer threads under load lose little by comparison.

cpu_set_t& affinity() {
  static cpu_set_t mask = [] {
    cpu_set_t m;
    CPU_ZERO(&m);
    if (sched_getaffinity(0, sizeof m, &m) != 0 || CPU_COUNT(&m) == 0)
      for (int i = 0, n = default_threads(); i < n && i < CPU_SETSIZE; ++i) CPU_SET(i, &m);
    return m;
  }();
  return mask;
}

// Reads a small /proc file into buf without allocating (replay must not allocate); false if
// it cannot. Stops at the buffer's end: the lines we need come first.
bool read_proc(const char* path, char* buf, std::size_t size, std::size_t& len) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  len = 0;
  while (len + 1 < size) {
    ssize_t got = ::read(fd, buf + len, size - 1 - len);
    if (got <= 0) break;
    len += static_cast<std::size_t>(got);
  }
  ::close(fd);
  buf[len] = '\0';
  return len > 0;
}

// Busy and total ticks of the CPUs in our affinity mask, from /proc/stat's "cpuN" lines.
// Busy is everything but idle and iowait; steal (a hypervisor's other guests) counts as busy.
bool read_cpu_ticks(std::uint64_t& busy, std::uint64_t& total) {
  static char buf[16384];  // callers hold LoadProbe::mutex
  std::size_t len = 0;
  if (!read_proc("/proc/stat", buf, sizeof buf, len)) return false;
  busy = total = 0;
  int seen = 0;
  for (char* line = buf; line && *line;) {
    char* next = std::strchr(line, '\n');
    if (next) *next++ = '\0';
    if (std::strncmp(line, "cpu", 3) != 0) {
      if (seen) break;
      line = next;
      continue;
    }
    char* p = line + 3;
    if (*p >= '0' && *p <= '9') {
      long cpu = std::strtol(p, &p, 10);
      if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &affinity())) {
        std::uint64_t f[8] = {};
        for (auto& v : f) v = std::strtoull(p, &p, 10);
        std::uint64_t all = f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
        total += all;
        busy += all - f[3] - f[4];
        ++seen;
      }
    }
    line = next;
  }
  return seen > 0 && total > 0;
}

// Threads running or ready to run on the whole machine now (/proc/loadavg's 4th field); -1 if
// unknown.
int runnable_now() {
  char buf[256];
  std::size_t len = 0;
  if (!read_proc("/proc/loadavg", buf, sizeof buf, len)) return -1;
  const char* p = buf;
  for (int field = 0; field < 3 && p; ++field) p = std::strchr(p + 1, ' ');
  return p ? std::atoi(p + 1) : -1;
}

// Microseconds some task has waited for a CPU since boot (/proc/pressure/cpu, Linux 4.20+).
bool read_cpu_stall_us(std::uint64_t& total_us) {
  char buf[256];
  std::size_t len = 0;
  return read_proc("/proc/pressure/cpu", buf, sizeof buf, len) && detail::cpu_pressure_total_us(buf, total_us);
}

// Whether this process may run on every online CPU: only then is the machine-wide CPU pressure
// about our cores.
bool owns_every_cpu() {
  static const bool all = detail::usable_cpus() >= sysconf(_SC_NPROCESSORS_ONLN);
  return all;
}

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Ticks are 10 ms per CPU: shorter intervals would be noise.
constexpr std::int64_t kProbeIntervalNs = 100'000'000;

struct LoadProbe {
  std::mutex mutex;
  std::atomic<std::int64_t> next_ns{0};
  std::atomic<int> threads{0};  // 0: not measured yet
  std::atomic<double> forced{-1.0};
  // The last measurement (under mutex).
  std::uint64_t busy = 0, total = 0, stall_us = 0;
  double cpu_seconds = 0;
  std::int64_t at_ns = 0;
  bool have_ticks = false, have_stall = false;

  void decide(double busy_elsewhere) {
    int n = detail::threads_for_load(default_threads(), detail::usable_cpus(), busy_elsewhere);
    int before = threads.exchange(n, std::memory_order_relaxed);
    if (n != before && log_enabled(LogLevel::verbose)) {
      char line[128];
      std::snprintf(line, sizeof line, "[threads] %d of %d cores for parallel work (%.2f busy with other processes)", n,
                    detail::usable_cpus(), busy_elsewhere);
      log(LogLevel::verbose, line);
    }
  }

  // Called by whoever finds the measurement stale; the others use the last decision.
  void measure(std::int64_t now) {
    std::unique_lock lock(mutex, std::try_to_lock);
    if (!lock.owns_lock()) return;
    next_ns.store(now + kProbeIntervalNs, std::memory_order_relaxed);
    std::uint64_t b = 0, t = 0, stall = 0;
    bool ok = read_cpu_ticks(b, t);
    bool stall_ok = owns_every_cpu() && read_cpu_stall_us(stall);
    double cpu = process_cpu_seconds();
    if (ok && have_ticks && t > total && now > at_ns) {
      // Busy cores on average over the interval, less the ones this process kept busy.
      double busy_cpus = detail::usable_cpus() * static_cast<double>(b - busy) / static_cast<double>(t - total);
      double ours = (cpu - cpu_seconds) / (1e-9 * static_cast<double>(now - at_ns));
      double elsewhere = std::max(0.0, busy_cpus - ours);
      // A process that shares a core with one of our threads gets only part of the time it
      // wants, and the ticks show only that part (a process busy half the time looked a
      // quarter busy beside our 2 threads, and the default kept 2). The time some task waited
      // for a CPU shows the rest: where it is the larger, it is what the others lack.
      if (stall_ok && have_stall && stall >= stall_us)
        elsewhere = std::max(elsewhere, 1e3 * static_cast<double>(stall - stall_us) / static_cast<double>(now - at_ns));
      decide(elsewhere);
    } else if (threads.load(std::memory_order_relaxed) == 0) {
      // No interval yet: count the threads ready to run now, less this one.
      int runnable = runnable_now();
      decide(runnable > 0 ? runnable - 1 : 0);
    }
    busy = b;
    total = t;
    have_ticks = ok;
    stall_us = stall;
    have_stall = stall_ok;
    cpu_seconds = cpu;
    at_ns = now;
  }
};

LoadProbe& probe() {
  static LoadProbe p;
  return p;
}

std::atomic<std::int64_t> regions{0};
std::atomic<int> last_team{0};
}  // namespace

int max_threads() { return std::max(256, 8 * default_threads()); }

void set_num_threads(int n) {
  if (n < 1) fail("set_num_threads", "need at least 1 thread, got " + std::to_string(n));
  // The OpenMP runtime ends the process when it cannot start the threads it is asked for.
  if (n > max_threads())
    fail("set_num_threads", std::to_string(n) + " threads is more than this machine can run (at most " +
                                std::to_string(max_threads()) + "; it has " + std::to_string(default_threads()) + " cores)");
  explicit_threads().store(n);
}

int num_threads() {
  int n = explicit_threads().load(std::memory_order_relaxed);
  return n > 0 ? n : default_threads();
}

void sync_thread_budget() { detail::sync_omp_threads(detail::parallel_threads()); }

namespace detail {

int usable_cpus() { return std::max(1, CPU_COUNT(&affinity())); }

bool cpu_pressure_total_us(const char* text, std::uint64_t& total_us) {
  const char* some = std::strstr(text, "some ");
  if (!some) return false;
  const char* end = std::strchr(some, '\n');
  const char* field = std::strstr(some, "total=");
  if (!field || (end && field > end)) return false;
  char* stop = nullptr;
  total_us = std::strtoull(field + 6, &stop, 10);
  return stop != field + 6;
}

int threads_for_load(int budget, int cpus, double busy_elsewhere) {
  double free_cpus = static_cast<double>(cpus) - std::max(0.0, busy_elsewhere);
  // A core counts when at least 60% of it is free: a team thread on a core another process
  // holds half the time waits at every barrier (busy_steps.py, 2 cores, one half busy: the MLP
  // step 3.3 ms at 1 thread against 4.8 at 2, the CNN step 6.3 against 8.5, the fit epoch 221
  // against 276 ms; only the transformer step was 8% faster at 2).
  int n = static_cast<int>(std::floor(free_cpus + 0.4));
  return std::clamp(n, 1, std::max(1, budget));
}

int parallel_threads() {
  if (single_threaded_here) return 1;
  int n = explicit_threads().load(std::memory_order_relaxed);
  if (n > 0) return n;
  LoadProbe& p = probe();
  double forced = p.forced.load(std::memory_order_relaxed);
  if (forced >= 0) return threads_for_load(default_threads(), usable_cpus(), forced);
  std::int64_t now = now_ns();
  if (now >= p.next_ns.load(std::memory_order_relaxed)) p.measure(now);
  int chosen = p.threads.load(std::memory_order_relaxed);
  return chosen > 0 ? chosen : default_threads();
}

void set_single_threaded_here(bool on) { single_threaded_here = on; }

void sync_omp_threads(int n) {
  if (synced_threads != n) {
    omp_set_num_threads(n);
    synced_threads = n;
  }
}

int explicit_thread_count() { return explicit_threads().load(); }
void use_default_threads_for_testing() { explicit_threads().store(0); }
void set_busy_elsewhere_for_testing(double busy_elsewhere) { probe().forced.store(busy_elsewhere); }
std::int64_t parallel_regions_opened() { return regions.load(); }
void count_parallel_region() { regions.fetch_add(1, std::memory_order_relaxed); }
int last_parallel_team() { return last_team.load(); }
void note_parallel_team(int team) { last_team.store(team, std::memory_order_relaxed); }

}  // namespace detail
}  // namespace ef
