// eagerflow._core: module entry. Each concept registers its bindings from its own file.
#include <cstdlib>
#include <string_view>

#include "bindings.h"

namespace efpy {
void init_dataset(nb::module_& m);  // dataset.cpp: ef.data.Dataset (ef._core._data)
void init_convert(nb::module_& m);  // convert.cpp: ef.ConversionError
void init_device(nb::module_& m);   // device.cpp: ef.device, Tensor.device
void init_tensor_bundle(nb::module_& m);  // tensor_bundle.cpp: TF's checkpoint files (_core._bundle)
}

NB_MODULE(_core, m) {
  m.doc() = "eagerflow's C++ core (nanobind)";
  // A model held at module level whose layers are written in Python forms a cycle through C++
  // (the model keeps the layer, the layer's class its functions, their globals the model) that
  // Python's collector cannot see; at exit nanobind then reports "leaked instances" although
  // nothing is wrong while the program runs (del model frees it). EF_NB_LEAK_WARNINGS=1 turns
  // the report back on for debugging the bindings.
  if (const char* v = std::getenv("EF_NB_LEAK_WARNINGS"); !(v && std::string_view(v) == "1"))
    nanobind::set_leak_warnings(false);
  efpy::init_errors(m);
  efpy::init_convert(m);
  efpy::init_tensor(m);
  efpy::init_device(m);
  efpy::init_ops(m);
  efpy::init_sequence_ops(m);
  efpy::init_math(m);
  efpy::init_linalg(m);
  efpy::init_strings(m);
  efpy::init_complex(m);
  efpy::init_host_call(m);
  efpy::init_image_codecs(m);
  efpy::init_array_ops(m);
  efpy::init_image(m);
  efpy::init_random_dists(m);
  efpy::init_function(m);
  efpy::init_autodiff(m);
  efpy::init_layers(m);
  efpy::init_layers_keras(m);
  efpy::init_dtype_policy(m);
  efpy::init_layer_args(m);
  efpy::init_attention(m);
  efpy::init_fused_ops(m);
  efpy::init_recurrent(m);
  efpy::init_training(m);
  efpy::init_metrics(m);
  efpy::init_callbacks(m);
  efpy::init_io(m);
  efpy::init_onnx_import(m);
  efpy::init_log(m);
  efpy::init_transforms(m);
  efpy::init_custom(m);
  efpy::init_saving_keras(m);
  efpy::init_keras_weights(m);
  efpy::init_scan(m);
  efpy::init_dist(m);
  efpy::init_dataset(m);
  efpy::init_summary(m);
  efpy::init_tensor_bundle(m);
}
