// Keras' legacy whole-model HDF5 files, written (Keras 3's model.save("m.h5") writes them too):
// the root's model_config (Keras' serialization of the architecture), training_config (the
// compile settings with optimizer_config) and version attributes; model_weights with
// layer_names, and per layer its weight_names and datasets in Keras 2's weight order. Keras'
// legacy loader reads them; the optimizer's state is not written (Keras restarts it).
#include <set>

#include "eagerflow/core/error.h"
#include "eagerflow/core/log.h"
#include "eagerflow/trace/context.h"
#include "io/hdf5_file.h"
#include "io/keras_config.h"
#include "io/keras_file.h"
#include "io/legacy_layers.h"
#include "io/model_file_parts.h"

namespace ef::io {
namespace {

// The last part of a variable's path ("sequential/dense/kernel" -> "kernel").
std::string short_name(const std::string& name) {
  std::size_t cut = name.rfind('/');
  std::string s = cut == std::string::npos ? name : name.substr(cut + 1);
  if (std::size_t colon = s.find(':'); colon != std::string::npos) s = s.substr(0, colon);
  return s.empty() ? "weight" : s;
}

}  // namespace

void save_legacy_h5_model(const train::Model& model, const std::string& path, const SaveModelOptions& options) {
  const std::string where = "save_model('" + path + "')";
  std::vector<io::NamedTensor> constants;
  nn::LayerConfig ours = detail::model_config_with_constants(model, constants);
  nn::ConfigMap keras_model = keras::model_to_keras(model, ours, constants);
  nn::ConfigMap model_config;  // the legacy form: {class_name, config}
  model_config.set("class_name", keras_model.at("class_name"));
  model_config.set("config", keras_model.at("config"));
  h5::Lock lock;
  trace::EagerScope eager;
  h5::File file = h5::File::create(path);
  h5::Group root = file.root();
  root.set_string_attr("backend", "tensorflow");
  root.set_string_attr("keras_version", kKerasFormatVersion);
  root.set_string_attr("model_config", detail::config_to_json(model_config));
  std::optional<nn::ConfigMap> compile_config;
  if (options.include_optimizer && model.compiled()) {
    try {  // the user's own loss or metric code has no config: saved uncompiled, as in .keras files
      compile_config = keras::compile_to_keras(model.compile_options(), *model.optimizer());
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unimplemented) throw;
      log(LogLevel::warning, where + ": saved without the compile settings: " + e.what());
    }
  }
  if (compile_config) {
    const nn::ConfigMap& training = *compile_config;
    const auto& opt = std::get<nn::ConfigMap>(training.at("optimizer").value);
    nn::ConfigMap legacy_opt;
    legacy_opt.set("class_name", opt.at("class_name"));
    legacy_opt.set("config", opt.at("config"));
    nn::ConfigMap t;
    for (const auto& [k, v] : training.items())
      if (k != "optimizer") t.set(k, v);
    t.set("optimizer_config", legacy_opt);
    root.set_string_attr("training_config", detail::config_to_json(t));
  }
  h5::Group weights = root.create_group("model_weights");
  weights.set_string_attr("backend", "tensorflow");
  weights.set_string_attr("keras_version", kKerasFormatVersion);
  std::vector<std::string> layer_names;
  for (const nn::Layer* layer : legacy_top_layers(model)) {
    if (std::find(layer_names.begin(), layer_names.end(), layer->name()) != layer_names.end())
      throw Error(where + ": two layers are named '" + layer->name() + "'");
    layer_names.push_back(layer->name());
    h5::Group g = weights.create_group(layer->name());
    h5::Group inner = g.create_group(layer->name());
    std::vector<std::string> names;
    std::set<std::string> used;
    for (const Variable& v : legacy_weight_order(*layer)) {
      std::string name = short_name(v.name());
      for (int i = 1; !used.insert(name).second; ++i) name = short_name(v.name()) + "_" + std::to_string(i);
      inner.write_dataset(name, v.value());
      names.push_back(layer->name() + "/" + name);
    }
    g.set_fixed_string_array_attr("weight_names", names);
  }
  weights.set_fixed_string_array_attr("layer_names", layer_names);
  file.save(path);
}

}  // namespace ef::io
