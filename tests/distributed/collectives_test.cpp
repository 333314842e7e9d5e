// The collectives under `mpirun -np 2` (any world size works; also alone, as a world of 1).
// Each rank's input is a stateless draw seeded by its rank, so every rank can compute what
// the collective must give from all ranks' inputs, and compare.
#include <eagerflow/dist/dist.h>

#include "../test_util.h"
#include "distributed/collectives.h"
#include "dist_table.h"

namespace ef {
namespace {

using dist::ReduceOp;
using testing::randn;

int W() { return dist::world_size(); }
int R() { return dist::rank(); }

// Rank r's input of shape s for a test seeded `seed`.
Tensor input_of(int r, const Shape& s, std::uint64_t seed, DType dtype = DType::float64) {
  return randn(s, seed * 1000 + static_cast<std::uint64_t>(r), dtype);
}

std::vector<Tensor> every_rank(const Shape& s, std::uint64_t seed, DType dtype = DType::float64) {
  std::vector<Tensor> xs;
  for (int r = 0; r < W(); ++r) xs.push_back(input_of(r, s, seed, dtype));
  return xs;
}

TEST(Dist, WorldAndRank) {
  EXPECT_TRUE(dist::available());
  dist::init();
  EXPECT_TRUE(dist::is_initialized());
  EXPECT_GE(W(), 1);
  EXPECT_GE(R(), 0);
  EXPECT_LT(R(), W());
  dist::init();  // again: nothing happens
  EXPECT_EQ(dist::all_reduce(tensor(std::vector<std::int64_t>{1})).to_vector<std::int64_t>()[0], W());
  dist::barrier();
}

TEST(Dist, AllReduceEveryOp) {
  std::vector<Tensor> xs = every_rank({3, 4}, 1);
  Tensor sum = xs[0], mx = xs[0], mn = xs[0];
  for (int r = 1; r < W(); ++r) {
    sum = sum + xs[static_cast<std::size_t>(r)];
    mx = maximum(mx, xs[static_cast<std::size_t>(r)]);
    mn = minimum(mn, xs[static_cast<std::size_t>(r)]);
  }
  Tensor x = xs[static_cast<std::size_t>(R())];
  testing::expect_tensor_near(dist::all_reduce(x, ReduceOp::sum), sum, 1e-12);
  testing::expect_tensor_near(dist::all_reduce(x, ReduceOp::mean), sum / static_cast<double>(W()), 1e-12);
  testing::expect_tensor_near(dist::all_reduce(x, ReduceOp::max), mx, 0);
  testing::expect_tensor_near(dist::all_reduce(x, ReduceOp::min), mn, 0);
  // Integers and float32 too.
  Tensor i = tensor(std::vector<std::int64_t>{R() + 1, 10 * (R() + 1)});
  std::int64_t tri = static_cast<std::int64_t>(W()) * (W() + 1) / 2;
  EXPECT_EQ(dist::all_reduce(i).to_vector<std::int64_t>(), (std::vector<std::int64_t>{tri, 10 * tri}));
  Tensor f = cast(x, DType::float32);
  EXPECT_EQ(dist::all_reduce(f, ReduceOp::max).dtype(), DType::float32);
}

TEST(Dist, BroadcastFromEveryRoot) {
  for (int root = 0; root < W(); ++root) {
    std::vector<Tensor> xs = every_rank({2, 5}, 2);
    testing::expect_tensor_near(dist::broadcast(xs[static_cast<std::size_t>(R())], root), xs[static_cast<std::size_t>(root)], 0);
  }
  // Any dtype moves (bytes).
  Tensor b = tensor(std::vector<float>{R() == 0 ? 1.0f : 0.0f}) > 0.5f;
  EXPECT_TRUE(dist::broadcast(b, 0).to_vector<bool>()[0]);
}

TEST(Dist, AllGatherAndReduceScatterAlongEachAxis) {
  for (int axis : {0, 1, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    std::vector<Tensor> xs = every_rank({2, 3, 2}, 3);
    testing::expect_tensor_near(dist::all_gather(xs[static_cast<std::size_t>(R())], axis), concat(xs, axis < 0 ? 2 : axis), 0);
    // reduce_scatter: the sum over ranks, block R along the axis.
    Shape s = axis == 0 ? Shape{2 * W(), 3} : Shape{3, 2 * W()};
    std::vector<Tensor> ys = every_rank(s, 4);
    Tensor total = ys[0];
    for (int r = 1; r < W(); ++r) total = total + ys[static_cast<std::size_t>(r)];
    int a = axis < 0 ? 1 : axis;
    if (a > 1) continue;
    std::vector<std::int64_t> begin{0, 0}, end = total.shape().dims();
    begin[static_cast<std::size_t>(a)] = 2 * R();
    end[static_cast<std::size_t>(a)] = 2 * R() + 2;
    testing::expect_tensor_near(dist::reduce_scatter(ys[static_cast<std::size_t>(R())], a), slice(total, begin, end), 1e-12);
  }
}

TEST(Dist, AllGatherRowsTakesDifferentCounts) {
  // Rank r has r + 1 rows.
  std::vector<Tensor> xs;
  for (int r = 0; r < W(); ++r) xs.push_back(input_of(r, Shape{r + 1, 3}, 5));
  Tensor got = dist::all_gather_rows(xs[static_cast<std::size_t>(R())]);
  testing::expect_tensor_near(got, concat(xs, 0), 0);
  // Traced with a dynamic batch: one trace, the right rows every time.
  FunctionOptions o;
  o.input_signature = InputSignature{ArgSpec(std::vector<TensorSpec>{{DType::float64, Shape{kDynamic, 3}, {}}})};
  auto f = function([](const std::vector<Tensor>& x) { return std::vector<Tensor>{dist::all_gather_rows(x[0])}; }, o);
  testing::expect_tensor_near(f(std::vector<Tensor>{xs[static_cast<std::size_t>(R())]})[0], concat(xs, 0), 0);
  // A rank without rows.
  Tensor none = R() == 0 ? Tensor::empty(DType::float64, Shape{0, 3}) : xs[static_cast<std::size_t>(R())];
  std::vector<Tensor> parts;
  for (int r = 1; r < W(); ++r) parts.push_back(xs[static_cast<std::size_t>(r)]);
  Tensor want = parts.empty() ? Tensor::empty(DType::float64, Shape{0, 3}) : concat(parts, 0);
  EXPECT_EQ(dist::all_gather_rows(none).shape(), want.shape());
}

TEST(Dist, DisagreementIsAnErrorOnEveryRank) {
  // Shapes: rank 0 [2,3], the others [3].
  Tensor x = R() == 0 ? randn({2, 3}, 1) : randn({3}, 1);
  if (W() > 1) {
    testing::expect_error([&] { dist::all_reduce(x); }, {"all_reduce", "rank 0 has", "float64[2,3]", "rank 1 has", "float64[3]"});
    // Dtypes.
    Tensor y = R() == 0 ? randn({2}, 1, DType::float32) : randn({2}, 1, DType::float64);
    testing::expect_error([&] { dist::all_gather(y); }, {"all_gather", "float32[2]", "float64[2]"});
    // Different collectives.
    testing::expect_error([&] { R() == 0 ? dist::all_reduce(randn({2}, 1)) : dist::broadcast(randn({2}, 1), 0); },
                          {"rank 0 has all_reduce(sum)", "rank 1 has broadcast(root=0)"});
    // Different roots.
    testing::expect_error([&] { dist::broadcast(randn({2}, 1), R() == 0 ? 0 : 1); }, {"broadcast", "root="});
  }
  // Wrong on every rank alike: a root outside the world, mean of integers, a bad axis.
  testing::expect_error([&] { dist::broadcast(randn({2}, 1), W()); }, {"broadcast", "root"});
  testing::expect_error([&] { dist::all_reduce(tensor(std::vector<std::int64_t>{1}), ReduceOp::mean); }, {"all_reduce", "float"});
  testing::expect_error([&] { dist::all_gather(randn({2}, 1), 3); }, {"all_gather", "axis 3"});
  testing::expect_error([&] { dist::reduce_scatter(randn({2 * W() + 1}, 1)); }, {"reduce_scatter", "split"});
  testing::expect_error([&] { dist::all_reduce(Tensor()); }, {"all_reduce", "undefined"});
  testing::expect_error([&] { dist::all_reduce(randn({2}, 1) > 0.0); }, {"all_reduce", "bool"});
  // Nothing is left half-done: the next collective works.
  EXPECT_EQ(dist::all_reduce(tensor(std::vector<std::int64_t>{1})).to_vector<std::int64_t>()[0], W());
}

TEST(Dist, BucketAllReduceIsTheCountWeightedMean) {
  // Rank r: gradients g_r with count r (rank 0 has no examples: its NaN gradients add nothing).
  Tensor count = scalar<double>(static_cast<double>(R()));
  Tensor a = R() == 0 ? full({2, 3}, std::nan(""), DType::float32) : cast(input_of(R(), {2, 3}, 10), DType::float32);
  Tensor b = R() == 0 ? full({4}, std::nan(""), DType::float32) : cast(input_of(R(), {4}, 11), DType::float32);
  std::vector<Tensor> got = dispatch(dist::BucketAllReduce(), std::vector<Tensor>{a, b, count});
  if (W() == 1) {  // no examples anywhere: 0 / 0
    EXPECT_TRUE(std::isnan(got[0].to_vector<float>()[0]));
    return;
  }
  Tensor wa = zeros_like(a), wb = zeros_like(b);
  double n = 0;
  for (int r = 1; r < W(); ++r) {
    wa = wa + cast(input_of(r, {2, 3}, 10), DType::float32) * static_cast<float>(r);
    wb = wb + cast(input_of(r, {4}, 11), DType::float32) * static_cast<float>(r);
    n += r;
  }
  testing::expect_tensor_near(got[0], wa / static_cast<float>(n), 1e-6);
  testing::expect_tensor_near(got[1], wb / static_cast<float>(n), 1e-6);
  // Disagreeing buckets are an error on every rank.
  std::vector<Tensor> odd = R() == 0 ? std::vector<Tensor>{a, count} : std::vector<Tensor>{a, b, count};
  testing::expect_error([&] { dispatch(dist::BucketAllReduce(), odd); }, {"bucket_all_reduce", "rank 0 has", "rank 1 has"});
}

TEST(Dist, SharedMemoryAndMpiAllreduceGiveTheSameBits) {
  // Every rank on this machine: reductions go through the shared window unless switched off;
  // both transports sum in rank order for 2 ranks, so they agree to the bit. 1.1M floats take
  // two of the window's 4 MiB chunks.
  const bool shm = dist::shared_memory();
  EXPECT_EQ(shm, W() > 1);  // the tests run on one machine
  for (std::int64_t n : {std::int64_t{5}, std::int64_t{1100000}})
    for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64})
      for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min, ReduceOp::mean}) {
        if (op == ReduceOp::mean && !is_floating(dtype)) continue;
        if (n > 5 && !((dtype == DType::float32 && op == ReduceOp::sum) || (dtype == DType::float64 && op == ReduceOp::max)))
          continue;  // the chunked sizes for two cases only: the test stays short
        SCOPED_TRACE(std::string(name_of(dtype)) + " n=" + std::to_string(n) + " op=" + std::to_string(static_cast<int>(op)));
        Tensor x = cast(input_of(R(), {n}, 40) * 1000.0, dtype);
        dist::use_shared_memory(true);
        Tensor a = dist::all_reduce(x, op);
        EXPECT_EQ(dist::shared_memory(), W() > 1);
        dist::use_shared_memory(false);
        EXPECT_FALSE(dist::shared_memory());
        Tensor b = dist::all_reduce(x, op);
        dist::use_shared_memory(shm);
        testing::expect_tensor_near(a, b, 0);
        // And what they must give: rank 0's input op rank 1's ..., in rank order.
        if (n == 5) {
          std::vector<Tensor> xs;
          for (int r = 0; r < W(); ++r) xs.push_back(cast(input_of(r, {n}, 40) * 1000.0, dtype));
          Tensor want = xs[0];
          for (int r = 1; r < W(); ++r)
            want = op == ReduceOp::max ? maximum(want, xs[static_cast<std::size_t>(r)])
                 : op == ReduceOp::min ? minimum(want, xs[static_cast<std::size_t>(r)])
                                       : want + xs[static_cast<std::size_t>(r)];
          if (op == ReduceOp::mean) want = want / scalar_like(want, static_cast<double>(W()));
          testing::expect_tensor_near(a, want, dtype == DType::float32 ? 1e-3 : 1e-9);
        }
      }
  // The gradient bucket too, over more than one chunk.
  Tensor g1 = cast(input_of(R(), {1000, 1100}, 41), DType::float32), g2 = cast(input_of(R(), {7}, 42), DType::float32);
  Tensor count = scalar<double>(static_cast<double>(R() + 1));
  dist::use_shared_memory(true);
  std::vector<Tensor> a = dispatch(dist::BucketAllReduce(), std::vector<Tensor>{g1, g2, count});
  dist::use_shared_memory(false);
  std::vector<Tensor> b = dispatch(dist::BucketAllReduce(), std::vector<Tensor>{g1, g2, count});
  dist::use_shared_memory(shm);
  testing::expect_tensor_near(a[0], b[0], 0);
  testing::expect_tensor_near(a[1], b[1], 0);
  Tensor want = zeros_like(g2);
  double n = 0;
  for (int r = 0; r < W(); ++r) {
    want = want + cast(input_of(r, {7}, 42), DType::float32) * static_cast<float>(r + 1);
    n += r + 1;
  }
  testing::expect_tensor_near(a[1], want / static_cast<float>(n), 1e-6);
}

