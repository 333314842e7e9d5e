// Recurrent and 1-D layers from Python (eagerflow/nn/recurrent.h, eagerflow/nn/conv1d.h):
// ef.keras.layers.SimpleRNN / LSTM / GRU / Bidirectional with Keras 3's arguments and call
// (initial_state, mask, return_state as a list), Conv1D and the 1-D / global pooling layers,
// Keras masks (ef.keras.layers.Embedding(mask_zero=True) is python/eagerflow/_layers.py).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "layer_args.h"

namespace efpy {
namespace {

using ef::Tensor;
using ef::nn::Layer;
using ef::nn::RNNBase;

ef::nn::ActivationFn activation_named(nb::handle a, const char* what) {
  if (a.is_none()) return {};
  if (!PyUnicode_Check(a.ptr()))
    throw nb::type_error((std::string(what) + " must be a Keras activation name (\"tanh\", \"sigmoid\", \"relu\", ...) or None").c_str());
  return ef::nn::ActivationFn(nb::cast<std::string>(a));
}

void reject_nonzero(double v, const char* what) {
  if (v != 0.0) throw nb::value_error((std::string(what) + " is not supported yet (pass 0)").c_str());
}

std::vector<Tensor> tensors_of(nb::handle h) {
  std::vector<Tensor> out;
  if (h.is_none()) return out;
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()))
    for (auto x : h) out.push_back(to_tensor(x));
  else
    out.push_back(to_tensor(h));
  return out;
}

// Keras' layer(inputs, initial_state=None, mask=None, training=None): the output, or a list
// [output, *states] with return_state.
nb::object rnn_call(nb::handle self, nb::handle inputs, nb::handle initial_state, nb::handle mask,
                    std::optional<bool> training) {
  Layer& layer = nb::cast<Layer&>(self);
  std::vector<Tensor> xs = tensors_of(inputs);
  if (xs.size() != 1) throw nb::value_error((layer.name() + ": takes one input tensor [batch, time, features]").c_str());
  std::vector<Tensor> states = tensors_of(initial_state);
  if (!mask.is_none()) {
    Tensor m = to_tensor(mask);
    if (m.dtype() != ef::DType::bool_) m = ef::cast(m, ef::DType::bool_);
    xs[0] = ef::identity(xs[0]);  // the mask belongs to this call's input only
    ef::nn::set_mask(xs[0], m);
  }
  xs.insert(xs.end(), states.begin(), states.end());
  std::shared_ptr<Layer> keep;
  if (ef::detail::any_keras_tensor(xs)) keep = nb::cast<std::shared_ptr<Layer>>(self);
  std::vector<Tensor> outs;
  {
    nb::gil_scoped_release release;
    outs = layer.call_outputs(xs, training);
  }
  drain_log_warnings();
  if (outs.size() == 1) return nb::cast(outs[0]);
  nb::list l;
  for (auto& o : outs) l.append(nb::cast(o));
  return l;
}

template <class T>
void bind_rnn(nb::module_& m, const char* name, bool gated, const char* doc) {
  nb::class_<T, RNNBase>(m, name, doc)
      .def(
          "__init__",
          [gated](T* self, std::int64_t units, nb::handle activation, nb::handle recurrent_activation, bool use_bias,
                  bool return_sequences, bool return_state, bool go_backwards, bool unit_forget_bias, bool reset_after,
                  double dropout, double recurrent_dropout, bool stateful, bool unroll, nb::handle dtype,
                  std::optional<std::string> name, nb::handle kernel_initializer, nb::handle recurrent_initializer,
                  nb::handle bias_initializer) {
            if (!(dropout >= 0.0 && dropout < 1.0))
              throw nb::value_error(("dropout must be in [0, 1), got " + std::to_string(dropout)).c_str());
            reject_nonzero(recurrent_dropout, "recurrent_dropout");
            if (stateful) throw nb::value_error("stateful=True is not supported");
            (void)unroll;  // a hint in Keras; the fused op or the unrolled path is chosen by what applies
            ef::nn::RNNOptions o;
            o.activation = activation_named(activation, "activation");
            if (gated) o.recurrent_activation = activation_named(recurrent_activation, "recurrent_activation");
            o.use_bias = use_bias;
            o.return_sequences = return_sequences;
            o.return_state = return_state;
            o.go_backwards = go_backwards;
            o.unit_forget_bias = unit_forget_bias;
            o.reset_after = reset_after;
            o.dropout = dropout;
            if (!dtype.is_none()) o.dtype = dtype_from_py(dtype);
            if (!kernel_initializer.is_none()) o.kernel_initializer = initializer_arg(kernel_initializer);
            if (!recurrent_initializer.is_none()) o.recurrent_initializer = initializer_arg(recurrent_initializer);
            if (!bias_initializer.is_none()) o.bias_initializer = initializer_arg(bias_initializer);
            new (self) T(units, o, name.value_or(""));
          },
          nb::arg("units"), nb::arg("activation").none() = "tanh", nb::arg("recurrent_activation").none() = "sigmoid",
          nb::arg("use_bias") = true, nb::arg("return_sequences") = false, nb::arg("return_state") = false,
          nb::arg("go_backwards") = false, nb::arg("unit_forget_bias") = true, nb::arg("reset_after") = true,
          nb::arg("dropout") = 0.0, nb::arg("recurrent_dropout") = 0.0, nb::arg("stateful") = false,
          nb::arg("unroll") = false, nb::arg("dtype") = nb::none(), nb::arg("name") = nb::none(),
          nb::arg("kernel_initializer") = nb::none(), nb::arg("recurrent_initializer") = nb::none(),
          nb::arg("bias_initializer") = nb::none());
}

}  // namespace

