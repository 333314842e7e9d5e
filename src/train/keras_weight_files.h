#pragma once
// Model::save_weights / load_weights for Keras' HDF5 names (".weights.h5": Keras 3's layout;
// other ".h5": Keras 2's legacy files): declared here, implemented by the io module
// (src/io/keras_weight_files.cpp), which speaks HDF5.
#include <string>

namespace ef::train {
class Model;
namespace detail {

void save_keras_weights_file(const Model& model, const std::string& path);
void load_keras_weights_file(Model& model, const std::string& path, bool skip_mismatch);
void load_legacy_weights_file(Model& model, const std::string& path);

}  // namespace detail
}  // namespace ef::train