TEST(Dist, EmptyAndScalarTensors) {
  // Nothing to move is still a collective every rank takes part in.
  Tensor empty = Tensor::empty(DType::float32, Shape{0, 3});
  EXPECT_EQ(dist::all_reduce(empty).shape(), empty.shape());
  EXPECT_EQ(dist::broadcast(empty).shape(), empty.shape());
  EXPECT_EQ(dist::all_gather(empty, 1).shape(), (Shape{0, 3 * W()}));
  EXPECT_EQ(dist::reduce_scatter(Tensor::empty(DType::float32, Shape{W(), 0}), 0).shape(), (Shape{1, 0}));
  EXPECT_EQ(dist::all_gather_rows(empty).shape(), (Shape{0, 3}));
  // Scalars reduce and broadcast; they have no axis to gather along.
  Tensor s = scalar<double>(R() + 1.0);
  EXPECT_EQ(dist::all_reduce(s).item<double>(), W() * (W() + 1) / 2.0);
  EXPECT_EQ(dist::broadcast(s, 0).item<double>(), 1.0);
  testing::expect_error([&] { dist::all_gather(s); }, {"all_gather", "axis"});
  testing::expect_error([&] { dist::all_gather_rows(s); }, {"all_gather_rows", "rows"});
  testing::expect_error([&] { dist::reduce_scatter(s); }, {"reduce_scatter", "axis"});
  EXPECT_EQ(dist::all_reduce(tensor(std::vector<std::int64_t>{1})).to_vector<std::int64_t>()[0], W());
}

