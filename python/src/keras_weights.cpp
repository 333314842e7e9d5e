// Keras' HDF5 weight files from Python: model.save_weights / load_weights pick the format by the
// file name in C++ (Model::save_weights); this file tells the C++ layout how a layer written in
// Python names its sub-layers (its attributes, as Keras' saving_lib walks them), and exposes the
// file functions to the package.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <functional>
#include <set>

#include "bindings.h"
#include "eagerflow/saving/keras_child_names.h"
#include "eagerflow/saving/keras_weights.h"
#include "py_layer.h"

namespace efpy {
namespace {

// Keras' _name_key: private attributes are visited last.
std::string name_key(const std::string& name) { return !name.empty() && name[0] == '_' ? "~" + name : name; }

std::optional<std::vector<ef::KerasChild>> python_children(const ef::nn::Layer& layer) {
  if (!dynamic_cast<const PyLayerAccess*>(&layer) || !Py_IsInitialized()) return std::nullopt;
  nb::gil_scoped_acquire gil;
  nb::handle self = nb::find(&layer);
  if (!self.is_valid() || !nb::hasattr(self, "__dict__")) return std::nullopt;
  nb::dict attrs = nb::borrow<nb::dict>(self.attr("__dict__"));
  std::vector<std::string> keys;
  for (auto [k, v] : attrs)
    if (nb::isinstance<nb::str>(k)) keys.push_back(nb::cast<std::string>(k));
  std::sort(keys.begin(), keys.end(), [](const std::string& a, const std::string& b) { return name_key(a) < name_key(b); });
  std::vector<ef::KerasChild> out;
  std::set<const ef::nn::Layer*> placed;
  // Sub-layers, and layers that hold sub-layers' places without being tracked themselves (the
  // StackedRNNCells of an RNN, whose cells the RNN tracks): Keras walks every layer attribute.
  auto as_kid = [&](nb::handle v) -> const ef::nn::Layer* {
    if (!nb::isinstance<ef::nn::Layer>(v)) return nullptr;
    const ef::nn::Layer* l = nb::cast<const ef::nn::Layer*>(v);
    return l;
  };
  // Keras' _save_container_state: the layers of a list (tuple, dict's values) by class, nested
  // lists as "container", "container_1", ... (bounded depth: a list may hold itself).
  std::function<void(nb::handle, const std::string&, int)> walk_container = [&](nb::handle v, const std::string& prefix,
                                                                                 int depth) {
    nb::object items;
    if (nb::isinstance<nb::dict>(v)) items = v.attr("values")();
    else if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) items = nb::borrow(v);
    else return;
    if (depth > 16) return;
    int containers = 0;
    for (nb::handle item : items) {
      if (const ef::nn::Layer* l = as_kid(item)) {
        if (placed.insert(l).second) out.push_back({prefix, true, l});
      } else if (nb::isinstance<nb::dict>(item) || nb::isinstance<nb::list>(item) || nb::isinstance<nb::tuple>(item)) {
        walk_container(item, prefix + "/container" + (containers ? "_" + std::to_string(containers) : ""), depth + 1);
        ++containers;
      }
    }
  };
  for (const std::string& key : keys) {
    if (key.rfind("__", 0) == 0) continue;
    nb::object v = attrs[key.c_str()];
    if (const ef::nn::Layer* l = as_kid(v)) {
      if (placed.insert(l).second) out.push_back({key, false, l});
      continue;
    }
    walk_container(v, key, 0);
  }
  return out;
}

}  // namespace

void init_keras_weights(nb::module_& m) {
  ef::set_keras_child_names_hook(python_children);
  m.def("_is_hdf5_file", &ef::is_hdf5_file, "path"_a);
  m.def("_is_legacy_h5_file", &ef::is_legacy_h5_file, "path"_a);
  m.def("_legacy_h5_attributes", &ef::legacy_h5_attributes, "path"_a);
}

}  // namespace efpy
