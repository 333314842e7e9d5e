// A layer called on Keras tensors: traced once on placeholders of their specs to build it and
// learn its output specs (nothing runs), then recorded as a node of the functional graph.
#include "eagerflow/trace/keras_tensor.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/trace/context.h"

namespace ef::detail {

std::vector<Tensor> call_on_keras_tensors(nn::Layer& layer, std::span<const Tensor> inputs, bool single,
                                          std::optional<bool> training) {
  std::shared_ptr<nn::Layer> owner = layer.weak_from_this().lock();
  if (!owner)
    fail(layer.name(), "was called on a Keras tensor but is not owned by a std::shared_ptr: the model keeps the "
                       "layers of its graph, so make them with std::make_shared (auto dense = "
                       "std::make_shared<ef::nn::Dense>(...); (*dense)(x))");
  for (const auto& t : inputs)
    if (t.is_symbolic())
      fail(layer.name(), "was called on a mix of Keras tensors (functional API) and symbolic tensors of a trace");
  auto node = std::make_shared<KerasNode>();
  node->kind = KerasNode::Kind::layer;
  node->name = layer.name();
  node->layer = owner;
  node->inputs.assign(inputs.begin(), inputs.end());
  node->list_call = !single;
  node->training = training;
  std::vector<Tensor> outs;
  {
    trace::TraceContext ctx("functional:" + layer.name(), /*allow_variable_creation=*/true);
    trace::TraceScope scope(ctx);
    std::vector<Tensor> placeholders;
    for (const auto& t : inputs) placeholders.push_back(t.is_keras_tensor() ? ctx.add_input(t.spec()) : t);
    // A model with several outputs (a functional one) gives them all; other layers give one.
    // Functional replays the node through call_outputs too, so both see the same call.
    outs = layer.call_outputs(placeholders, training);
    node->multi_output = outs.size() != 1;
  }
  for (const auto& o : outs) {
    if (!o.defined()) fail(layer.name(), "returned an undefined tensor when called on Keras tensors");
    node->outputs.push_back(o.spec());
  }
  std::vector<Tensor> result;
  for (std::size_t i = 0; i < node->outputs.size(); ++i) result.push_back(keras_tensor(node, static_cast<int>(i)));
  return result;
}

}  // namespace ef::detail
