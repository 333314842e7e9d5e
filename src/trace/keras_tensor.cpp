#include "eagerflow/trace/keras_tensor.h"

#include <algorithm>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/primitive.h"

namespace ef {

namespace {

// Moves out of `inputs` the nodes that die with them (held by nothing else), so the caller
// frees them one at a time.
void take_sole_owned(std::vector<Tensor>& inputs, std::vector<std::shared_ptr<const KerasNode>>& out) {
  for (Tensor& t : inputs) {
    if (!t.defined() || !t.is_keras_tensor()) continue;
    const auto& impl = t.impl_ptr();
    if (impl.use_count() != 1) continue;
    std::shared_ptr<const KerasNode> node = std::move(t.impl().keras_node);
    if (node.use_count() == 1) out.push_back(std::move(node));
  }
  inputs.clear();
}

}  // namespace

KerasNode::~KerasNode() {
  std::vector<std::shared_ptr<const KerasNode>> pending;
  take_sole_owned(inputs, pending);
  while (!pending.empty()) {
    std::shared_ptr<const KerasNode> node = std::move(pending.back());
    pending.pop_back();
    // The last reference: its inputs can be taken before it is destroyed (without recursion).
    take_sole_owned(const_cast<KerasNode&>(*node).inputs, pending);
  }
}

Tensor keras_tensor(std::shared_ptr<const KerasNode> node, int index) {
  const TensorSpec& spec = node->outputs.at(static_cast<std::size_t>(index));
  auto impl = new_tensor_impl();
  impl->dtype = spec.dtype;
  impl->shape = spec.shape;
  impl->value = index;
  impl->keras_node = std::move(node);
  return Tensor(std::move(impl));
}

const std::shared_ptr<const KerasNode>& keras_node_of(const Tensor& t) {
  if (!t.defined() || !t.is_keras_tensor()) fail("functional", "not a Keras tensor (make one with ef::train::Input)");
  return t.impl().keras_node;
}

int keras_output_index(const Tensor& t) {
  keras_node_of(t);
  return t.impl().value;
}

namespace detail {

bool any_keras_tensor(std::span<const Tensor> inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.defined() && t.is_keras_tensor(); });
}

std::vector<Tensor> record_keras_op(const Primitive& op, std::span<const Tensor> inputs) {
  for (const auto& t : inputs)
    if (t.is_symbolic())
      fail(op.name(), "mixes a Keras tensor (functional API) with a symbolic tensor of a trace; a Keras tensor "
                      "is a placeholder for building a model, not a value");
  auto node = std::make_shared<KerasNode>();
  node->kind = KerasNode::Kind::op;
  node->name = op.name();
  node->op = op.clone();
  node->inputs.assign(inputs.begin(), inputs.end());
  node->outputs = op.infer(inputs);
  std::vector<Tensor> outs;
  for (std::size_t i = 0; i < node->outputs.size(); ++i) outs.push_back(keras_tensor(node, static_cast<int>(i)));
  return outs;
}

}  // namespace detail
}  // namespace ef
