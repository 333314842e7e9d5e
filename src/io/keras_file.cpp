// Keras 3's `.keras` files (eagerflow/saving/model.h: save_model / load_model by extension or
// content): a ZIP archive (src/io/zip_archive.h) of metadata.json, config.json (Keras'
// serialization, src/io/keras_config.h) and model.weights.h5 (Keras' weights layout,
// eagerflow/saving/keras_weights.h). Written atomically, as eagerflow's own model files.
#include "io/keras_file.h"

#include <ctime>
#include <filesystem>

#include "eagerflow/core/error.h"
#include "eagerflow/core/log.h"
#include "eagerflow/saving/keras_weights.h"
#include "eagerflow/train/distribution.h"
#include "io/json.h"
#include "io/keras_config.h"
#include "io/model_file_parts.h"
#include "io/zip_archive.h"

namespace ef::io {
namespace {

using nn::ConfigMap;
using nn::ConfigValue;


std::string now_text() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d@%H:%M:%S", &tm);
  return buf;
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) b[i] = static_cast<std::byte>(s[i]);
  return b;
}

}  // namespace

void save_keras_model(const train::Model& model, const std::string& path, const SaveModelOptions& options) {
  std::vector<io::NamedTensor> constants;
  nn::LayerConfig ours = detail::model_config_with_constants(model, constants);
  ConfigMap top = keras::model_to_keras(model, ours, constants);
  bool with_compile = options.include_optimizer && model.compiled();
  if (with_compile) {
    // A loss, metric, optimizer or schedule that is the user's own code has no config: the model
    // is saved without its compile settings (Keras' loader then gives it back uncompiled too).
    try {
      top.set("compile_config", keras::compile_to_keras(model.compile_options(), *model.optimizer()));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::unimplemented) throw;
      log(LogLevel::warning, "save_model('" + path + "'): saved without the compile settings and the optimizer's state: " +
                                 e.what());
      with_compile = false;
    }
  }
  ConfigMap metadata;
  metadata.set("keras_version", kKerasFormatVersion);
  metadata.set("date_saved", now_text());
  std::vector<ZipMember> members;
  members.push_back({"metadata.json", bytes_of(detail::config_to_json(metadata))});
  members.push_back({"config.json", bytes_of(detail::config_to_json(top))});
  members.push_back({"model.weights.h5", keras_weights_to_bytes(model, with_compile ? model.optimizer().get() : nullptr)});
  write_file_atomically(path, zip_archive(members));
}

std::shared_ptr<train::Model> load_keras_model(std::span<const std::byte> bytes, const std::string& path,
                                               const LoadModelOptions& options) {
  const std::string where = "load_model('" + path + "')";
  std::vector<ZipMember> members = unzip_archive(bytes, where);
  const ZipMember *config = nullptr, *weights = nullptr;
  for (const auto& m : members) {
    if (m.name == "config.json") config = &m;
    else if (m.name == "model.weights.h5") weights = &m;
  }
  if (!config) throw Error(ErrorCode::data_loss, where + ": the archive has no config.json (not a .keras file?)");
  std::string_view text(reinterpret_cast<const char*>(config->bytes.data()), config->bytes.size());
  ConfigValue top = detail::config_from_json(parse_json(text, where + " config.json", /*allow_reals=*/true));
  const auto* top_map = std::get_if<ConfigMap>(&top.value);
  if (!top_map) throw Error(ErrorCode::data_loss, where + ": config.json is not a JSON object");
  keras::FromKeras fk = keras::model_from_keras(top, where);
  std::shared_ptr<train::Model> model;
  {
    // A config may create no more weight bytes than the weights file could hold.
    ef::detail::WeightBudget budget(weights ? weights->bytes.size() : 0, where);
    std::shared_ptr<nn::Layer> layer = detail::rebuild_from_config(fk.config, fk.constants, options, where);
    model = std::dynamic_pointer_cast<train::Model>(layer);
    if (!model) throw Error(where + ": the file holds a layer (" + layer->type_name() + "), not a model");
    if (!model->built() && fk.build_input) detail::build_model_for(*model, *fk.build_input);
  }
  const ConfigValue* compile = top_map->find("compile_config");
  // An uncompiled model's compile_config is {} (or null).
  bool compiled = options.compile && compile && std::holds_alternative<ConfigMap>(compile->value) &&
                  std::get<ConfigMap>(compile->value).has_value("optimizer");
  if (compiled) {
    train::CompileOptions o = keras::compile_from_keras(std::get<ConfigMap>(compile->value), where);
    try {
      model->compile(std::move(o));
    } catch (const Error& e) {
      throw Error(e.kind(), where + ": compiling the loaded model failed: " + e.what());
    }
  }
  // A model without weights (pooling, reshaping) has nothing to read; Keras' file is then empty.
  if (weights && (!model->weights().empty() || compiled))
    keras_weights_from_bytes(*model, weights->bytes, compiled ? model->optimizer().get() : nullptr, where);
  else if (!model->weights().empty())
    throw Error(ErrorCode::data_loss, where + ": the archive has no model.weights.h5");
  return model;
}

