// summary.histogram's cost per value (issue 29): 1e6 float32 values into 30 buckets, written to
// an event file (the write is buffered; flushed at the end).
#include <benchmark/benchmark.h>
#include <eagerflow/eagerflow.h>
#include <unistd.h>

#include <filesystem>

namespace {

void BM_SummaryHistogram(benchmark::State& state) {
  ef::set_num_threads(1);
  auto dir = std::filesystem::temp_directory_path() / ("ef_bench_hist_" + std::to_string(getpid()));
  auto writer = ef::summary::create_file_writer(dir.string());
  ef::Tensor x = ef::random::normal({state.range(0)});
  std::int64_t step = 0;
  {
    auto scope = writer.as_default();
    for (auto _ : state) ef::summary::histogram("h", x, step++);
  }
  writer.flush();
  state.SetItemsProcessed(state.iterations() * state.range(0));
  std::filesystem::remove_all(dir);
}

}  // namespace

BENCHMARK(BM_SummaryHistogram)->ArgNames({"values"})->Arg(1000000)->Unit(benchmark::kMillisecond);