TEST(Dist, SavedGraphsKeepTheirCollectives) {
  auto f = function([](const Tensor& x) {
    dist::barrier();
    Tensor m = dist::all_reduce(x, ReduceOp::mean);
    return sum(dist::all_gather(dist::broadcast(m * x, W() - 1), 1)) + dist::reduce_scatter(concat(std::vector<Tensor>(static_cast<std::size_t>(W()), x), 0), 0);
  });
  Tensor x = input_of(R(), {2, 3}, 12);
  auto cf = f.get_concrete_function(x);
  std::filesystem::path dir = testing::fresh_temp_dir("dist_saved_rank" + std::to_string(R()));
  save({{"f", cf}}, dir.string());
  SavedModel loaded = load(dir.string());
  testing::expect_tensor_near(loaded("f", {x})[0], f(x), 0);
  std::filesystem::remove_all(dir);
}

TEST(Dist, TracedCollectivesAreOrderedEffects) {
  // Two identical all-reduces are not merged, and one whose result is unused is not dropped.
  auto f = function([](const Tensor& x) {
    Tensor a = dist::all_reduce(x);
    Tensor b = dist::all_reduce(x);
    dist::all_reduce(x * 3.0);  // unused
    dist::barrier();
    return a + b;
  });
  Tensor x = input_of(R(), {4}, 6);
  Tensor y = f(x);
  y = f(x);  // a replay
  int collectives = 0;
  for (const auto& node : f.get_concrete_function(x)->graph().nodes)
    collectives += std::string(node.op->name()) == "all_reduce" || std::string(node.op->name()) == "barrier";
  EXPECT_EQ(collectives, 4);
  testing::expect_tensor_near(y, 2.0 * dist::all_reduce(x), 1e-12);
  EXPECT_EQ(f.tracing_count(), 1);
}