std::shared_ptr<train::Model> load_legacy_h5_model(const std::string& path, const LoadModelOptions& options) {
  const std::string where = "load_model('" + path + "')";
  std::map<std::string, std::string> attrs = legacy_h5_attributes(path);
  auto config_text = attrs.find("model_config");
  if (config_text == attrs.end())
    throw Error(ErrorCode::invalid_argument, where + ": an HDF5 file without a model_config: a weights file "
                                                     "(load it into a model with load_weights)");
  ConfigValue config = detail::config_from_json(parse_json(config_text->second, where + " model_config", true));
  keras::FromKeras fk = keras::model_from_keras(config, where);
  std::shared_ptr<train::Model> model;
  {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    ef::detail::WeightBudget budget(ec ? 0 : size, where);
    std::shared_ptr<nn::Layer> layer = detail::rebuild_from_config(fk.config, fk.constants, options, where);
    model = std::dynamic_pointer_cast<train::Model>(layer);
    if (!model) throw Error(where + ": the file holds a layer (" + layer->type_name() + "), not a model");
    if (!model->built() && fk.build_input) detail::build_model_for(*model, *fk.build_input);
  }
  load_legacy_h5_weights(*model, path);
  // The compile settings (Keras 2's training_config); the optimizer starts afresh (its saved
  // state is Keras 2's, keyed by names this version does not map).
  if (auto training = attrs.find("training_config"); options.compile && training != attrs.end()) {
    ConfigValue t = detail::config_from_json(parse_json(training->second, where + " training_config", true));
    if (auto* m = std::get_if<ConfigMap>(&t.value)) {
      ConfigMap c = *m;
      if (const ConfigValue* o = c.find("optimizer_config")) c.set("optimizer", *o);
      if (c.has_value("optimizer")) {
        try {
          model->compile(keras::compile_from_keras(c, where));
        } catch (const Error& e) {
          throw Error(e.kind(), where + ": compiling the loaded model failed: " + e.what() +
                                    " (load_model(..., compile=False) loads it uncompiled)");
        }
      }
    }
  }
  return model;
}

}  // namespace ef::io

namespace ef {

std::string keras_compile_config(const train::Model& model) {
  if (!model.compiled()) return "";
  try {
    return detail::config_to_json(io::keras::compile_to_keras(model.compile_options(), *model.optimizer()));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::unimplemented) throw;
    log(LogLevel::warning, "save_model: saved without the compile settings and the optimizer's state: " + std::string(e.what()));
    return "";
  }
}

void compile_from_keras_config(train::Model& model, const std::string& text, const std::string& where) {
  nn::ConfigValue v = detail::config_from_json(io::parse_json(text, where + " compile_config", true));
  const auto* m = std::get_if<nn::ConfigMap>(&v.value);
  if (!m) throw Error(ErrorCode::data_loss, where + ": compile_config is not a JSON object");
  try {
    model.compile(io::keras::compile_from_keras(*m, where));
  } catch (const Error& e) {
    if (std::string(e.what()).find(where) != std::string::npos) throw;
    throw Error(e.kind(), where + ": compiling the loaded model failed: " + e.what());
  }
}

}  // namespace ef
