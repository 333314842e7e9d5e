#pragma once
// TensorFlow's checkpoint functions in C++ (tf.train.latest_checkpoint, load_checkpoint,
// list_variables, load_variable) over TF's checkpoint files (eagerflow/io/tensor_bundle.h):
// checkpoints written by tf.train.Checkpoint in TensorFlow or eagerflow's Python API.
//
//   auto prefix = ef::train::latest_checkpoint("run");            // "run/ckpt-3", from run/checkpoint
//   for (auto& [key, shape] : ef::train::list_variables("run")) ...
//   ef::Tensor w = ef::train::load_variable("run",
//   "model/_functional/_operations/1/_kernel/.ATTRIBUTES/VARIABLE_VALUE");
//
// The C++ ef::train::Checkpoint (checkpoint.h) keeps its own safetensors file.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"
#include "eagerflow/io/tensor_bundle.h"

namespace ef::train {

// The checkpoint the folder's state file (TF's text format: model_checkpoint_path: "ckpt-3")
// names, relative paths joined to the folder; nullopt without a state file, or when the
// checkpoint it names has no index.
std::optional<std::string> latest_checkpoint(const std::string& checkpoint_dir,
                                             const std::string& latest_filename = "checkpoint");
// A reader of a checkpoint: a prefix, or a folder (its latest checkpoint; INVALID_ARGUMENT when
// it has none, as TF's ValueError).
io::BundleReader load_checkpoint(const std::string& ckpt_dir_or_prefix);
// Every (key, shape), sorted by key, the object graph's entry included (as TF lists it).
std::vector<std::pair<std::string, Shape>> list_variables(const std::string& ckpt_dir_or_prefix);
// One saved value (a trailing ":0" of `name` is dropped, as TF does).
Tensor load_variable(const std::string& ckpt_dir_or_prefix, const std::string& name);

}  // namespace ef::train
