#pragma once
// Keras' weight files in HDF5, read and written through the HDF5 C library:
// - Keras 3's layout (model.save_weights("m.weights.h5"), and model.weights.h5 inside `.keras`):
//   "layers/<name>/vars/<i>" per layer as Keras' saving_lib walks the model, "optimizer/vars/<i>"
//   for the optimizer (iterations, learning rate, slots in Keras' order). eagerflow maps its
//   layers onto Keras' structure (an LSTM's weights are in Keras' `cell`, say), so files move
//   both ways between eagerflow and Keras 3 for models of the same architecture.
// - Keras 2 / tf.keras legacy HDF5 files (weights-only, or whole models with "model_weights"),
//   read only: layers with weights in order, matched to the file's layer_names in order.
// Loading checks everything first (every missing group, count or shape is named in one
// ef::Error, as Keras' messages do) and assigns only when all fits. Damaged or hostile files are
// ef::Errors naming the file and the object.
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/nn/layer.h"
#include "eagerflow/optim/optimizer.h"

namespace ef {

// Keras 3's weights file (model.save_weights("m.weights.h5"), and model.weights.h5 inside .keras).
// optimizer == nullptr: no optimizer variables written / read. Loading into an optimizer that
// has no slots yet builds them first (for the model's trainable weights); a file whose optimizer
// has another number of variables leaves the optimizer as it was (Keras only warns then).
void save_keras_weights(const nn::Layer& model, const std::string& path, const optim::Optimizer* optimizer = nullptr);
void load_keras_weights(nn::Layer& model, const std::string& path, optim::Optimizer* optimizer = nullptr);
std::vector<std::byte> keras_weights_to_bytes(const nn::Layer& model, const optim::Optimizer* optimizer);
void keras_weights_from_bytes(nn::Layer& model, std::span<const std::byte> h5, optim::Optimizer* optimizer,
                              const std::string& what);

struct KerasWeightsLoadOptions {
  // Keras' skip_mismatch: load what fits, leave the rest.
  bool skip_mismatch = false;
};
void load_keras_weights(nn::Layer& model, const std::string& path, optim::Optimizer* optimizer,
                        const KerasWeightsLoadOptions& options);

// Keras 2 / tf.keras legacy HDF5: weights-only files (root attrs layer_names, each group's weight_names)
// and whole-model files (same under the group "model_weights").
void load_legacy_h5_weights(nn::Layer& model, const std::string& path);
// The root attributes of a legacy file as text (model_config, training_config, keras_version, backend), absent ones omitted.
std::map<std::string, std::string> legacy_h5_attributes(const std::string& path);
bool is_hdf5_file(const std::string& path);  // the HDF5 signature
// Whether an HDF5 file is in the legacy layout (a layer_names attribute at its root or in model_weights).
bool is_legacy_h5_file(const std::string& path);

}  // namespace ef
