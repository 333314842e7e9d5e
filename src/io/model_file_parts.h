#pragma once
// The pieces of eagerflow's model files (src/io/model_file.cpp) that the other whole-model
// formats (Keras' .keras and legacy .h5: src/io/keras_file.cpp) share: configs as JSON, a
// model's config with the constants its op nodes use, rebuilding a model from a config, and the
// compile settings.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/io/safetensors.h"
#include "eagerflow/nn/layer_config.h"
#include "eagerflow/saving/model.h"
#include "eagerflow/train/model.h"
#include "io/json.h"

namespace ef::detail {

nn::ConfigValue config_from_json(const io::Json& j);
std::string config_to_json(const nn::ConfigValue& v);

// model_config, and the tensors its functional op nodes name as {"constant": key}.
nn::LayerConfig model_config_with_constants(const nn::Layer& model, std::vector<io::NamedTensor>& constants);
// model_from_config with those constants; not built unless the config says how (Sequential's build_input).
std::shared_ptr<nn::Layer> rebuild_from_config(const nn::LayerConfig& config, const std::map<std::string, Tensor>& constants,
                                               const LoadModelOptions& options, const std::string& where);
// Builds `model` for one input of `spec` (a symbolic call), as Model::build does.
void build_model_for(train::Model& model, const TensorSpec& spec);
// The input a model was built for (its save spec), when it was.
std::optional<TensorSpec> model_build_spec(const nn::Layer& model);

// The optimizer as eagerflow's configs hold it ({class_name, config}) and back.
nn::ConfigValue optimizer_config(const optim::Optimizer& optimizer);
std::shared_ptr<optim::Optimizer> optimizer_from_config(const nn::ConfigValue& v, const std::string& where);
// A loss of the compile settings as {name, ...parameters} and back.
nn::ConfigValue loss_config(const train::Loss& loss, const std::string& where);
train::Loss loss_from_config(const nn::ConfigValue& v, const std::string& where);

}  // namespace ef::detail
