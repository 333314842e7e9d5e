// Model::save_weights / load_weights in Keras' HDF5 files (src/train/keras_weight_files.h).
#include "train/keras_weight_files.h"

#include "eagerflow/saving/keras_weights.h"
#include "eagerflow/train/model.h"

namespace ef::train::detail {

void save_keras_weights_file(const Model& model, const std::string& path) {
  save_keras_weights(model, path, model.optimizer().get());
}

void load_keras_weights_file(Model& model, const std::string& path, bool skip_mismatch) {
  load_keras_weights(model, path, model.optimizer().get(), KerasWeightsLoadOptions{skip_mismatch});
}

void load_legacy_weights_file(Model& model, const std::string& path) { load_legacy_h5_weights(model, path); }

}  // namespace ef::train::detail
