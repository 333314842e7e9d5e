#pragma once
// Layers without weights: Flatten, Reshape, Dropout and Activation.
#include <optional>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/layer.h"

namespace ef::nn {

// [batch, d1, d2, ...] -> [batch, d1*d2*...]; the batch may be dynamic.
class Flatten : public Layer {
 public:
  explicit Flatten(std::string name = "") : Layer(std::move(name)) {}
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;
};

// [batch, ...] -> [batch, target...] (Keras' Reshape: the target excludes the batch, one entry
// may be -1); the batch may be dynamic.
class Reshape : public Layer {
 public:
  explicit Reshape(Shape target, std::string name = "") : Layer(std::move(name)), target_(std::move(target)) {}
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  Shape target_;
};

// While training, zeroes each element with probability `rate` and scales the rest by
// 1 / (1 - rate) (Keras' inverted dropout); the identity otherwise. A fresh mask is drawn on
// every call, also when replayed from a traced function; with a seed, the layer's k-th call
// draws the k-th mask of that seed (two layers with one seed draw alike, as in Keras 3).
class Dropout : public Layer {
 public:
  explicit Dropout(double rate, std::optional<std::uint64_t> seed = std::nullopt, std::string name = "");
  double rate() const { return rate_; }
  std::optional<LayerConfig> get_config() const override;
  bool supports_masking() const override { return true; }
  const random::SeedGenerator* seed_generator() const override { return generator_ ? &*generator_ : nullptr; }

 protected:
  Tensor call(const Tensor& inputs, bool training) override;

 private:
  double rate_;
  std::optional<std::uint64_t> seed_;
  // With a seed, the layer's own sequence of masks (Keras 3's seed_generator): a second layer
  // with the same seed repeats them. Without, masks come from the global generator.
  std::optional<random::SeedGenerator> generator_;
};

// Applies an activation: Activation("relu").
class Activation : public Layer {
 public:
  explicit Activation(ActivationFn fn, std::string name = "") : Layer(std::move(name)), fn_(std::move(fn)) {}
  std::optional<LayerConfig> get_config() const override;
  bool supports_masking() const override { return true; }

 protected:
  Tensor call(const Tensor& inputs) override { return fn_(inputs); }

 private:
  ActivationFn fn_;
};

}  // namespace ef::nn
