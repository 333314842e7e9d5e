#pragma once
// Keras 3's `.keras` files, behind ef::save_model / ef::load_model (eagerflow/saving/model.h).
#include <memory>
#include <span>
#include <string>

#include "eagerflow/saving/model.h"

namespace ef::io {

// The Keras release whose formats these files follow (the keras_version they record: Keras reads
// it to pick its loading rules; 3.x files are read by every Keras 3). The Python package's
// subclassed-model writer records the same (eagerflow/keras/_subclassed_file.py).
inline constexpr const char* kKerasFormatVersion = "3.15.1";

void save_keras_model(const train::Model& model, const std::string& path, const SaveModelOptions& options);
std::shared_ptr<train::Model> load_keras_model(std::span<const std::byte> bytes, const std::string& path,
                                               const LoadModelOptions& options);

// Keras' legacy whole-model HDF5 file (model.save("m.h5")), which Keras' legacy loader reads.
void save_legacy_h5_model(const train::Model& model, const std::string& path, const SaveModelOptions& options);
// A Keras 2 / tf.keras whole-model HDF5 file (model_config, model_weights, training_config).
std::shared_ptr<train::Model> load_legacy_h5_model(const std::string& path, const LoadModelOptions& options);

}  // namespace ef::io