void init_recurrent(nb::module_& m) {
  nb::class_<RNNBase, Layer>(m, "RNNBase", "What SimpleRNN, LSTM and GRU share (eagerflow/nn/recurrent.h).")
      .def("__call__", &rnn_call, nb::arg("inputs"), nb::arg("initial_state") = nb::none(), nb::arg("mask") = nb::none(),
           nb::arg("training") = nb::none())
      .def_prop_ro("units", &RNNBase::units)
      .def_prop_ro("kernel", &RNNBase::kernel)
      .def_prop_ro("recurrent_kernel", &RNNBase::recurrent_kernel)
      .def_prop_ro("bias", &RNNBase::bias)
      .def_prop_ro("return_sequences", [](const RNNBase& l) { return l.options().return_sequences; })
      .def_prop_ro("return_state", [](const RNNBase& l) { return l.options().return_state; })
      .def_prop_ro("go_backwards", [](const RNNBase& l) { return l.options().go_backwards; })
      .def_prop_rw(
          "allow_fused", [](const RNNBase& l) { return l.options().allow_fused; },
          [](RNNBase& l, bool v) { l.options().allow_fused = v; },
          "False: always the unrolled path (the fused oneDNN op runs LSTM/GRU with tanh/sigmoid, float32, no mask)");
  bind_rnn<ef::nn::SimpleRNN>(m, "SimpleRNN", false, "Keras' SimpleRNN: h = activation(x kernel + h recurrent_kernel + bias).");
  bind_rnn<ef::nn::LSTM>(m, "LSTM", true, "Keras' LSTM (gates i, f, c, o; weights in Keras' layouts).");
  bind_rnn<ef::nn::GRU>(m, "GRU", true, "Keras' GRU (gates z, r, h; reset_after=True: bias [2, 3 * units]).");

  nb::class_<ef::nn::Bidirectional, Layer>(m, "Bidirectional")
      .def(
          "__init__",
          [](ef::nn::Bidirectional* self, std::shared_ptr<RNNBase> layer, const std::string& merge_mode,
             nb::handle backward_layer, std::optional<std::string> name) {
            if (!backward_layer.is_none()) throw nb::value_error("Bidirectional: backward_layer is not supported (pass None)");
            new (self) ef::nn::Bidirectional(std::move(layer), merge_mode, name.value_or(""));
          },
          nb::arg("layer"), nb::arg("merge_mode") = "concat", nb::arg("backward_layer") = nb::none(),
          nb::arg("name") = nb::none())
      .def("__call__", &rnn_call, nb::arg("inputs"), nb::arg("initial_state") = nb::none(), nb::arg("mask") = nb::none(),
           nb::arg("training") = nb::none())
      .def_prop_ro("forward_layer", [](ef::nn::Bidirectional& l) -> RNNBase& { return l.forward_layer(); },
                   nb::rv_policy::reference_internal)
      .def_prop_ro("backward_layer", [](ef::nn::Bidirectional& l) -> RNNBase& { return l.backward_layer(); },
                   nb::rv_policy::reference_internal)
      .def_prop_ro("merge_mode", &ef::nn::Bidirectional::merge_mode);

  nb::class_<ef::nn::Conv1D, Layer>(m, "Conv1D")
      .def(
          "__init__",
          [](ef::nn::Conv1D* self, std::int64_t filters, std::int64_t kernel_size, std::int64_t strides,
             const std::string& padding, const std::string& data_format, std::int64_t dilation_rate, nb::handle activation,
             bool use_bias, std::optional<std::string> name, nb::handle kernel_initializer, nb::handle bias_initializer) {
            if (data_format != "channels_last")
              throw nb::value_error("Conv1D: only data_format='channels_last' is supported");
            ef::nn::Conv1DOptions o;
            o.strides = strides;
            o.padding = padding;
            o.dilation_rate = dilation_rate;
            o.activation = activation_named(activation, "activation");
            o.use_bias = use_bias;
            if (!kernel_initializer.is_none()) o.kernel_initializer = initializer_arg(kernel_initializer);
            if (!bias_initializer.is_none()) o.bias_initializer = initializer_arg(bias_initializer);
            new (self) ef::nn::Conv1D(filters, kernel_size, o, name.value_or(""));
          },
          nb::arg("filters"), nb::arg("kernel_size"), nb::arg("strides") = 1, nb::arg("padding") = "valid",
          nb::arg("data_format") = "channels_last", nb::arg("dilation_rate") = 1, nb::arg("activation") = nb::none(),
          nb::arg("use_bias") = true, nb::arg("name") = nb::none(), nb::arg("kernel_initializer") = nb::none(),
          nb::arg("bias_initializer") = nb::none())
      .def_prop_ro("kernel", &ef::nn::Conv1D::kernel)
      .def_prop_ro("bias", &ef::nn::Conv1D::bias);
  auto pooling = [&](auto tag, const char* name) {
    using P = typename decltype(tag)::type;
    nb::class_<P, ef::nn::Pooling1D>(m, name).def(
        "__init__",
        [](P* self, std::int64_t pool_size, std::optional<std::int64_t> strides, const std::string& padding,
           std::optional<std::string> name) { new (self) P(pool_size, strides, padding, name.value_or("")); },
        nb::arg("pool_size") = 2, nb::arg("strides") = nb::none(), nb::arg("padding") = "valid", nb::arg("name") = nb::none());
  };
  nb::class_<ef::nn::Pooling1D, Layer>(m, "Pooling1D");
  pooling(std::type_identity<ef::nn::MaxPooling1D>{}, "MaxPooling1D");
  pooling(std::type_identity<ef::nn::AveragePooling1D>{}, "AveragePooling1D");
  nb::class_<ef::nn::GlobalPooling1D, Layer>(m, "GlobalPooling1D");
  nb::class_<ef::nn::GlobalAveragePooling1D, ef::nn::GlobalPooling1D>(m, "GlobalAveragePooling1D")
      .def(
          "__init__",
          [](ef::nn::GlobalAveragePooling1D* self, bool keepdims, std::optional<std::string> name) {
            new (self) ef::nn::GlobalAveragePooling1D(keepdims, name.value_or(""));
          },
          nb::arg("keepdims") = false, nb::arg("name") = nb::none());
  nb::class_<ef::nn::GlobalMaxPooling1D, ef::nn::GlobalPooling1D>(m, "GlobalMaxPooling1D")
      .def(
          "__init__",
          [](ef::nn::GlobalMaxPooling1D* self, bool keepdims, std::optional<std::string> name) {
            new (self) ef::nn::GlobalMaxPooling1D(keepdims, name.value_or(""));
          },
          nb::arg("keepdims") = false, nb::arg("name") = nb::none());
  nb::class_<ef::nn::GlobalMaxPooling2D, Layer>(m, "GlobalMaxPooling2D")
      .def(
          "__init__",
          [](ef::nn::GlobalMaxPooling2D* self, bool keepdims, std::optional<std::string> name) {
            new (self) ef::nn::GlobalMaxPooling2D(keepdims, name.value_or(""));
          },
          nb::arg("keepdims") = false, nb::arg("name") = nb::none());

  // Keras masks: the mask a tensor carries (None when none), and setting one.
  m.def(
      "_mask_of",
      [](nb::handle x) -> nb::object {
        Tensor m = ef::nn::mask_of(to_tensor(x));
        return m.defined() ? nb::cast(m) : nb::none();
      },
      nb::arg("x"));
  m.def(
      "_set_mask", [](nb::handle x, nb::handle mask) {
        Tensor t = to_tensor(x);
        ef::nn::set_mask(t, mask.is_none() ? Tensor() : to_tensor(mask));
      },
      nb::arg("x"), nb::arg("mask"));
  // Embedding.mask_zero on the C++ class too (a loaded model's Embedding is one).
  nb::handle embedding = nb::type<ef::nn::Embedding>();
  if (embedding.is_valid())
    nb::setattr(embedding, "mask_zero",
                nb::module_::import_("builtins")
                    .attr("property")(nb::cpp_function([](ef::nn::Embedding& e) { return e.mask_zero; }),
                                      nb::cpp_function([](ef::nn::Embedding& e, bool v) { e.mask_zero = v; })));
  m.def(
      "_embedding_mask_zero", [](ef::nn::Embedding& e, std::optional<bool> v) {
        if (v) e.mask_zero = *v;
        return e.mask_zero;
      },
      nb::arg("layer"), nb::arg("value") = nb::none());
  m.def(
      "_embedding_initializer",
      [](ef::nn::Embedding& e, nb::handle init) {
        if (e.built()) throw nb::value_error(("layer '" + e.name() + "' is built: its embeddings_initializer is spent").c_str());
        e.embeddings_initializer = initializer_arg(init);
      },
      nb::arg("layer"), nb::arg("initializer"));
}

}  // namespace efpy
