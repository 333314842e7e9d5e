// Keras 2 / tf.keras HDF5 files (and Keras 3's legacy `.h5`): the root (or "model_weights" in a
// whole-model file) lists layer_names; each such group lists its weight_names, datasets found
// by those names (nested paths like "dense/kernel:0"). Loading follows Keras' by_name=False
// rule: the model's top-level layers that have weights, in order, take the file's layers that
// have weights, in order, each layer's weights in Keras 2's order (trainable, then the others).
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/saving/keras_weights.h"
#include "eagerflow/trace/context.h"
#include "eagerflow/train/functional.h"
#include "eagerflow/train/model.h"
#include "io/hdf5_file.h"
#include "io/legacy_layers.h"

namespace ef {
namespace {

constexpr ErrorKind kMismatch{ErrorCode::invalid_argument, PythonBuiltin::value_error};

const io::h5::SnapshotGroup& weights_root(const io::h5::Snapshot& file) {
  const io::h5::SnapshotGroup& root = file.root();
  if (root.has_group("model_weights")) return root.group("model_weights");
  return root;
}

// A dataset at a '/'-separated path below `g`, through hard-linked groups only.
Tensor read_path(const io::h5::SnapshotGroup& g, const std::string& path) {
  const io::h5::SnapshotGroup* cur = &g;
  std::size_t start = 0;
  int depth = 0;
  while (true) {
    std::size_t end = path.find('/', start);
    std::string part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (end == std::string::npos) return cur->read_dataset(part);
    if (++depth > 64) fail(ErrorCode::data_loss, g.file().what, "weight name '" + path + "' is nested too deep");
    cur = &cur->group(part);
    start = end + 1;
  }
}

}  // namespace

// The model's top-level layers (Keras 2's model.layers): a Sequential's stack, a functional
// model's layers, else the sub-layers.
std::vector<nn::Layer*> legacy_top_layers(const nn::Layer& model) {
  std::vector<nn::Layer*> out;
  if (const auto* s = dynamic_cast<const train::Sequential*>(&model)) {
    for (const auto& l : s->stack()) out.push_back(l.get());
  } else if (const auto* m = dynamic_cast<const train::Model*>(&model); m && m->functional_graph()) {
    for (const auto& l : m->functional_graph()->layers()) out.push_back(l.get());
  } else {
    for (nn::Layer* l : model.layers()) out.push_back(l);
  }
  return out;
}

std::vector<Variable> legacy_weight_order(const nn::Layer& l) {
  std::vector<Variable> out = l.trainable_weights();
  for (const Variable& v : l.non_trainable_weights()) out.push_back(v);
  return out;
}

void load_legacy_h5_weights(nn::Layer& model, const std::string& path) {
  trace::EagerScope eager;
  io::h5::Snapshot file = io::h5::Snapshot::of_file(path);
  const io::h5::SnapshotGroup& root = weights_root(file);
  auto layer_names = root.string_list_attr("layer_names");
  if (!layer_names)
    throw Error(kMismatch, path + ": not a legacy Keras HDF5 weights file (no layer_names attribute" +
                               std::string(root.path().empty() ? "" : " in '" + root.path() + "'") +
                               "); Keras 3's weights files end in .weights.h5");
  struct FileLayer {
    std::string name;
    const io::h5::SnapshotGroup* group;
    std::vector<std::string> weight_names;
  };
  std::vector<FileLayer> file_layers;
  for (const std::string& name : *layer_names) {
    const io::h5::SnapshotGroup& g = root.group(name);
    auto names = g.string_list_attr("weight_names");
    if (names && !names->empty()) file_layers.push_back({name, &g, *names});
  }
  std::vector<nn::Layer*> layers;
  for (nn::Layer* l : legacy_top_layers(model))
    if (!l->weights().empty()) layers.push_back(l);
  if (layers.empty() && model.layers().empty() && !model.weights().empty()) layers.push_back(&model);
  if (layers.size() != file_layers.size())
    throw Error(kMismatch, path + ": a weight file containing " + std::to_string(file_layers.size()) +
                               " layers with weights, loaded into a model with " + std::to_string(layers.size()) +
                               " layers with weights (" + model.name() + ")");
  std::vector<std::pair<Variable, Tensor>> assignments;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const FileLayer& fl = file_layers[i];
    std::vector<Variable> vars = legacy_weight_order(*layers[i]);
    if (vars.size() != fl.weight_names.size())
      throw Error(kMismatch, path + ": layer #" + std::to_string(i) + " (named '" + layers[i]->name() +
                                 "' in the model, '" + fl.name + "' in the file) expects " + std::to_string(vars.size()) +
                                 " weights, but the saved weights have " + std::to_string(fl.weight_names.size()) +
                                 " elements");
    for (std::size_t j = 0; j < vars.size(); ++j) {
      Tensor t = read_path(*fl.group, fl.weight_names[j]);
      const Variable& v = vars[j];
      if (t.shape() != v.shape())
        throw Error(kMismatch, path + ": layer '" + layers[i]->name() + "' weight '" + v.name() + "' has shape " +
                                   v.shape().str() + ", but the file's '" + fl.name + "/" + fl.weight_names[j] +
                                   "' has shape " + t.shape().str());
      if (t.dtype() != v.dtype()) {
        if (!((is_floating(t.dtype()) && is_floating(v.dtype())) || (is_integer(t.dtype()) && is_integer(v.dtype()))))
          throw Error(kMismatch, path + ": '" + fl.name + "/" + fl.weight_names[j] + "' is " + std::string(name_of(t.dtype())) +
                                     ", weight '" + v.name() + "' is " + std::string(name_of(v.dtype())));
        t = cast(t, v.dtype());
      }
      assignments.emplace_back(v, std::move(t));
    }
  }
  for (auto& [v, t] : assignments) v.assign(t);
}

std::map<std::string, std::string> legacy_h5_attributes(const std::string& path) {
  io::h5::Snapshot file = io::h5::Snapshot::of_file(path);
  const io::h5::SnapshotGroup& root = file.root();
  std::map<std::string, std::string> out;
  for (const char* key : {"model_config", "training_config", "keras_version", "backend"})
    if (auto v = root.string_attr(key)) out[key] = *v;
  return out;
}

bool is_legacy_h5_file(const std::string& path) {
  io::h5::Snapshot file = io::h5::Snapshot::of_file(path);
  const io::h5::SnapshotGroup& root = file.root();
  if (root.has_attr("layer_names")) return true;
  return root.has_group("model_weights") && root.group("model_weights").has_attr("layer_names");
}

}  // namespace ef
