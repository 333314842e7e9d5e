#pragma once
// A draw counter shared by random ops: one per explicit op seed (kept for the program's life)
// or one per SeedGenerator (kept alive by the generator and by every op that draws from it).
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "eagerflow/ops/random.h"

namespace ef::random {

struct SeedGenerator::State {
  explicit State(std::uint64_t s) : seed(s) {}
  const std::uint64_t seed;
  std::atomic<std::uint64_t> draws{0};
};

// The draw counter of every op with this explicit seed (src/ops/random.cpp).
std::shared_ptr<SeedGenerator::State> seed_counter(std::uint64_t seed);
// The key of one execution of a random op, as RandomOp draws it: a stateless op's comes from
// its seed alone; a seeded op's from its seed and the k-th draw of `seeded` (which it
// advances); an unseeded op's from the global seed and counter.
std::uint64_t execution_key(std::optional<std::uint64_t> seed, bool stateless, SeedGenerator::State* seeded);

}  // namespace ef::random
