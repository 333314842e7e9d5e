#pragma once
// Layers without weights: Flatten, Reshape, Dropout (eagerflow/nn/dropout.h) and Activation.
#include <optional>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/dropout.h"
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
