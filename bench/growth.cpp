// Memory and time that grow with use: RSS after matmuls of 3000 different shapes (bounded
// primitive caches), and the cost of one more trace when thousands are cached.
#include <eagerflow/eagerflow.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

namespace {
long rss_kb() {
  std::ifstream f("/proc/self/status");
  for (std::string l; std::getline(f, l);)
    if (l.rfind("VmRSS:", 0) == 0) return std::stol(l.substr(6));
  return 0;
}
}  // namespace

int main() {
  ef::set_num_threads(1);
  ef::matmul(ef::ones({1, 8}), ef::ones({8, 8}));
  long before = rss_kb();
  for (int n = 1; n <= 3000; ++n) ef::matmul(ef::ones({n % 300 + 1, 8 + n / 300}), ef::ones({8 + n / 300, 8}));
  std::size_t primitives = ef::allocator::cached_primitives();
  ef::allocator::release_cached();  // tensor buffers are not what this measures
  long after = rss_kb();
  std::cout << "RSS growth after matmuls of 3000 shapes: " << (after - before) / 1024.0 << " MB (" << primitives
            << " prepared primitives cached on this thread)\n";
  for (std::size_t cached : {100u, 1000u, 9000u}) {
    auto f = ef::function([](const ef::Tensor& x) { return x + 1.0f; }, ef::FunctionOptions{.max_traces = 0});
    ef::set_log_level(ef::LogLevel::off);  // the retracing warning is expected here
    for (std::size_t n = 1; n <= cached; ++n) f(ef::ones({static_cast<std::int64_t>(n)}));
    auto t0 = std::chrono::steady_clock::now();
    for (std::size_t n = cached + 1; n <= cached + 200; ++n) f(ef::ones({static_cast<std::int64_t>(n)}));
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 200;
    std::cout << "one more trace with " << cached << " signatures cached: " << ms << " ms\n";
  }
}
