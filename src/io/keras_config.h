#pragma once
// Keras 3's serialization (config.json of a .keras file) <-> eagerflow's model configs.
//
// Keras writes every object as {module, class_name, config, registered_name} (layers add
// build_config; a model adds compile_config); eagerflow's configs are {class_name, config} with
// Keras' layer arguments, a Sequential's build input, and a functional graph of numbered nodes.
// Reading also takes Keras 2's forms (legacy .h5 files: batch_input_shape, inbound_nodes as
// [[name, node, tensor, kwargs], ...]).
#include <map>
#include <string>
#include <vector>

#include "eagerflow/io/safetensors.h"
#include "eagerflow/nn/layer_config.h"
#include "eagerflow/train/model.h"

namespace ef::io::keras {

// The Keras 3 object for `model` (config.json without compile_config): `ours` is its eagerflow
// config and `constants` the tensors its op nodes name (detail::model_config_with_constants).
nn::ConfigMap model_to_keras(const nn::Layer& model, const nn::LayerConfig& ours,
                             const std::vector<io::NamedTensor>& constants);

// eagerflow's config of the model in a Keras 3 (or Keras 2) model object, the constants its op
// nodes name, and the input it is built for when the object says.
struct FromKeras {
  nn::LayerConfig config;
  std::map<std::string, Tensor> constants;
  std::optional<TensorSpec> build_input;
};
FromKeras model_from_keras(const nn::ConfigValue& keras, const std::string& where);

// compile_config both ways ({optimizer, loss, loss_weights, metrics, weighted_metrics, ...}).
nn::ConfigMap compile_to_keras(const train::CompileOptions& options, const optim::Optimizer& optimizer);
train::CompileOptions compile_from_keras(const nn::ConfigMap& compile_config, const std::string& where);

}  // namespace ef::io::keras
