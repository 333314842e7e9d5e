// Data parallelism on Open MPI, measured (not a test; results in bench/RESULTS.md):
//
//   mpirun -np 2 ef_allreduce_bench allreduce      all-reduce time 4 KB .. 64 MB (+ memcpy bandwidth)
//   ef_allreduce_bench fit --threads 1|2            an MLP epoch on one rank
//   mpirun -np 2 ef_allreduce_bench fit --threads 1 the same epoch data parallel (global batch 128)
//
// The fit: MLP 784-512-512-10, Adam, 8,192 generated digits, global batch 128 (64 steps), one
// warm-up epoch then the median of --epochs timed epochs; in data-parallel runs it also times
// the gradient all-reduce alone (the bytes of every gradient, in the strategy's buckets) to
// give the share of a step spent communicating.
// Its own program (bench/CMakeLists.txt defines EF_ALLREDUCE_BENCH_MAIN): compiled into the
// Google Benchmark binary by its *_bench.cpp glob, it is empty.
#ifdef EF_ALLREDUCE_BENCH_MAIN
#include <eagerflow/core/threading.h>
#include <eagerflow/dist/data_parallel.h>
#include <eagerflow/dist/dist.h>
#include <eagerflow/eagerflow.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void bench_allreduce() {
  const int rank = ef::dist::rank(), world = ef::dist::world_size();
  // The machine's copy bandwidth, one thread (what the shared-memory transport moves through).
  {
    std::vector<char> a(64 << 20, 1), b(64 << 20);
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      auto t0 = Clock::now();
      std::memcpy(b.data(), a.data(), a.size());
      t.push_back(seconds_since(t0));
    }
    if (rank == 0)
      std::printf("memcpy 64 MiB, one thread: %.2f GB/s (read + write %.2f GB/s)\n", a.size() / median(t) / 1e9,
                  2 * a.size() / median(t) / 1e9);
  }
  // Both transports side by side: shared memory (the default) and MPI_Allreduce, alternating
  // rep by rep so that both see the same machine.
  const bool shm = ef::dist::shared_memory();
  if (rank == 0)
    std::printf("%10s %14s %14s %12s %12s %8s\n", "bytes", "shm time (us)", "mpi time (us)", "shm GB/s", "mpi GB/s", "mpi/shm");
  for (std::int64_t bytes = 4 << 10; bytes <= (64 << 20); bytes *= 4) {
    ef::Tensor x = ef::full({bytes / 4}, 1.0, ef::DType::float32);
    int reps = bytes <= (1 << 20) ? 200 : 20;
    std::vector<double> t[2];
    for (int i = 0; i < reps + 3; ++i)
      for (int mode = 0; mode < 2; ++mode) {
        ef::dist::use_shared_memory(mode == 0 && shm);
        ef::dist::barrier();
        auto t0 = Clock::now();
        ef::dist::all_reduce(x);
        if (i >= 3) t[mode].push_back(seconds_since(t0));
      }
    double s = median(t[0]), m = median(t[1]);
    // For 2 ranks the bus bandwidth (2 (n - 1) / n of the data per rank) equals this one.
    if (rank == 0)
      std::printf("%10lld %14.1f %14.1f %12.2f %12.2f %8.2f\n", static_cast<long long>(bytes), s * 1e6, m * 1e6, bytes / s / 1e9,
                  bytes / m / 1e9, m / s);
  }
  ef::dist::use_shared_memory(shm);
  (void)world;
}

void bench_fit(int epochs) {
  auto d = ef::data::synthetic_digits(8192, 7);
  ef::random::set_seed(1);
  ef::train::Sequential mlp;
  mlp.add<ef::nn::Flatten>();
  mlp.add<ef::nn::Dense>(512, "relu");
  mlp.add<ef::nn::Dense>(512, "relu");
  mlp.add<ef::nn::Dense>(10);
  mlp.build(ef::Shape{ef::kDynamic, 28, 28});
  mlp.compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(true), {"accuracy"});
  std::shared_ptr<ef::dist::DataParallel> dp;
  int world = 1, rank = 0;
  if (ef::dist::is_initialized() || std::getenv("OMPI_COMM_WORLD_SIZE")) {
    dp = std::make_shared<ef::dist::DataParallel>();
    world = dp->world_size();
    rank = dp->rank();
    if (world > 1) mlp.set_distribution(dp);
  }
  ef::train::FitOptions o{.batch_size = 128, .epochs = 1, .verbose = 0};
  mlp.fit(d.images, d.labels, o);  // warm-up: traces, caches
  // Data parallel: epochs alternate between the two reductions' transports (shared memory,
  // MPI_Allreduce), so that both see the same machine.
  const bool shm = world > 1 && ef::dist::shared_memory();
  const int modes = shm ? 2 : 1;
  std::vector<double> t[2];
  double loss = 0;
  for (int e = 0; e < epochs; ++e)
    for (int mode = 0; mode < modes; ++mode) {
      if (shm) ef::dist::use_shared_memory(mode == 0);
      auto t0 = Clock::now();
      auto h = mlp.fit(d.images, d.labels, o);
      t[mode].push_back(seconds_since(t0));
      loss = h.history["loss"].back();
    }
  if (shm) ef::dist::use_shared_memory(true);
  double epoch = median(t[0]);
  if (rank == 0) {
    std::printf("fit epoch (64 steps of 128): %d rank(s) x %d thread(s)%s: %.3f s, %.2f ms/step, loss %.4f\n", world,
                ef::num_threads(), world > 1 ? (shm ? ", shared memory" : ", MPI_Allreduce") : "", epoch, epoch / 64 * 1e3, loss);
    if (shm)
      std::printf("fit epoch (64 steps of 128): %d rank(s) x %d thread(s), MPI_Allreduce: %.3f s, %.2f ms/step\n", world,
                  ef::num_threads(), median(t[1]), median(t[1]) / 64 * 1e3);
  }
  if (world > 1) {
    // The gradient all-reduce alone: every trainable weight's gradient, in the strategy's buckets.
    std::vector<ef::Tensor> grads;
    for (const auto& v : mlp.trainable_weights()) grads.push_back(ef::full(v.shape(), 1.0, ef::DType::float32));
    ef::Tensor count = ef::scalar<double>(64.0);
    std::vector<double> c[2];
    for (int i = 0; i < 33; ++i)
      for (int mode = 0; mode < modes; ++mode) {
        if (shm) ef::dist::use_shared_memory(mode == 0);
        ef::dist::barrier();
        auto t0 = Clock::now();
        auto r = dp->reduce_gradients(grads, count);
        if (i >= 3) c[mode].push_back(seconds_since(t0));
      }
    if (shm) ef::dist::use_shared_memory(true);
    std::int64_t n = 0;
    for (const auto& g : grads) n += g.num_elements();
    for (int mode = 0; mode < modes; ++mode)
      if (rank == 0)
        std::printf("gradient all-reduce (%lld floats, %.1f MB, eager, with the weighting)%s: %.2f ms = %.0f%% of a step\n",
                    static_cast<long long>(n), n * 4 / 1e6, mode == 0 && shm ? ", shared memory" : ", MPI_Allreduce",
                    median(c[mode]) * 1e3, 100 * median(c[mode]) / (median(t[mode]) / 64));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "allreduce";
  int threads = 1, epochs = 3;
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = std::atoi(argv[++i]);
  }
  ef::set_num_threads(threads);
  try {
    if (what == "allreduce") {
      ef::dist::init();
      bench_allreduce();
    } else {
      bench_fit(epochs);
    }
  } catch (const ef::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
#endif  // EF_ALLREDUCE_BENCH_MAIN
