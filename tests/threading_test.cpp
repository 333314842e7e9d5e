// The thread budget: an explicit count is used exactly; the default leaves to other processes
// the cores they use; small work never opens a parallel region. No timings here: those are in
// bench/busy_machine.sh.
#include <gtest/gtest.h>
#include <omp.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_budget.h"
#include "eagerflow/eagerflow.h"
#include "kernels/cpu/gemm_chain.h"
#include "kernels/cpu/parallel.h"  // work_of; its loops need -fopenmp, so tests run real ops

extern char** environ;

namespace {

// Restores the budget and the measured load whatever a test did.
struct BudgetGuard {
  int explicit_count = ef::detail::explicit_thread_count();
  ~BudgetGuard() {
    ef::detail::set_busy_elsewhere_for_testing(-1);
    if (explicit_count > 0) ef::set_num_threads(explicit_count);
    else ef::detail::use_default_threads_for_testing();
  }
};

// The team a large elementwise op ran with, observed in its kernel: 1 when no region opened.
int team_of_large_loop() {
  static const ef::Tensor x = ef::random::uniform({1 << 20});
  std::int64_t before = ef::detail::parallel_regions_opened();
  ef::Tensor y = ef::exp(x);
  return ef::detail::parallel_regions_opened() == before ? 1 : ef::detail::last_parallel_team();
}

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

TEST(Threading, LoadRuleLeavesBusyCoresToOthers) {
  using ef::detail::threads_for_load;
  EXPECT_EQ(threads_for_load(2, 2, 0.0), 2);
  EXPECT_EQ(threads_for_load(2, 2, 0.3), 2);   // background noise
  EXPECT_EQ(threads_for_load(2, 2, 0.5), 1);   // a process busy half the time on one of our cores
  EXPECT_EQ(threads_for_load(2, 2, 0.67), 1);  // a busy process sharing our two cores with us
  EXPECT_EQ(threads_for_load(2, 2, 1.0), 1);
  EXPECT_EQ(threads_for_load(2, 2, 5.0), 1);   // never fewer than one
  EXPECT_EQ(threads_for_load(16, 8, 0.0), 8);  // never more than the cores we may use
  EXPECT_EQ(threads_for_load(4, 16, 0.0), 4);  // nor more than the budget
  EXPECT_EQ(threads_for_load(16, 16, 6.2), 10);
  EXPECT_EQ(threads_for_load(8, 8, -1.0), 8);
}

TEST(Threading, CpuPressureTotalIsReadFromTheSomeLine) {
  using ef::detail::cpu_pressure_total_us;
  std::uint64_t us = 7;
  EXPECT_TRUE(cpu_pressure_total_us("some avg10=1.34 avg60=10.70 avg300=8.50 total=1498313758\n"
                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                                    us));
  EXPECT_EQ(us, 1498313758u);
  EXPECT_FALSE(cpu_pressure_total_us("full avg10=0.00 total=12\n", us));  // no "some" line
  EXPECT_FALSE(cpu_pressure_total_us("some avg10=0.00\nfull total=12\n", us));  // not the some line's
  EXPECT_FALSE(cpu_pressure_total_us("some total=\n", us));
  EXPECT_FALSE(cpu_pressure_total_us("", us));
}

TEST(Threading, ExplicitCountIsUsedExactlyWhateverTheLoad) {
  BudgetGuard guard;
  ef::detail::set_busy_elsewhere_for_testing(1000.0);
  ef::set_num_threads(2);
  EXPECT_EQ(ef::num_threads(), 2);
  EXPECT_EQ(ef::detail::parallel_threads(), 2);
  EXPECT_EQ(team_of_large_loop(), 2);
  ef::set_num_threads(1);
  EXPECT_EQ(team_of_large_loop(), 1);
}

TEST(Threading, DefaultLeavesBusyCoresToOtherProcesses) {
  BudgetGuard guard;
  ef::detail::use_default_threads_for_testing();
  int cpus = ef::detail::usable_cpus();
  EXPECT_EQ(ef::num_threads(), hardware_threads());

  ef::detail::set_busy_elsewhere_for_testing(0.0);
  int quiet = std::min(hardware_threads(), cpus);
  EXPECT_EQ(ef::detail::parallel_threads(), quiet);
  EXPECT_EQ(team_of_large_loop(), quiet);

  // Every core busy elsewhere: one thread, and no region at all.
  ef::detail::set_busy_elsewhere_for_testing(static_cast<double>(cpus));
  EXPECT_EQ(ef::detail::parallel_threads(), 1);
  std::int64_t before = ef::detail::parallel_regions_opened();
  EXPECT_EQ(team_of_large_loop(), 1);
  EXPECT_EQ(ef::detail::parallel_regions_opened(), before);
}

TEST(Threading, DefaultMeasuresWithoutFailing) {
  BudgetGuard guard;
  ef::detail::use_default_threads_for_testing();
  for (int i = 0; i < 3; ++i) {
    int n = ef::detail::parallel_threads();
    EXPECT_GE(n, 1);
    EXPECT_LE(n, hardware_threads());
  }
}

TEST(Threading, SmallWorkStaysOnTheCallingThread) {
  BudgetGuard guard;
  ef::set_num_threads(4);
  ef::Tensor x = ef::random::uniform({64, 64});
  std::int64_t before = ef::detail::parallel_regions_opened();
  // Elementwise ops and reductions on a batch of 64 rows of 64.
  ef::Tensor y = ef::sum(ef::exp(x * x + 1.0f), {1});
  EXPECT_EQ(y.shape(), ef::Shape({64}));
  EXPECT_EQ(ef::detail::parallel_regions_opened(), before);
  EXPECT_GT(ef::cpu::work_of({1 << 30, 1 << 30, 1 << 30}), std::int64_t{1} << 62);  // saturates
  EXPECT_EQ(ef::cpu::work_of({1 << 20, 0, 7}), 0);
}

// On AVX2 the blocked GEMM (gemm_chain.cpp) opens a region of its own for a large product;
// elsewhere oneDNN takes its team size from the calling thread's OpenMP setting.
TEST(Threading, SmallMatmulRunsOnOneThreadLargeOnTheBudget) {
  BudgetGuard guard;
  ef::set_num_threads(2);
  const bool ours = ef::cpu::gemm_chain_applicable();
  ef::Tensor a = ef::random::uniform({64, 64}), b = ef::random::uniform({64, 64});
  std::int64_t regions = ef::detail::parallel_regions_opened();
  ef::Tensor small = ef::matmul(a, b);
  EXPECT_EQ(small.shape(), ef::Shape({64, 64}));
  EXPECT_EQ(ef::detail::parallel_regions_opened(), regions);
  if (!ours) {
    EXPECT_EQ(omp_get_max_threads(), 1);
  }
  ef::Tensor c = ef::random::uniform({256, 256}), d = ef::random::uniform({256, 256});
  ef::Tensor big = ef::matmul(c, d);
  if (ours) {
    EXPECT_GT(ef::detail::parallel_regions_opened(), regions);
  } else {
    EXPECT_EQ(omp_get_max_threads(), 2);
  }
  // Same numbers whatever the team (the threads split rows and columns, never K).
  ef::set_num_threads(1);
  ef::Tensor one = ef::matmul(c, d);
  if (!ours) {
    EXPECT_EQ(omp_get_max_threads(), 1);
  }
  if (ours) {
    EXPECT_EQ(big.to_vector<float>(), one.to_vector<float>());
  }
  EXPECT_LE(ef::max(ef::abs(big - one)).item<float>(), 1e-3f);
}

// A small Keras fit, as a new user writes it: every op is below the grain, so no region opens
// even when the budget has threads to spare.
TEST(Threading, SmallFitOpensNoParallelRegion) {
  BudgetGuard guard;
  ef::detail::use_default_threads_for_testing();
  ef::detail::set_busy_elsewhere_for_testing(0.0);
  ef::random::set_seed(5);
  ef::Tensor x = ef::random::uniform({2000, 2}, -1.0, 1.0);
  ef::Tensor y = ef::sum(x * x, {1}, true);
  ef::train::Sequential model;
  model.add<ef::nn::Dense>(64, "relu");
  model.add<ef::nn::Dense>(64, "relu");
  model.add<ef::nn::Dense>(1);
  model.compile(std::make_shared<ef::optim::Adam>(1e-3), "mse");
  std::int64_t before = ef::detail::parallel_regions_opened();
  model.fit(x, y, {.batch_size = 64, .epochs = 1, .verbose = 0});
  EXPECT_EQ(ef::detail::parallel_regions_opened(), before);
}

// OMP_NUM_THREADS is read when the program starts, so a child process checks it.
TEST(Threading, OmpNumThreadsIsExplicit) {
  if (std::getenv("EF_THREADING_CHILD")) {
    ef::detail::set_busy_elsewhere_for_testing(1000.0);
    EXPECT_EQ(ef::num_threads(), 3);
    EXPECT_EQ(ef::detail::parallel_threads(), 3);
    EXPECT_EQ(team_of_large_loop(), 3);
    return;
  }
  std::vector<std::string> env_strings = {"EF_THREADING_CHILD=1", "OMP_NUM_THREADS=3"};
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    if (s.rfind("OMP_NUM_THREADS=", 0) != 0 && s.rfind("EF_THREADING_CHILD=", 0) != 0) env_strings.push_back(s);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=Threading.OmpNumThreadsIsExplicit";
  char* argv[] = {exe.data(), filter.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child with OMP_NUM_THREADS=3 failed";
}

}  // namespace

// The default's thread count moves with the machine's load, so a replay may run with another
// team than the eager call it must equal: every kernel's bits must not depend on the team.
TEST(Threading, ResultsDoNotDependOnTheThreadCount) {
  BudgetGuard guard;
  ef::Tensor x = ef::random::stateless_normal({1024, 512}, 5);
  ef::Tensor w = ef::random::stateless_normal({512, 256}, 6);
  ef::Tensor dy = ef::random::stateless_normal({1024, 256}, 7);
  ef::Tensor img = ef::random::stateless_normal({16, 32, 32, 8}, 8);
  ef::Tensor k = ef::random::stateless_normal({3, 3, 8, 16}, 9);
  auto run = [&](int threads) {
    ef::set_num_threads(threads);
    std::vector<std::vector<float>> out;
    for (const ef::Tensor& t :
         {ef::matmul(x, w), ef::matmul(x, dy, /*transpose_a=*/true, false), ef::matmul(dy, w, false, /*transpose_b=*/true),
          ef::sum(x), ef::sum(x, {0}), ef::sum(x, {1}), ef::mean(x, {0}), ef::max(x, {0}), ef::softmax(x, -1),
          ef::log_softmax(x, -1), ef::tanh(x), ef::gelu(x), ef::conv2d(img, k, {1, 1}, "same"),
          ef::max_pool2d(img, {2, 2})})
      out.push_back(t.to_vector<float>());
    return out;
  };
  auto one = run(1), two = run(2), four = run(4);
  for (std::size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i], two[i]) << "result " << i << " differs between 1 and 2 threads";
    EXPECT_EQ(one[i], four[i]) << "result " << i << " differs between 1 and 4 threads";
  }
}
