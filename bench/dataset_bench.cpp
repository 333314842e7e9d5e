// Not a Google Benchmark (its own program, ef_dataset_bench): input pipelines, interleaved
// rounds in one run.
//   1. The MNIST MLP (784-512-512-10, Adam, batch 128) fit from a Dataset with a map and a
//      prefetch against fit on the same tensors in memory (goal: within 5%).
//   2. map throughput on two threads (sqrt(x*x + 1) * 0.5 over 10,000 rows of 784 floats)
//      against tf.data on the same work (bench/peers/tfdata_map.py, run between our rounds).
//
//   ef_dataset_bench [--rounds N] [--python PATH]   (PATH: a Python with tensorflow; default
//   ~/.cache/eagerflow/peers/bin/python; the tf.data rounds are skipped when it is missing)
// Run it with the machine otherwise idle (hold the build lock): timings under load mean little.
#include <eagerflow/data/dataset.h>
#include <eagerflow/eagerflow.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::shared_ptr<ef::train::Sequential> mlp() {
  ef::random::set_seed(1);
  auto m = std::make_shared<ef::train::Sequential>();
  m->add<ef::nn::Flatten>();
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(10);
  m->compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(true), {"accuracy"});
  return m;
}

ef::data::Element normalize(const ef::data::Element& e) {
  return ef::data::Element({(e[0] - ef::scalar(0.5f)) * ef::scalar(2.0f), e[1]});
}

ef::data::Element work(const ef::data::Element& e) {
  return ef::data::Element(ef::sqrt(e.tensor() * e.tensor() + ef::scalar(1.0f)) * ef::scalar(0.5f));
}

// tf.data's elements per second on the same work, from the peer script (its own warm-up).
double tf_round(const std::string& python, const std::string& script) {
  std::string cmd = python + " " + script + " --rows 10000 --threads 2 2>/dev/null";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return 0;
  char buf[256];
  double rate = 0;
  while (std::fgets(buf, sizeof buf, p))
    if (std::strncmp(buf, "elements_per_s ", 15) == 0) rate = std::atof(buf + 15);
  pclose(p);
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  std::string python = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/eagerflow/peers/bin/python";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--python") && i + 1 < argc) python = argv[++i];
  }
  std::string script = (std::filesystem::path(__FILE__).parent_path() / "peers" / "tfdata_map.py").string();
  try {
    auto dir = ef::data::find_mnist();
    ef::data::Digits d = dir ? ef::data::load_mnist_test(*dir) : ef::data::synthetic_digits(10000, 7);
    std::cout << "data: " << (dir ? "MNIST test set" : "generated digits") << ", " << d.images.dim(0) << " examples\n";
    ef::Tensor x = d.images, y = d.labels;

    // ---- 1. fit from memory vs from a Dataset (map + prefetch)
    auto a = mlp(), b = mlp();
    ef::data::Dataset ds = ef::data::Dataset::from_tensor_slices({x, y}).batch(128).map(normalize).prefetch(ef::data::kAutotune);
    ef::Tensor xn = (x - ef::scalar(0.5f)) * ef::scalar(2.0f);  // the same numbers as the map's
    a->fit(xn, y, {.batch_size = 128, .epochs = 1, .shuffle = false, .verbose = 0});  // warm-up (the trace)
    b->fit(ds, {.epochs = 1, .verbose = 0});
    std::vector<double> mem, pipe;
    for (int r = 0; r < rounds; ++r) {
      auto t = Clock::now();
      a->fit(xn, y, {.batch_size = 128, .epochs = 1, .shuffle = false, .verbose = 0});
      mem.push_back(seconds_since(t));
      t = Clock::now();
      b->fit(ds, {.epochs = 1, .verbose = 0});
      pipe.push_back(seconds_since(t));
    }
    double m = median(mem), p = median(pipe);
    std::printf("fit MLP 784-512-512-10, one epoch of %lld, batch 128: in memory %.3f s, Dataset(batch, map, prefetch) %.3f s: %+.1f%%\n",
                static_cast<long long>(x.dim(0)), m, p, (p / m - 1) * 100);

    // ---- 2. map throughput, 2 threads, against tf.data (interleaved rounds)
    ef::Tensor rows = ef::reshape(x, {-1, 784});
    ef::data::Dataset mapped = ef::data::Dataset::from_tensor_slices(rows).map(work, 2);
    for (const auto& e : mapped.take(1000)) (void)e;  // warm-up
    bool have_tf = std::filesystem::exists(python) && std::filesystem::exists(script);
    std::vector<double> ours, theirs;
    for (int r = 0; r < rounds; ++r) {
      auto t = Clock::now();
      std::int64_t n = 0;
      for (const auto& e : mapped) {
        (void)e;
        ++n;
      }
      ours.push_back(static_cast<double>(n) / seconds_since(t));
      if (have_tf) theirs.push_back(tf_round(python, script));
    }
    std::printf("map sqrt(x*x+1)*0.5 on [784] float32 rows, 2 threads: eagerflow %.0f elements/s", median(ours));
    if (have_tf) std::printf(", tf.data %.0f elements/s (x%.2f)", median(theirs), median(ours) / std::max(1.0, median(theirs)));
    std::printf("\n");
  } catch (const ef::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
