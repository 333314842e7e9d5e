#pragma once
// Shared declarations of the eagerflow._core bindings (python/src/*.cpp).
#include <nanobind/nanobind.h>

#include <eagerflow/eagerflow.h>

namespace efpy {
namespace nb = nanobind;
using namespace nb::literals;

void init_errors(nb::module_& m);
void init_tensor(nb::module_& m);
void init_ops(nb::module_& m);
void init_sequence_ops(nb::module_& m);
void init_array_ops(nb::module_& m);  // array_ops.cpp: TF's array functions as _core._array
void init_linalg(nb::module_& m);  // linalg_ops.cpp: ef::linalg as _core._linalg
void init_host_call(nb::module_& m);  // host_call.cpp: ef::host_call as _core._host_call (tf.py_function)
void init_complex(nb::module_& m);  // complex_ops.cpp: complex tensors' functions as _core._complex
void init_strings(nb::module_& m);  // strings_ops.cpp: ef::strings as _core._strings
void init_image_codecs(nb::module_& m);  // image_codec_ops.cpp: ef::io's image codecs as _core._image_codecs
void init_math(nb::module_& m);  // math_ops.cpp: ef.math's compositions as _core._math  // sequence_ops.cpp: issue 18's ops (after init_ops: joins ef.random)
void init_random_dists(nb::module_& m);  // random_dists.cpp: tf.random's gamma, poisson, ..., candidate samplers as _core._random_dists
void init_image(nb::module_& m);  // image_ops.cpp: ef.image (tf.image) as _core._image
void init_function(nb::module_& m);
void init_autodiff(nb::module_& m);
void init_layers(nb::module_& m);
void init_layers_keras(nb::module_& m);  // after init_layers: Keras layers, regularizers, constraints
void init_recurrent(nb::module_& m);  // recurrent.cpp: SimpleRNN, LSTM, GRU, Bidirectional, Conv1D, 1-D pooling, masks
void init_attention(nb::module_& m);  // attention.cpp: ef.nn, MultiHeadAttention, PositionalEmbedding
void init_fused_ops(nb::module_& m);  // fused_ops.cpp: ef.nn.layer_norm
void init_training(nb::module_& m);
void init_optimizers(nb::module_& train);  // optimizers.cpp: Keras optimizers and schedules, into _train
void init_metrics(nb::module_& m);  // after init_training: joins its _train submodule
void init_callbacks(nb::module_& m);  // after init_training: binds into its _train submodule
void init_io(nb::module_& m);
void init_onnx_import(nb::module_& m);  // onnx_import.cpp: ef.onnx.load_model; after init_io
void init_log(nb::module_& m);
void init_transforms(nb::module_& m);
void init_custom(nb::module_& m);
void init_saving_keras(nb::module_& m);  // saving_keras.cpp: ef.keras.saving
void init_keras_weights(nb::module_& m);  // keras_weights.cpp: Keras' HDF5 weight files
void init_scan(nb::module_& m);  // scan.cpp: ef.scan (pytrees in python/eagerflow/_scan.py)
void init_dist(nb::module_& m);  // dist.cpp: ef.dist (MPI collectives, DataParallel); after init_training
void init_summary(nb::module_& m);  // summary.cpp: ef.summary; after init_training: TensorBoard joins _train
void init_dtype_policy(nb::module_& m);  // dtype_policy.cpp: DTypePolicy, set_global_policy; after init_layers
void init_layer_args(nb::module_& m);  // layer_args.cpp: Layer._ef_declared_input_shape; after init_layers

// Hands the queued ef log warnings (retracing) to Python's `warnings` (log.cpp). Call with the
// GIL held and no ef lock held, after C++ work that may have traced.
void drain_log_warnings();

// A tensor from anything a tensor is accepted as: an ef.Tensor, a NumPy array (or any object
// with the buffer protocol / __array__; always copied), a Python scalar or a nested list, with
// TF's dtype rules and no silent narrowing (convert.cpp). `like` gives Python scalars their
// dtype (a float next to a float64 tensor is float64), as TF's weak types do.
ef::Tensor to_tensor(nb::handle h, const ef::Tensor* like = nullptr);
ef::DType dtype_from_py(nb::handle h);
// A tensor's values as TF prints them in a repr or str (tensor.cpp).
std::string tensor_values_text(const ef::Tensor& t, bool is_repr);
// x / y as TF's truediv: integer operands divide as float64 (tensor.cpp).
ef::Tensor true_divide(const ef::Tensor& x, const ef::Tensor& y);
// Two operands of a binary op: a Python number takes the other operand's dtype (ops.cpp).
std::pair<ef::Tensor, ef::Tensor> tensor_operands(nb::handle a, nb::handle b);
nb::object dtype_to_py(ef::DType d);
}  // namespace efpy
