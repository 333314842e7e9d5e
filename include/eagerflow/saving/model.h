#pragma once
// Whole models in one file, as Keras' `.keras`: the architecture as a config (every layer's
// get_config, eagerflow/nn/layer_config.h), the weights, the compile settings (optimizer with
// its hyperparameters and learning-rate schedule, losses with their parameters, loss weights,
// metrics by name) and the optimizer's state (slots, step counter), so that the loaded model
// continues training exactly as the original would have.
//
//   ef::save_model(*model, "m.efmodel");
//   std::shared_ptr<ef::train::Model> copy = ef::load_model("m.efmodel");
//   copy->fit(x, y);  // same steps as model->fit(x, y) would take
//
// A path ending in `.keras` is written as Keras 3 writes it (a ZIP of config.json in Keras'
// serialization and model.weights.h5 in Keras' weights layout), so that Keras loads it; load_model
// reads those files whoever wrote them. `.h5` / `.hdf5` get Keras' legacy HDF5 format (without
// the optimizer's state), which load_model reads too, from Keras 2 as well. Other paths get
// eagerflow's own format (`.efmodel`).
//
// Sequential and functional models (ef::train::Functional: inputs, layer calls, shared layers,
// ops on Keras tensors, nested models) are saved by structure. Other layers by their config:
// a layer (or subclassed Model) without one, or whose class is not registered at load time,
// is an ef::Error saying what to override or register. The format (docs/efmodel_format.md) is
// versioned; saving is atomic (the previous file survives a failed save); a damaged file is an
// ef::Error naming it, and a file from a newer format version says so.
#include <functional>
#include <memory>
#include <string>

#include "eagerflow/nn/layer_config.h"
#include "eagerflow/train/model.h"

namespace ef {

struct SaveModelOptions {
  // The compile settings and the optimizer's state; false saves the architecture and weights
  // only (for a model compiled with a loss, metric or optimizer that has no config).
  bool include_optimizer = true;
};

struct LoadModelOptions {
  // Compile the model as it was saved and restore the optimizer's state (when the file has them).
  bool compile = true;
  // Set the global random generator (ef::random) to its state when the model was saved. Off by
  // default: loading a model does not change the random numbers the program draws next.
  bool restore_random_state = false;
  // Makes the empty Sequential or functional model ("Sequential" / "Functional", its name) that
  // the loader fills (Sequential::add, Model::init_functional): the Python package passes its
  // own classes. Empty: ef::train::Sequential and ef::train::Functional.
  std::function<std::shared_ptr<train::Model>(const std::string& class_name, const std::string& name)> make_model;
};

// The newest format version this eagerflow writes and reads (2: the standard FNV-1a offset
// basis in the checksum; version 1 files, with the old basis, are still read).
inline constexpr int kModelFormatVersion = 2;

void save_model(const train::Model& model, const std::string& path, const SaveModelOptions& options = {});
std::shared_ptr<train::Model> load_model(const std::string& path, const LoadModelOptions& options = {});

// The architecture alone: {"class_name": ..., "config": ...} (Keras' get_config of a model,
// with its layers' configs nested), and a new model (fresh weights) from it. A functional
// model's constant op inputs need the file's tensors: model_from_config is for models without.
// Of `options`, only make_model is used (the Python package's own Sequential / Model classes).
nn::LayerConfig model_config(const nn::Layer& model);
std::shared_ptr<nn::Layer> model_from_config(const nn::LayerConfig& config, const LoadModelOptions& options = {});
// The same as JSON text. model_to_json writes eagerflow's configs; model_to_keras_json Keras 3's
// serialization (keras' Model.to_json, the config.json of .keras files); model_from_json reads both.
std::string model_to_json(const nn::Layer& model);
std::string model_to_keras_json(const nn::Layer& model);
std::shared_ptr<nn::Layer> model_from_json(const std::string& json, const LoadModelOptions& options = {});

// Keras' compile_config of a compiled model as JSON text ("" when it is not compiled, or when a
// loss, metric or schedule is the user's own code), and a model compiled from such text: what
// .keras files hold, for models whose architecture is saved by other means (Python subclasses).
std::string keras_compile_config(const train::Model& model);
void compile_from_keras_config(train::Model& model, const std::string& compile_config_json, const std::string& where);

}  // namespace ef
