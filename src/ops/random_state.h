#pragma once
// A draw counter shared by random ops: one per explicit op seed (kept for the program's life)
// or one per SeedGenerator (kept alive by the generator and by every op that draws from it).
#include <atomic>
#include <cstdint>

#include "eagerflow/ops/random.h"

namespace ef::random {

struct SeedGenerator::State {
  explicit State(std::uint64_t s) : seed(s) {}
  const std::uint64_t seed;
  std::atomic<std::uint64_t> draws{0};
};

}  // namespace ef::random
