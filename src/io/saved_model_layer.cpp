#include "eagerflow/saving/saved_model.h"

namespace ef {

std::vector<Variable> SavedModel::trainable_variables() const {
  std::vector<Variable> out;
  for (const auto& [key, v] : variables_)
    if (v.trainable()) out.push_back(v);
  return out;
}

namespace nn {

SavedModelLayer::SavedModelLayer(SavedModel model, std::string endpoint, bool trainable, std::string name)
    : Layer(std::move(name)), model_(std::move(model)), endpoint_(std::move(endpoint)) {
  const SavedModel::Signature& sig = model_.signature(endpoint_);  // names the signatures it has when absent
  if (sig.inputs.size() != 1 || sig.outputs.size() != 1)
    fail("SavedModelLayer", "signature '" + endpoint_ + "' takes " + std::to_string(sig.inputs.size()) + " inputs and returns " +
                                std::to_string(sig.outputs.size()) + " outputs; a layer needs one of each (call the "
                                "SavedModel itself for the others)");
  function_ = model_.concrete_function(endpoint_);
  for (const auto& [key, v] : model_.variables()) track_weight(v);
  if (!trainable) set_trainable(false);
}

SavedModelLayer::SavedModelLayer(const std::string& dir, std::string endpoint, bool trainable, std::string name)
    : SavedModelLayer(load(dir), std::move(endpoint), trainable, std::move(name)) {}

Tensor SavedModelLayer::call(const Tensor& inputs) {
  return function_->call_flat(std::span<const Tensor>(&inputs, 1)).at(0);
}

}  // namespace nn
}  // namespace ef
