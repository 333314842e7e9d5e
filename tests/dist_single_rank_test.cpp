// ef::dist in the ordinary test binary, one process: a world of one (MPI's singleton start,
// no mpirun) where every collective is the identity and a data-parallel fit is the plain fit;
// or, in a build without MPI, a clear error from every call. Open MPI is loaded at run time
// (src/distributed/mpi_loader.cpp): on a machine without it (EF_MPI_LIBRARY pointing at a missing
// library, in a child process: the loader's state is the process's) ef::dist says what to
// install and everything else works. The two-rank tests run under mpirun from tests/distributed
// (ef_dist_tests).
#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "test_util.h"

extern char** environ;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define EF_UNDER_SANITIZER 1
#endif

namespace ef {
namespace {

// Whether a library whose path contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

struct Child {
  int status = -1;  // waitpid's
  std::string output;  // stdout and stderr
};

// This test program again, running only the current test, with EF_DIST_TEST_CHILD=role and
// `extra` ("NAME=value") added to the environment (GTEST_* left out: no sharding, no XML
// report of the child's over the parent's).
Child run_this_test_in_a_child(const std::string& role, const std::vector<std::string>& extra) {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::vector<std::string> args = {"/proc/self/exe", std::string("--gtest_filter=") + test->test_suite_name() + "." + test->name()};
  std::vector<std::string> env = extra;
  env.push_back("EF_DIST_TEST_CHILD=" + role);
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "GTEST_", 6) != 0 && std::strncmp(*e, "EF_DIST_TEST_CHILD=", 19) != 0 &&
        std::strncmp(*e, "EF_MPI_LIBRARY=", 15) != 0)
      env.emplace_back(*e);
  auto pointers = [](std::vector<std::string>& v) {
    std::vector<char*> p;
    for (auto& s : v) p.push_back(s.data());
    p.push_back(nullptr);
    return p;
  };
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  int out[2];
  EXPECT_EQ(::pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  Child child;
  EXPECT_EQ(rc, 0) << std::strerror(rc);
  char buffer[4096];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) child.output.append(buffer, static_cast<std::size_t>(n));
  ::close(out[0]);
  if (rc == 0) ::waitpid(pid, &child.status, 0);
  return child;
}

void expect_child_passed(const Child& child) {
  EXPECT_TRUE(WIFEXITED(child.status) && WEXITSTATUS(child.status) == 0) << child.output;
  EXPECT_NE(child.output.find("[  PASSED  ] 1 test"), std::string::npos) << child.output;
}

const char* child_role() {
  const char* role = std::getenv("EF_DIST_TEST_CHILD");
  return role ? role : "";
}

TEST(DistSingleRank, WithoutMpiEveryCallSaysSo) {
  if (dist::available()) GTEST_SKIP() << "this build has MPI (EF_WITH_MPI=ON)";
  EXPECT_FALSE(dist::is_initialized());
  EXPECT_TRUE(dist::is_file_writer());
  Tensor x = testing::randn({2}, 1);
  testing::expect_error([] { dist::init(); }, {"[dist]", "this build has no MPI"});
  testing::expect_error([] { dist::rank(); }, {"this build has no MPI"});
  testing::expect_error([&] { dist::all_reduce(x); }, {"this build has no MPI"});
  testing::expect_error([&] { dist::broadcast(x); }, {"this build has no MPI"});
  testing::expect_error([&] { dist::all_gather(x); }, {"this build has no MPI"});
  testing::expect_error([&] { dist::reduce_scatter(x); }, {"this build has no MPI"});
  testing::expect_error([] { dist::barrier(); }, {"this build has no MPI"});
  testing::expect_error([] { dist::DataParallel dp; }, {"this build has no MPI"});
}

// A machine without Open MPI: the library is absent (a name that does not exist), the binary
// still starts (nothing links libmpi), everything but ef::dist works, and every ef::dist call
// says which library is missing and what to install.
TEST(DistSingleRank, WithoutOpenMpiInstalledDistSaysWhatToInstall) {
  if (!dist::available()) GTEST_SKIP() << "this build has no MPI";
  if (std::strcmp(child_role(), "missing") != 0) {
    expect_child_passed(run_this_test_in_a_child("missing", {"EF_MPI_LIBRARY=libdoesnotexist.so.0"}));
    return;
  }
  EXPECT_TRUE(dist::available());  // built with MPI: it is the machine that lacks it
  EXPECT_FALSE(dist::is_initialized());
  EXPECT_TRUE(dist::is_file_writer());
  Tensor x = testing::randn({2, 3}, 1);
  testing::expect_tensor_near(sum(x * 2.0, {1}), 2.0 * sum(x, {1}), 1e-12);
  auto dir = testing::fresh_temp_dir("dist_without_mpi");
  auto model = std::make_shared<train::Sequential>();
  model->add<nn::Dense>(2);
  model->build(Shape{kDynamic, 3});
  model->save_weights((dir / "w.safetensors").string());  // asks dist::is_file_writer()
  EXPECT_TRUE(std::filesystem::exists(dir / "w.safetensors"));
  std::filesystem::remove_all(dir);
  for (int attempt = 0; attempt < 2; ++attempt)  // the failure is remembered, with its message
    testing::expect_error([] { dist::init(); },
                          {"[dist]", "Open MPI's library libdoesnotexist.so.0", "EF_MPI_LIBRARY", "is not installed",
                           "install Open MPI", "apt-get install openmpi-bin", "everything else in eagerflow works without it",
                           "dlopen: libdoesnotexist.so.0: cannot open shared object file"});
  testing::expect_error([] { dist::rank(); }, {"libdoesnotexist.so.0", "install Open MPI"});
  testing::expect_error([&] { dist::all_reduce(x); }, {"libdoesnotexist.so.0", "install Open MPI"});
  testing::expect_error([] { dist::barrier(); }, {"libdoesnotexist.so.0"});
  testing::expect_error([] { dist::DataParallel dp; }, {"libdoesnotexist.so.0", "install Open MPI"});
  EXPECT_FALSE(dist::is_initialized());
  EXPECT_FALSE(mapped("libmpi")) << "nothing links Open MPI's library";
}

