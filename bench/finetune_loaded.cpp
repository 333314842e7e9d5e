// Not a Google Benchmark: a fine-tuning step of a loaded saved model against the same step of
// the model it was saved from (issue 16's "within 5%"), interleaved in one process.
//
//   ef_finetune_loaded [rounds]   MLP 784-512-512-10, batch 128, Adam; train_on_batch
// Prints the median step time of each and their ratio.
#include <eagerflow/eagerflow.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace {

std::shared_ptr<ef::train::Sequential> mlp() {
  auto m = std::make_shared<ef::train::Sequential>();
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(512, "relu");
  m->add<ef::nn::Dense>(10);
  return m;
}

double seconds_of(ef::train::Model& m, const ef::Tensor& x, const ef::Tensor& y, int steps) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) m.train_on_batch(x, y);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  ef::random::set_seed(5);
  ef::Tensor x = ef::random::uniform({128, 784});
  ef::Tensor y = ef::cast(ef::random::uniform({128}, 0.0, 10.0), ef::DType::int64);
  auto original = mlp();
  (*original)(x);
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "ef_finetune_bench";
  ef::save(*original, dir.string());
  ef::train::Sequential loaded({std::make_shared<ef::nn::SavedModelLayer>(dir.string())});
  for (ef::train::Model* m : {static_cast<ef::train::Model*>(original.get()), static_cast<ef::train::Model*>(&loaded)}) {
    m->compile(std::make_shared<ef::optim::Adam>(1e-3), ef::train::SparseCategoricalCrossentropy(true));
    for (int i = 0; i < 5; ++i) m->train_on_batch(x, y);  // trace, slots, warm caches
  }
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {  // interleaved, alternating which goes first
    if (r % 2) {
      a.push_back(seconds_of(*original, x, y, 10));
      b.push_back(seconds_of(loaded, x, y, 10));
    } else {
      b.push_back(seconds_of(loaded, x, y, 10));
      a.push_back(seconds_of(*original, x, y, 10));
    }
  }
  double ma = median(a), mb = median(b);
  std::printf("threads %d\noriginal model step  %.3f ms (median of %d)\nloaded model step    %.3f ms\nratio loaded/original %.3f\n",
              ef::num_threads(), ma * 1e3, rounds, mb * 1e3, mb / ma);
  std::filesystem::remove_all(dir);
  return 0;
}
