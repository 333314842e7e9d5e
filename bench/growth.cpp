// Memory and time that grow with use: RSS after matmuls of 3000 different shapes (bounded
// primitive caches), the cost of one more trace when thousands are cached, and the RSS an
// eager scan over 1e6 scalar steps adds (issue 29: 538 MB when each step's ys were kept).
#include <eagerflow/eagerflow.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

namespace {
long status_kb(const std::string& field) {
  std::ifstream f("/proc/self/status");
  for (std::string l; std::getline(f, l);)
    if (l.rfind(field, 0) == 0) return std::stol(l.substr(field.size()));
  return 0;
}
long rss_kb() { return status_kb("VmRSS:"); }
long peak_kb() { return status_kb("VmHWM:"); }
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
  {
    auto body = [](const std::vector<ef::Tensor>& c, const std::vector<ef::Tensor>& x) {
      ef::Tensor next = c[0] + x[0];
      return std::pair{std::vector<ef::Tensor>{next}, std::vector<ef::Tensor>{next}};
    };
    ef::Tensor xs = ef::ones({1000000});
    ef::scan(body, {ef::scalar(0.0f)}, {ef::ones({1000})});
    long start = rss_kb(), start_peak = peak_kb();
    auto t0 = std::chrono::steady_clock::now();
    auto [carry, ys] = ef::scan(body, {ef::scalar(0.0f)}, {xs});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "eager scan over 1e6 scalar steps: RSS +" << (rss_kb() - start) / 1024.0 << " MB, peak +"
              << (peak_kb() - start_peak) / 1024.0 << " MB (the ys are 3.8 MB), " << s << " s, last carry "
              << carry[0].item<float>() << "\n";
  }
}
