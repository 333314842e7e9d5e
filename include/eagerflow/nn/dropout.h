#pragma once
#include <optional>
#include <span>

#include "eagerflow/nn/layer_args.h"  // Layer (and random::SeedGenerator through it)

namespace ef::nn {

// Keras' Dropout arguments; Dropout::args() declares each one once.
struct DropoutOptions : LayerOptions {
  double rate = 0.0;                 // required, in [0, 1)
  std::optional<std::int64_t> seed;  // non-negative; none: masks from the global generator
};

// While training, zeroes each element with probability `rate` and scales the rest by
// 1 / (1 - rate) (Keras' inverted dropout); the identity otherwise. A fresh mask is drawn on
// every call, also when replayed from a traced function; with a seed, the layer's k-th call
// draws the k-th mask of that seed (two layers with one seed draw alike, as in Keras 3).
class Dropout : public Layer {
 public:
  explicit Dropout(DropoutOptions options);
  explicit Dropout(double rate, std::optional<std::uint64_t> seed = std::nullopt, std::string name = "");
  static std::span<const LayerArg<DropoutOptions>> args();  // src/nn/dropout.cpp
  const DropoutOptions& options() const { return options_; }
  double rate() const { return options_.rate; }
  std::optional<LayerConfig> get_config() const override;
  bool supports_masking() const override { return true; }
  const random::SeedGenerator* seed_generator() const override { return generator_ ? &*generator_ : nullptr; }

 protected:
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  DropoutOptions options_;
  // With a seed, the layer's own sequence of masks (Keras 3's seed_generator): a second layer
  // with the same seed repeats them. Without, masks come from the global generator.
  std::optional<random::SeedGenerator> generator_;
};

}  // namespace ef::nn
