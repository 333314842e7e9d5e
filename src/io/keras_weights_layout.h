#pragma once
// Where Keras 3 keeps each variable of a model in its weights file (saving_lib's _save_state):
// every saveable object (layer, optimizer) at an inner path P gets the group "P/vars" (the
// attribute "name" set to the object's name) with its own variables as datasets "0", "1", ...;
// a layer's sub-objects follow at "P/<attribute name>", and lists of them (a model's `layers`)
// at "P/<list>/<snake_case class name>" numbered "_1", "_2" among equal class names.
//
// eagerflow's layers keep the same variables in a different structure (an LSTM holds its
// weights itself where Keras' holds them in its `cell`; MultiHeadAttention names its
// projections "query" where Keras' attribute is `query_dense`): the table in
// keras_weights_layout.cpp maps each such layer kind, one row per kind.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eagerflow/nn/layer.h"
#include "eagerflow/optim/optimizer.h"
#include "eagerflow/saving/keras_child_names.h"

namespace ef::io::keras {

// One Keras saveable: the group `path` + "/vars" ("vars" for the root) holds `vars` in order.
struct Entry {
  std::string path;
  std::string name;             // the group's "name" attribute
  std::string what;             // the eagerflow layer it comes from, for messages
  std::vector<Variable> vars;
};

// Keras' to_snake_case ("PReLU" -> "p_re_lu", "Conv2DTranspose" -> "conv2d_transpose").
std::string snake_case(const std::string& class_name);

// Every entry of `model` (the root entry first), in Keras' visiting order.
std::vector<Entry> model_entries(const nn::Layer& model);

// The optimizer's entry ("optimizer"): iterations, the learning rate when it is a constant,
// then the slots in Keras' creation order for `trainable` (the model's trainable variables).
// The optimizer's slots must exist (Optimizer::build); a missing one is an error.
Entry optimizer_entry(const optim::Optimizer& optimizer, const std::vector<Variable>& trainable);

}  // namespace ef::io::keras
