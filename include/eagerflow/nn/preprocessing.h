#pragma once
// Keras' preprocessing and utility layers: Lambda, Rescaling, Normalization (with adapt).
#include <functional>
#include <optional>
#include <vector>

#include "eagerflow/nn/layer.h"

namespace ef::nn {

// Lambda(fn): call(x) = fn(x), any function written with ef ops (it traces and differentiates
// like the ops it calls). It has no weights; a function that needs some belongs in a Layer.
class Lambda : public Layer {
 public:
  explicit Lambda(std::function<Tensor(const Tensor&)> fn, std::string name = "");
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  std::function<Tensor(const Tensor&)> fn_;
};

// Rescaling(scale, offset): x * scale + offset, as float32 (a float64 input stays float64).
class Rescaling : public Layer {
 public:
  explicit Rescaling(double scale, double offset = 0.0, std::string name = "");
  double scale() const { return scale_; }
  double offset() const { return offset_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  double scale_, offset_;
};

// Normalization(axis = {-1}): (x - mean) / max(sqrt(variance), 1e-7), a mean and variance per
// position along the kept axes (Keras' axis; empty = one mean and variance for everything).
// They are given (mean, variance: a scalar or the shape of the kept axes, fixed like Keras'
// constants) or computed from data by adapt(), into the non-trainable weights "mean",
// "variance" and "count" (so save_weights and checkpoints keep them). invert = true maps
// back: mean + x * max(sqrt(variance), 1e-7).
class Normalization : public Layer {
 public:
  explicit Normalization(std::vector<int> axis = {-1}, std::optional<Tensor> mean = std::nullopt,
                         std::optional<Tensor> variance = std::nullopt, bool invert = false, std::string name = "");
  // Keras' adapt(data) on one array: the mean and (population) variance over every axis but the
  // kept ones. Builds the layer when it is not built yet. An error on empty or symbolic data,
  // on data whose kept dims differ from the built layer's, and on a layer given mean/variance.
  void adapt(const Tensor& data);
  // The mean and variance in use, shaped like the kept axes (a scalar when none are kept);
  // undefined before the layer is built.
  Tensor mean() const;
  Tensor variance() const;
  bool invert() const { return invert_; }
  const std::vector<int>& axis() const { return axis_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  std::vector<int> axis_;
  std::optional<Tensor> input_mean_, input_variance_;
  bool invert_;
  Shape built_shape_;
  std::vector<int> keep_, reduce_;
  Shape broadcast_shape_, stats_shape_;
  Variable adapt_mean_, adapt_variance_, count_;
  Tensor fixed_mean_, fixed_variance_;  // from the constructor, in the broadcast shape
};

}  // namespace ef::nn
