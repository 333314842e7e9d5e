#pragma once
// Keras 2's view of a model in legacy HDF5 files: its top-level layers (model.layers) and each
// layer's weights in Keras 2's order (trainable, then the others).
#include <vector>

#include "eagerflow/nn/layer.h"

namespace ef {

std::vector<nn::Layer*> legacy_top_layers(const nn::Layer& model);
std::vector<Variable> legacy_weight_order(const nn::Layer& layer);

}  // namespace ef
