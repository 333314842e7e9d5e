#pragma once
// Random tensors, reproducible across runs and machines (counter-based generator).
// Like TF: ops draw from the global seed (ef::random::set_seed) and a counter, so a seeded
// program repeats itself exactly. An op with an explicit seed draws a reproducible sequence:
// the k-th execution of ops with seed s draws the k-th set of numbers, eagerly and traced
// alike (a seeded Dropout masks differently each step, and an eager fit and a traced fit draw
// the same masks); set_seed restarts every sequence. The stateless_* draws give the same
// numbers on every call for a seed (TF's stateless_uniform): for reproducible data.
// Random draws are ops: inside ef::function each call of the function draws fresh numbers.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::random {
void set_seed(std::uint64_t seed);
// The global generator's whole state (seed and draw counter), for checkpoints: restoring it
// makes the following draws repeat those that followed the save.
struct GeneratorState {
  std::uint64_t seed = 0, counter = 0;
  // (seed, draws so far) of every explicit seed that has drawn: restoring them makes seeded
  // ops (a seeded Dropout) continue their sequences too.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seeded;
};
GeneratorState get_global_state();
void set_global_state(GeneratorState state);
Tensor uniform(const Shape& shape, double minval = 0.0, double maxval = 1.0,
               DType dtype = DType::float32, std::optional<std::uint64_t> seed = std::nullopt);
Tensor normal(const Shape& shape, double mean = 0.0, double stddev = 1.0,
              DType dtype = DType::float32, std::optional<std::uint64_t> seed = std::nullopt);
// The same, shaped like `like` at run time (a dynamic batch inside a trace), of its dtype.
Tensor uniform_like(const Tensor& like, double minval = 0.0, double maxval = 1.0,
                    std::optional<std::uint64_t> seed = std::nullopt);
Tensor normal_like(const Tensor& like, double mean = 0.0, double stddev = 1.0,
                   std::optional<std::uint64_t> seed = std::nullopt);
Tensor stateless_uniform(const Shape& shape, std::uint64_t seed, double minval = 0.0, double maxval = 1.0,
                         DType dtype = DType::float32);
Tensor stateless_normal(const Shape& shape, std::uint64_t seed, double mean = 0.0, double stddev = 1.0,
                        DType dtype = DType::float32);
}  // namespace ef::random
