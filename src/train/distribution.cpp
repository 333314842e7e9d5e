#include "eagerflow/train/distribution.h"

#include <algorithm>
#include <atomic>

namespace ef::train {

std::pair<std::int64_t, std::int64_t> DistributionStrategy::local_rows(std::int64_t begin, std::int64_t end) const {
  const std::int64_t w = world_size(), r = rank(), m = end - begin;
  const std::int64_t base = m / w, extra = m % w;
  std::int64_t first = begin + r * base + std::min(r, extra);
  return {first, first + base + (r < extra ? 1 : 0)};
}

namespace {
// Constant-initialized: a backend may set it from a static initializer of its own.
std::atomic<bool (*)()> file_writer_rule{nullptr};
}  // namespace

bool is_file_writer() {
  bool (*rule)() = file_writer_rule.load();
  return rule == nullptr || rule();
}

void set_file_writer_rule(bool (*rule)()) { file_writer_rule.store(rule); }

}  // namespace ef::train
