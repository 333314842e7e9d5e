#pragma once
// Embedding (integer ids to vectors) and the merge layers Add and Concatenate.
#include "eagerflow/nn/layer.h"

namespace ef::nn {

// ids [..] (integers in [0, input_dim)) -> vectors [.., output_dim]; weights uniform(-0.05, 0.05)
// unless embeddings_initializer says otherwise.
class Embedding : public Layer {
 public:
  Embedding(std::int64_t input_dim, std::int64_t output_dim, std::string name = "");
  Variable embeddings() const { return embeddings_; }
  std::optional<LayerConfig> get_config() const override;
  // Keras' mask_zero: id 0 is padding. The output carries the mask ids != 0 (ef::nn::mask_of,
  // eagerflow/nn/recurrent.h), which recurrent layers and GlobalAveragePooling1D honour.
  bool mask_zero = false;
  // Keras' embeddings_initializer (set before the first call).
  Initializer embeddings_initializer = random_uniform_initializer(-0.05, 0.05);

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  std::int64_t input_dim_, output_dim_;
  Variable embeddings_;
};

// The sum of its inputs (same shapes, or broadcastable): add({a, b, c}).
class Add : public Layer {
 public:
  explicit Add(std::string name = "") : Layer(std::move(name)) {}
  std::optional<LayerConfig> get_config() const override;

 protected:
  void build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
};

// Its inputs joined along `axis`.
class Concatenate : public Layer {
 public:
  explicit Concatenate(int axis = -1, std::string name = "") : Layer(std::move(name)), axis_(axis) {}
  std::optional<LayerConfig> get_config() const override;

 protected:
  void build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;

 private:
  int axis_;
};

}  // namespace ef::nn
