#pragma once
// Layer::type_name() for layers whose class lives in a front end (a Python subclass): the front
// end installs a hook that names them ("FlexibleDense"); C++ layers keep their C++ class name.
// Not part of eagerflow.h: only a front end needs it.
#include <string>

namespace ef::nn {

class Layer;

// `hook` returns the layer's class name, or "" to keep the C++ one. nullptr removes it.
void set_layer_type_name_hook(std::string (*hook)(const Layer& layer));

}  // namespace ef::nn