// Open MPI is loaded by the first ef::dist call that needs it, not at start-up: a program that
// only asks whether MPI runs (saving does) never loads it.
TEST(DistSingleRank, OpenMpiIsLoadedOnFirstUse) {
  if (!dist::available()) GTEST_SKIP() << "this build has no MPI";
  if (std::strcmp(child_role(), "first_use") != 0) {
    expect_child_passed(run_this_test_in_a_child("first_use", {}));
    return;
  }
  EXPECT_FALSE(mapped("libmpi.so")) << "loaded at start-up";
  EXPECT_FALSE(dist::is_initialized());
  EXPECT_TRUE(dist::is_file_writer());
  EXPECT_FALSE(mapped("libmpi.so")) << "loaded to ask whether MPI runs";
#ifndef EF_UNDER_SANITIZER
  dist::init();
  EXPECT_TRUE(mapped("libmpi.so.40"));
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_EQ(dist::world_size(), 1);
#endif
}

TEST(DistSingleRank, AloneIsAWorldOfOne) {
  if (!dist::available()) GTEST_SKIP() << "this build has no MPI";
#ifdef EF_UNDER_SANITIZER
  // Open MPI is not built with the sanitizers: its progress threads and shared-memory segments
  // make ThreadSanitizer report races inside libmpi, and its memory hooks fight ASan's.
  GTEST_SKIP() << "MPI under sanitizers tests MPI, not eagerflow (run in the release preset)";
#endif
  dist::init();
  EXPECT_EQ(dist::world_size(), 1);
  EXPECT_EQ(dist::rank(), 0);
  EXPECT_TRUE(dist::is_file_writer());
  Tensor x = testing::randn({2, 3}, 1);
  for (auto op : {dist::ReduceOp::sum, dist::ReduceOp::mean, dist::ReduceOp::max, dist::ReduceOp::min})
    testing::expect_tensor_near(dist::all_reduce(x, op), x, 0);
  testing::expect_tensor_near(dist::broadcast(x), x, 0);
  testing::expect_tensor_near(dist::all_gather(x, 1), x, 0);
  testing::expect_tensor_near(dist::reduce_scatter(x, 0), x, 0);
  testing::expect_tensor_near(dist::all_gather_rows(x), x, 0);
  testing::expect_error([&] { dist::broadcast(x, 1); }, {"broadcast", "root 1"});
  // Traced, with its gradient.
  auto f = function([](const Tensor& t) {
    GradientTape tape;
    tape.watch(t);
    return tape.gradient(sum(dist::all_reduce(t * t)), t);
  });
  testing::expect_tensor_near(f(x), 2.0 * x, 1e-12);
  // A data-parallel fit of one rank is the plain fit.
  auto mlp = [] {
    random::set_seed(3);
    auto m = std::make_shared<train::Sequential>();
    m->add<nn::Dense>(8, nn::ActivationFn("relu"));
    m->add<nn::Dense>(1);
    m->build(Shape{kDynamic, 4});
    m->compile(std::make_shared<optim::SGD>(0.05), train::LossRef("mse"));
    return m;
  };
  Tensor xs = random::stateless_normal({100, 4}, 1, 0.0, 1.0, DType::float32);
  Tensor ys = sum(xs, {1}, true);
  train::FitOptions o;
  o.batch_size = 16;
  o.epochs = 2;
  o.verbose = 0;
  auto plain = mlp();
  auto h1 = plain->fit(xs, ys, o);
  auto parallel = mlp();  // after the plain fit: set_seed again, so both shuffle alike
  parallel->set_distribution(std::make_shared<dist::DataParallel>());
  auto h2 = parallel->fit(xs, ys, o);
  for (std::size_t i = 0; i < plain->weights().size(); ++i)
    testing::expect_tensor_near(parallel->weights()[i].value(), plain->weights()[i].value(), 1e-6);
  EXPECT_NEAR(h2.history["loss"].back(), h1.history["loss"].back(), 1e-6);
}

}  // namespace
}  // namespace ef
