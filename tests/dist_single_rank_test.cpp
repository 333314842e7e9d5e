// ef::dist in the ordinary test binary, one process: a world of one (MPI's singleton start,
// no mpirun) where every collective is the identity and a data-parallel fit is the plain fit;
// or, in a build without MPI, a clear error from every call. The two-rank tests run under
// mpirun from tests/dist (ef_dist_tests).
#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>

#include "test_util.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define EF_UNDER_SANITIZER 1
#endif

namespace ef {
namespace {

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
