#pragma once
// Keras tensors: the placeholders of the functional API. ef::train::Input makes one; a layer
// called on Keras tensors, or an op applied to them, records a KerasNode and returns Keras
// tensors for its outputs (with their shapes and dtypes, the batch dim dynamic), so the
// model's structure is a DAG from the outputs back to the inputs, as in Keras. Nothing runs:
// a layer's output shapes come from tracing its call once on placeholders (like
// jax.eval_shape), which also builds it. ef::train::Functional walks the DAG.
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

class Primitive;
namespace nn {
class Layer;
}

struct KerasNode {
  KerasNode() = default;
  KerasNode(const KerasNode&) = delete;
  KerasNode& operator=(const KerasNode&) = delete;
  // Frees the chain of nodes only this one keeps alive without recursion: a graph a million
  // ops deep (x = x + 1 in a loop) must not overflow the stack when dropped.
  ~KerasNode();
  enum class Kind { input, op, layer };
  Kind kind = Kind::input;
  std::string name;                     // the Input's name, the layer's name or the op's name
  std::shared_ptr<Primitive> op;        // Kind::op
  std::shared_ptr<nn::Layer> layer;     // Kind::layer
  std::vector<Tensor> inputs;           // Keras tensors, or constants captured by an op
  bool list_call = false;               // the layer was called with a list of tensors
  bool multi_output = false;            // through call_outputs
  std::optional<bool> training;         // as given at the call (else the model's flag)
  std::vector<TensorSpec> outputs;
};

// Output `index` of `node`.
Tensor keras_tensor(std::shared_ptr<const KerasNode> node, int index);
// The node that made a Keras tensor and which of its outputs it is.
const std::shared_ptr<const KerasNode>& keras_node_of(const Tensor& t);
int keras_output_index(const Tensor& t);

namespace detail {
bool any_keras_tensor(std::span<const Tensor> inputs);
// dispatch(): an op applied to Keras tensors becomes a node.
std::vector<Tensor> record_keras_op(const Primitive& op, std::span<const Tensor> inputs);
// Layer::operator(): a layer called on Keras tensors becomes a node (src/nn/keras_call.cpp).
std::vector<Tensor> call_on_keras_tensors(nn::Layer& layer, std::span<const Tensor> inputs, bool single,
                                          std::optional<bool> training);
}  // namespace detail

}  // namespace ef
