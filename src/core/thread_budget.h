#pragma once
// How many threads a piece of parallel work gets: the machinery behind ef::set_num_threads.
#include <cstdint>

namespace ef::detail {

// Threads for large parallel work now: an explicit budget (OMP_NUM_THREADS, set_num_threads)
// exactly; by default, the cores of this process that other processes leave free (measured
// from /proc/stat about every 0.1 s, while parallel work runs), at least 1 and at most the budget.
int parallel_threads();

// The default's rule: `cpus` cores of which `busy_elsewhere` (a mean over the last interval)
// are used by other processes; the ones at least 60% free, at least 1, at most budget.
int threads_for_load(int budget, int cpus, double busy_elsewhere);

// The "some" line's total (microseconds some task waited for a CPU) of a /proc/pressure/cpu
// text; false if it has none.
bool cpu_pressure_total_us(const char* text, std::uint64_t& total_us);

// The cores this process may run on (its affinity mask).
int usable_cpus();

// Keeps the calling thread's parallel work on the thread itself (parallel_threads() returns 1
// there): the input pipeline's workers (src/data/dataset_threads.cpp) run their ops alone, so
// that a second OpenMP team does not fight the train step's for the cores.
void set_single_threaded_here(bool on);

// Sets the calling thread's OpenMP team size, which oneDNN reads when it creates and runs a
// primitive (cheap when it already matches).
void sync_omp_threads(int n);

// The explicit count (OMP_NUM_THREADS, set_num_threads); 0 in the default mode.
int explicit_thread_count();

// For tests: the default mode whatever OMP_NUM_THREADS says, and a load to assume instead of
// measuring (negative: measure again).
void use_default_threads_for_testing();
void set_busy_elsewhere_for_testing(double busy_elsewhere);
// Parallel regions opened by parallel_for since the program started, and the team size of the
// last one (what tests can observe of a kernel's threading).
std::int64_t parallel_regions_opened();
int last_parallel_team();
void count_parallel_region();
void note_parallel_team(int team);

}  // namespace ef::detail
