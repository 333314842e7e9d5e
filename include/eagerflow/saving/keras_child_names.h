#pragma once
// For front ends (the Python package): how a layer written in the front end names its
// sub-layers in Keras' weights layout (eagerflow/saving/keras_weights.h). Keras walks a layer's
// attributes (sorted by name, private ones last) and saves each sub-layer at
// "<path>/<attribute>", and the layers in a list attribute at "<path>/<attribute>/<snake_case
// class>[_n]". C++ layers use their own names. Not part of eagerflow.h.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ef::nn {
class Layer;
}

namespace ef {

struct KerasChild {
  std::string attribute;
  bool in_list = false;  // one of the layers of a list (or tuple, or dict) attribute
  const nn::Layer* layer = nullptr;
};
// The hook returns nullopt for layers it does not know (C++ ones). nullptr removes it.
using KerasChildNamesHook = std::function<std::optional<std::vector<KerasChild>>(const nn::Layer& layer)>;
void set_keras_child_names_hook(KerasChildNamesHook hook);

}  // namespace ef
