#pragma once
// Keras-style layers. A layer builds itself on its first call (build(input_shape) creates
// its weights), then runs call(inputs). Layers called inside another layer's call become its
// sub-layers automatically, and weights are named by the path: "eager_layer/dense/kernel".
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/function/function.h"
#include "eagerflow/nn/initializers.h"
#include "eagerflow/variable.h"

namespace ef::nn {

class Layer {
 public:
  // An empty name is replaced by the class name in snake_case, made unique: "dense", "dense_1".
  explicit Layer(std::string name = "");
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Builds on the first call, then runs call(). Inside a trace, logs the call with the
  // symbolic input spec (at LogLevel::verbose).
  Tensor operator()(const Tensor& inputs);

  const std::string& name() const;
  bool built() const { return built_; }
  // Sub-layers first seen during this layer's calls (or added with track()).
  const std::vector<Layer*>& layers() const { return children_; }
  // All weights of this layer and its sub-layers, in creation order.
  std::vector<Variable> weights() const;
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;

 protected:
  virtual void build(const Shape& input_shape) {}
  virtual Tensor call(const Tensor& inputs) = 0;
  // Creates a weight named "<layer path>/<name>"; call from build().
  Variable add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                      bool trainable = true, DType dtype = DType::float32);
  void track(Layer& child);

 private:
  void collect(std::vector<Variable>& out) const;
  mutable std::string name_;
  bool built_ = false;
  std::vector<Variable> own_weights_;
  std::vector<Layer*> children_;
  std::vector<Layer*> parents_;  // so that a layer destroyed first unlinks itself
};

}  // namespace ef::nn

namespace ef {
// ef::function over a layer: traces layer(inputs). The layer is held by reference and must
// outlive the function (like a tf.function over a Keras layer).
template <class L>
  requires std::derived_from<L, nn::Layer>
auto function(L& layer, FunctionOptions options = {}) {
  if (options.name.empty()) options.name = layer.name();
  if (options.arg_names.empty()) options.arg_names = {"inputs"};
  nn::Layer* target = &layer;
  return Function([target](const Tensor& inputs) { return (*target)(inputs); }, std::move(options));
}
}  // namespace ef