// ---------------------------------------------------------------- the table
class DistOp : public ::testing::TestWithParam<testing::DistOpInfo> {};

TEST_P(DistOp, TracedEqualsEager) {
  const auto& op = GetParam();
  Tensor x = input_of(R(), op.shape(W()), 7);
  Tensor eager = op.fn(x);
  auto f = function([&](const Tensor& t) { return op.fn(t); });
  testing::expect_tensor_near(f(x), eager, 0);
}

// The gradient on each rank against central differences of the whole job's objective: the
// sum over ranks of sum(c_r * op(x)_r), with c_r a draw of rank r. Each element of each rank's
// input is nudged in turn (every rank runs every evaluation; only the owner nudges).
TEST_P(DistOp, GradientMatchesFiniteDifferencesAcrossRanks) {
  const auto& op = GetParam();
  Tensor x = input_of(R(), op.shape(W()), 8);
  Tensor c = input_of(R(), op.fn(x).shape(), 9);
  auto objective = [&](const Tensor& xr) { return sum(c * op.fn(xr)); };
  GradientTape tape;
  tape.watch(x);
  Tensor analytic = tape.gradient(objective(x), x);
  ASSERT_TRUE(analytic.defined());
  // Traced gradient too.
  auto traced = function([&](const Tensor& xr) {
    GradientTape t;
    t.watch(xr);
    return t.gradient(objective(xr), xr);
  });
  testing::expect_tensor_near(traced(x), analytic, 1e-12);
  std::vector<double> a = analytic.to_vector<double>();
  const double eps = 1e-6;
  const std::int64_t n = x.num_elements();
  for (int owner = 0; owner < W(); ++owner)
    for (std::int64_t i = 0; i < n; ++i) {
      double f[2];
      for (int s = 0; s < 2; ++s) {
        std::vector<double> v = x.to_vector<double>();
        if (owner == R()) v[static_cast<std::size_t>(i)] += s ? -eps : eps;
        Tensor xv = reshape(tensor(v), x.shape());
        f[s] = dist::all_reduce(objective(xv)).item<double>();
      }
      if (owner == R()) {
        EXPECT_NEAR(a[static_cast<std::size_t>(i)], (f[0] - f[1]) / (2 * eps), op.tolerance)
            << op.name << " element " << i << " of rank " << owner; }
    }
}

INSTANTIATE_TEST_SUITE_P(Table, DistOp, ::testing::ValuesIn(testing::dist_op_table()),
                         [](const ::testing::TestParamInfo<testing::DistOpInfo>& info) { return info.param.name; });

}  // namespace
}  // namespace ef
