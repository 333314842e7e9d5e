#pragma once
// Random tensors, reproducible across runs and machines (counter-based generator).
// Like TF: ops draw from the global seed (ef::random::set_seed) and a counter, so a seeded
// program repeats itself exactly. An op with an explicit seed draws a reproducible sequence:
// the k-th execution of ops with seed s draws the k-th set of numbers, eagerly and traced
// alike; a SeedGenerator (below) gives one layer a sequence of its own (a seeded Dropout masks
// differently each step, and an eager fit and a traced fit draw the same masks); set_seed
// restarts every sequence. The stateless_* draws give the same
// numbers on every call for a seed (TF's stateless_uniform): for reproducible data.
// Random draws are ops: inside ef::function each call of the function draws fresh numbers.
#include <cstdint>
#include <memory>
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
  // (seed, draws so far) of every explicit op seed that has drawn: restoring them makes seeded
  // ops continue their sequences too. SeedGenerators are saved with their layers.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> seeded;
};
GeneratorState get_global_state();
void set_global_state(GeneratorState state);

// A seed with its own draw counter (Keras 3's keras.random.SeedGenerator): the k-th draw made
// through a generator takes the k-th set of numbers of its seed, whatever other generators or
// ops with the same seed drew before. So two Dropout(rate, seed=s) layers repeat the same
// masks, each call of one layer still draws a new mask, and an eager and a traced run draw the
// same sequence. Copies share the counter (a handle). set_seed restarts every generator.
class SeedGenerator {
 public:
  explicit SeedGenerator(std::uint64_t seed);
  // A seed taken from the global generator (Keras' SeedGenerator(seed=None)): reproducible
  // after set_seed, different for each generator made.
  SeedGenerator();
  std::uint64_t seed() const;
  // Draws made so far; checkpoints save and restore it.
  std::uint64_t draws() const;
  void set_draws(std::uint64_t n) const;  // a handle: the state is shared, like Variable::assign

  struct State;  // src/ops/random_state.h
  const std::shared_ptr<State>& state() const { return state_; }

 private:
  std::shared_ptr<State> state_;
};

Tensor uniform(const Shape& shape, double minval = 0.0, double maxval = 1.0,
               DType dtype = DType::float32, std::optional<std::uint64_t> seed = std::nullopt);
Tensor normal(const Shape& shape, double mean = 0.0, double stddev = 1.0,
              DType dtype = DType::float32, std::optional<std::uint64_t> seed = std::nullopt);
// The same, shaped like `like` at run time (a dynamic batch inside a trace), of its dtype.
Tensor uniform_like(const Tensor& like, double minval = 0.0, double maxval = 1.0,
                    std::optional<std::uint64_t> seed = std::nullopt);
Tensor normal_like(const Tensor& like, double mean = 0.0, double stddev = 1.0,
                   std::optional<std::uint64_t> seed = std::nullopt);
Tensor uniform_like(const Tensor& like, double minval, double maxval, const SeedGenerator& generator);
Tensor normal_like(const Tensor& like, double mean, double stddev, const SeedGenerator& generator);
Tensor uniform(const Shape& shape, double minval, double maxval, DType dtype, const SeedGenerator& generator);
Tensor normal(const Shape& shape, double mean, double stddev, DType dtype, const SeedGenerator& generator);
Tensor stateless_uniform(const Shape& shape, std::uint64_t seed, double minval = 0.0, double maxval = 1.0,
                         DType dtype = DType::float32);
Tensor stateless_normal(const Shape& shape, std::uint64_t seed, double mean = 0.0, double stddev = 1.0,
                        DType dtype = DType::float32);
// TF's truncated_normal: normal draws, those beyond two standard deviations drawn again.
Tensor truncated_normal(const Shape& shape, double mean = 0.0, double stddev = 1.0, DType dtype = DType::float32,
                        std::optional<std::uint64_t> seed = std::nullopt);
Tensor truncated_normal(const Shape& shape, double mean, double stddev, DType dtype, const SeedGenerator& generator);
Tensor stateless_truncated_normal(const Shape& shape, std::uint64_t seed, double mean = 0.0, double stddev = 1.0,
                                  DType dtype = DType::float32);
// tf.random.categorical: num_samples class indices per row of logits [batch, classes]
// (unnormalized log-probabilities; -inf never drawn), as [batch, num_samples] of dtype (int64
// or int32). Draws like the other random ops (global seed and counter, or the op's seed);
// the stateless form gives the same samples on every call for a seed.
Tensor categorical(const Tensor& logits, std::int64_t num_samples, DType dtype = DType::int64,
                   std::optional<std::uint64_t> seed = std::nullopt);
Tensor stateless_categorical(const Tensor& logits, std::int64_t num_samples, std::uint64_t seed,
                             DType dtype = DType::int64);
// Integers uniform in [minval, maxval) (keras.random.randint; exact for ranges below 2^53).
Tensor randint(const Shape& shape, std::int64_t minval, std::int64_t maxval, DType dtype = DType::int32,
               std::optional<std::uint64_t> seed = std::nullopt);
// A random permutation of 0 .. n-1 (int64).
Tensor permutation(std::int64_t n, std::optional<std::uint64_t> seed = std::nullopt);
}  // namespace ef::random
