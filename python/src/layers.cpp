// Layers: ef::nn::Layer with a trampoline so that Python subclasses override build/call, and
// the C++ layers (Dense, Flatten, Dropout, ...).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "eagerflow/trace/keras_tensor.h"
#include "eagerflow/nn/conv_layers.h"
#include "eagerflow/train/model.h"
#include "eagerflow/nn/embedding_merge.h"
#include "eagerflow/nn/normalization.h"
#include "eagerflow/ops/random.h"
#include "convert.h"
#include "eagerflow/nn/layer_type_name.h"
#include "layer_args.h"
#include "py_layer.h"

namespace efpy {

nb::tuple shape_tuple(const ef::Shape& s) {
  nb::list out;
  for (auto d : s) out.append(d == ef::kDynamic ? nb::none() : nb::cast(d));
  return nb::tuple(out);
}

std::vector<ef::Tensor> call_results(const std::string& layer, nb::handle result, PyLayerAccess::OutputKind& kind) {
  bool tuple = PyTuple_Check(result.ptr()), list = PyList_Check(result.ptr());
  if (!tuple && !list) {
    if (PyDict_Check(result.ptr()))
      throw ef::Error(ef::kWrongType,
                      "layer '" + layer + "': call() returned a dict; return a tensor, or a tuple or list of tensors");
    kind = PyLayerAccess::OutputKind::single;
    try {
      return {to_tensor(result)};
    } catch (const std::exception& e) {
      throw ef::Error(ef::kind_of(e),
                      "layer '" + layer + "': call() must return a tensor (or a tuple or list of them): " + e.what());
    }
  }
  kind = tuple ? PyLayerAccess::OutputKind::tuple : PyLayerAccess::OutputKind::list;
  std::vector<ef::Tensor> outs;
  std::size_t i = 0;
  for (nb::handle item : result) {
    ef::Tensor* t;
    if (!nb::try_cast(item, t, false) || !t)
      throw ef::Error(ef::kWrongType, "layer '" + layer + "': call() returned a " + (tuple ? "tuple" : "list") +
                                          " whose item " + std::to_string(i) + " is a " +
                                          nb::cast<std::string>(nb::str(item.type().attr("__name__"))) +
                                          ", not a tensor (several outputs are each a tensor)");
    outs.push_back(*t);
    ++i;
  }
  if (outs.empty()) throw ef::Error("layer '" + layer + "': call() returned an empty " + (tuple ? "tuple" : "list"));
  return outs;
}

namespace {

using ef::Tensor;
using ef::nn::Layer;

ef::nn::ActivationFn activation_of(nb::handle a) {
  if (a.is_none()) return {};
  if (PyUnicode_Check(a.ptr())) return activation_by_name(nb::cast<std::string>(a));
  nb::object fn = nb::borrow(a);
  return ef::nn::ActivationFn(std::function<Tensor(const Tensor&)>([fn](const Tensor& x) {
    nb::gil_scoped_acquire gil;
    return to_tensor(fn(x));
  }));
}

using PyLayer = PyLayerT<Layer>;

// An initializer argument: None (the layer's default), a Keras name, an ef.keras.initializers
// object, the C++ Initializer, or a Python callable (shape, dtype) -> array.
ef::nn::Initializer initializer_of(nb::handle h) {
  if (h.is_none()) return ef::nn::glorot_uniform_initializer();
  ef::nn::Initializer* init;
  if (nb::try_cast(h, init, false) && init) return *init;
  if (PyUnicode_Check(h.ptr())) {
    try {
      return ef::nn::initializer_by_name(nb::cast<std::string>(h));
    } catch (const ef::Error& e) {
      // Keras names the C++ table lacks ("orthogonal", "lecun_uniform" ...): keras.initializers'.
      nb::object found;
      try {
        found = nb::module_::import_("eagerflow.keras.initializers").attr("get")(h);
      } catch (const nb::python_error&) {
        throw nb::value_error(e.what());  // (the error class this argument always had)
      }
      return initializer_of(found);
    }
  }
  if (nb::hasattr(h, "_ef_initializer")) {
    // A keras.initializers object: its C++ draw, saved under its own class and config
    // (HeNormal(seed=3), not the VarianceScaling it draws with).
    ef::nn::Initializer init = initializer_of(h.attr("_ef_initializer")());
    if (nb::hasattr(h, "get_config")) {
      init.keras_class = nb::cast<std::string>(h.type().attr("__name__"));
      init.keras_arguments = config_map_from_py(h.attr("get_config")(), "initializer " + init.keras_class + " get_config()");
    }
    return init;
  }
  if (PyCallable_Check(h.ptr())) {
    nb::object fn = nb::borrow(h);
    return [fn](const ef::Shape& shape, ef::DType dtype) {
      nb::gil_scoped_acquire gil;
      ef::Tensor t = to_tensor(fn(shape_tuple(shape), "dtype"_a = dtype));  // as Keras: dtype by keyword
      if (t.shape() != shape)
        throw ef::Error("initializer returned shape " + t.shape().str() + " for a weight of shape " + shape.str());
      return ef::cast(t, dtype);
    };
  }
  throw nb::type_error(("an initializer is a name, an ef.keras.initializers object or a callable, got " +
                        nb::cast<std::string>(nb::str(h.type().attr("__name__")))).c_str());
}

// layer(x) / layer([a, b]). On Keras tensors (the functional API) the layer is held by the
// model's graph: it is passed on as a shared_ptr that keeps the Python object alive. A layer
// with several outputs (a functional model) gives a list.
nb::object layer_call(nb::handle self, nb::handle inputs, std::optional<bool> training) {
  Layer& layer = nb::cast<Layer&>(self);
  bool list = PyList_Check(inputs.ptr()) || PyTuple_Check(inputs.ptr());
  // NumPy (and Python) floats become the layer's compute dtype, as Keras converts them (a float64
  // batch into a float32 model); tensors keep their dtype (a layer builds in its first input's).
  ef::DType compute = layer.compute_dtype();
  auto convert = [&](nb::handle x) {
    bool tensor = nb::isinstance<Tensor>(x) || nb::hasattr(x, "_ef_tensor");
    Tensor t = to_tensor(x);
    if (!tensor && ef::is_floating(compute) && ef::is_floating(t.dtype()) && t.dtype() != compute) t = ef::cast(t, compute);
    return t;
  };
  std::vector<Tensor> xs;
  if (list)
    for (auto x : inputs) xs.push_back(convert(x));
  else
    xs.push_back(convert(inputs));
  std::shared_ptr<Layer> keep;
  if (ef::detail::any_keras_tensor(xs)) keep = nb::cast<std::shared_ptr<Layer>>(self);
  auto* model = dynamic_cast<ef::train::Model*>(&layer);
  if (model && model->functional_graph()) {
    std::vector<Tensor> outs = layer.call_outputs(xs, training);
    if (outs.size() == 1) return nb::cast(outs[0]);
    return nb::cast(outs);
  }
  // A layer written in Python returns what its call() returned: a tensor, or a tuple or list
  // of them (several outputs, as Keras allows).
  if (auto* py = dynamic_cast<PyLayerAccess*>(&layer)) {
    struct ListInput {  // for this call only: fit and replays later pass their own inputs
      PyLayerAccess* py;
      ~ListInput() { py->set_list_input(false); }
    } list_input{py};
    py->set_list_input(list);
    std::vector<Tensor> outs = layer.call_outputs(xs, training);
    auto kind = py->output_kind();
    if (kind == PyLayerAccess::OutputKind::single && outs.size() == 1) return nb::cast(outs[0]);
    nb::list items;
    for (auto& o : outs) items.append(nb::cast(o));
    if (kind == PyLayerAccess::OutputKind::list) return items;
    return nb::tuple(items);
  }
  return nb::cast(list ? layer(xs, training) : layer(xs[0], training));
}

// Keras' int-or-pair arguments (kernel_size=3, strides=(2, 1)).
ef::Stride2 pair_of(nb::handle h, const char* what) {
  std::vector<std::int64_t> v = dims_arg(h, what, /*allow_unknown=*/false);
  if (v.size() == 1 && PyIndex_Check(h.ptr())) return {v[0], v[0]};
  if (v.size() != 2) throw nb::value_error((std::string(what) + " must be an int or a pair of ints").c_str());
  return {v[0], v[1]};
}

template <class Pool>
void bind_pooling(nb::module_& m, const char* name) {
  nb::class_<Pool, Layer>(m, name).def(
      "__init__",
      [](Pool* self, nb::handle pool_size, nb::handle strides, const std::string& padding, const std::string& name) {
        std::optional<ef::Stride2> s;
        if (!strides.is_none()) s = pair_of(strides, "strides");
        new (self) Pool(pair_of(pool_size, "pool_size"), s, padding, name);
      },
      nb::arg("pool_size") = 2, nb::arg("strides") = nb::none(), nb::arg("padding") = "valid", nb::arg("name") = "");
}

}  // namespace

ef::nn::Initializer initializer_arg(nb::handle h) { return initializer_of(h); }

void init_layers(nb::module_& m) {
  // summary() and errors name a Python layer by its Python class ("FlexibleDense").
  ef::nn::set_layer_type_name_hook([](const ef::nn::Layer& layer) -> std::string {
    auto* py = dynamic_cast<const PyLayerAccess*>(&layer);
    return py && Py_IsInitialized() ? py->python_type_name() : std::string();
  });
  m.def("_reset_layer_names", &ef::nn::reset_layer_names);
  nb::class_<ef::nn::Initializer>(m, "Initializer")
      .def("__call__", [](const ef::nn::Initializer& init, std::vector<std::int64_t> shape, ef::DType dtype) {
        return init(ef::Shape(std::move(shape)), dtype);
      }, nb::arg("shape"), nb::arg("dtype") = ef::DType::float32);
  nb::module_ inits = m.def_submodule("_initializers", "Keras' weight initializers (eagerflow/nn/initializers.h)");
  inits.def("zeros", &ef::nn::zeros_initializer);
  inits.def("ones", &ef::nn::ones_initializer);
  inits.def("constant", &ef::nn::constant_initializer, nb::arg("value"));
  inits.def("random_uniform", &ef::nn::random_uniform_initializer, nb::arg("minval"), nb::arg("maxval"),
            nb::arg("seed") = nb::none());
  inits.def("random_normal", &ef::nn::random_normal_initializer, nb::arg("mean"), nb::arg("stddev"),
            nb::arg("seed") = nb::none());
  inits.def("truncated_normal", &ef::nn::truncated_normal_initializer, nb::arg("mean"), nb::arg("stddev"),
            nb::arg("seed") = nb::none());
  inits.def("variance_scaling", &ef::nn::variance_scaling_initializer, nb::arg("scale"), nb::arg("mode"),
            nb::arg("distribution"), nb::arg("seed") = nb::none());
  inits.def("identity", &ef::nn::identity_initializer, nb::arg("gain") = 1.0);
  inits.def("by_name", &ef::nn::initializer_by_name, nb::arg("name"));

  nb::class_<Layer, PyLayer>(m, "Layer")
      .def(nb::init<std::string>(), nb::arg("name") = "")
      .def("__call__", &layer_call, nb::arg("inputs"), nb::arg("training") = nb::none())
      .def_prop_ro("name", &Layer::name)
      .def_prop_ro("built", &Layer::built)
      .def(
          "_ef_build_for",
          [](Layer& self, const std::vector<std::vector<std::int64_t>>& shapes, bool single) {
            std::vector<ef::Shape> out;
            for (const auto& dims : shapes) {
              for (std::int64_t d : dims)
                if (d < ef::kDynamic) throw nb::value_error(("layer '" + self.name() + "' build: dimension " +
                                                             std::to_string(d) + " is negative").c_str());
              out.emplace_back(dims);
            }
            if (single && out.size() == 1) self.build_for(out[0]);
            else self.build_for(out);
          },
          nb::arg("shapes"), nb::arg("single"), "Keras' build(input_shape) (python/eagerflow/_layers.py).")
      .def_prop_ro("weights", &Layer::weights)
      .def_prop_ro("variables", &Layer::weights)
      .def_prop_ro("trainable_weights", &Layer::trainable_weights)
      .def_prop_ro("trainable_variables", &Layer::trainable_weights)
      .def_prop_ro("non_trainable_weights", &Layer::non_trainable_weights)
      .def_prop_rw("trainable", &Layer::trainable, &Layer::set_trainable)
      .def_prop_ro("layers", [](const Layer& l) {
        nb::list out;
        for (Layer* c : l.layers()) out.append(nb::find(c).is_valid() ? nb::find(c) : nb::cast(c, nb::rv_policy::reference));
        return out;
      })
      .def("_type_name", &Layer::type_name)
      .def_prop_ro("_ef_output_kind",
                   [](const Layer& l) -> const char* {
                     auto* py = dynamic_cast<const PyLayerAccess*>(&l);
                     if (!py || py->output_kind() == PyLayerAccess::OutputKind::single) return "single";
                     return py->output_kind() == PyLayerAccess::OutputKind::tuple ? "tuple" : "list";
                   })
      .def_prop_ro("_output_shape",
                   [](const Layer& l) -> nb::object {
                     auto spec = l.output_spec();
                     if (!spec) return nb::none();
                     return shape_tuple(spec->shape);
                   })
      .def(
          "add_weight",
          [](Layer& self, const std::string& name, nb::handle shape, nb::handle initializer, bool trainable,
             nb::handle dtype) {
            auto* py = dynamic_cast<PyLayerAccess*>(&self);
            if (!py) throw nb::type_error("add_weight is for layers written in Python");
            std::vector<std::int64_t> dims = dims_arg(shape, "add_weight: shape", /*allow_unknown=*/false);
            return py->add_weight_(name, ef::Shape(dims), initializer_of(initializer), trainable,
                                   dtype.is_none() ? ef::DType::float32 : dtype_from_py(dtype));
          },
          nb::arg("name"), nb::arg("shape"), nb::arg("initializer") = nb::none(), nb::arg("trainable") = true,
          nb::arg("dtype") = nb::none())
      .def("_track", [](Layer& self, Layer& child) {
        if (auto* py = dynamic_cast<PyLayerAccess*>(&self)) py->track_(child);
      });

  // Layers made from their declared arguments (python/src/layer_args.h): attributes and weak
  // references as on the Python subclasses keras.layers had for them.
  nb::class_<ef::nn::Dense, Layer> dense(m, "Dense", nb::dynamic_attr(), nb::is_weak_referenceable());
  def_init_from_args<ef::nn::Dense, ef::nn::DenseOptions>(dense, "Dense");  // Keras' arguments: Dense::args()
  dense.def_prop_ro("kernel", &ef::nn::Dense::kernel)
      .def_prop_ro("bias", &ef::nn::Dense::bias)
      .def_prop_ro("units", &ef::nn::Dense::units);
  nb::class_<ef::nn::Flatten, Layer>(m, "Flatten").def(nb::init<std::string>(), nb::arg("name") = "");
  nb::class_<ef::nn::Dropout, Layer> dropout(m, "Dropout", nb::dynamic_attr(), nb::is_weak_referenceable());
  def_init_from_args<ef::nn::Dropout, ef::nn::DropoutOptions>(dropout, "Dropout");  // Dropout::args()
  dropout.def_prop_ro("rate", &ef::nn::Dropout::rate);
  nb::class_<ef::nn::Activation, Layer>(m, "Activation")
      .def("__init__", [](ef::nn::Activation* self, nb::handle fn, const std::string& name) {
        new (self) ef::nn::Activation(activation_of(fn), name);
      }, nb::arg("activation"), nb::arg("name") = "");
  nb::class_<ef::nn::Conv2D, Layer> conv2d(m, "Conv2D", nb::dynamic_attr(), nb::is_weak_referenceable());
  def_init_from_args<ef::nn::Conv2D, ef::nn::Conv2DOptions>(conv2d, "Conv2D");  // Conv2D::args()
  conv2d.def_prop_ro("kernel", &ef::nn::Conv2D::kernel)
      .def_prop_ro("bias", &ef::nn::Conv2D::bias);
  bind_pooling<ef::nn::MaxPool2D>(m, "MaxPool2D");
  bind_pooling<ef::nn::AveragePooling2D>(m, "AveragePooling2D");
  nb::class_<ef::nn::GlobalAveragePooling2D, Layer>(m, "GlobalAveragePooling2D")
      .def(nb::init<std::string>(), nb::arg("name") = "");
  nb::class_<ef::nn::BatchNormalization, Layer>(m, "BatchNormalization")
      .def(
          "__init__",
          [](ef::nn::BatchNormalization* self, int axis, double momentum, double epsilon, bool center, bool scale,
             std::string name, nb::handle beta_initializer, nb::handle gamma_initializer,
             nb::handle moving_mean_initializer, nb::handle moving_variance_initializer) {
            ef::nn::BatchNormalizationOptions o{axis, momentum, epsilon, center, scale};
            if (!beta_initializer.is_none()) o.beta_initializer = initializer_of(beta_initializer);
            if (!gamma_initializer.is_none()) o.gamma_initializer = initializer_of(gamma_initializer);
            if (!moving_mean_initializer.is_none()) o.moving_mean_initializer = initializer_of(moving_mean_initializer);
            if (!moving_variance_initializer.is_none())
              o.moving_variance_initializer = initializer_of(moving_variance_initializer);
            new (self) ef::nn::BatchNormalization(o, std::move(name));
          },
          nb::arg("axis") = -1, nb::arg("momentum") = 0.99, nb::arg("epsilon") = 1e-3, nb::arg("center") = true,
          nb::arg("scale") = true, nb::arg("name") = "", nb::arg("beta_initializer") = nb::none(),
          nb::arg("gamma_initializer") = nb::none(), nb::arg("moving_mean_initializer") = nb::none(),
          nb::arg("moving_variance_initializer") = nb::none())
      .def_prop_ro("gamma", &ef::nn::BatchNormalization::gamma)
      .def_prop_ro("beta", &ef::nn::BatchNormalization::beta)
      .def_prop_ro("moving_mean", &ef::nn::BatchNormalization::moving_mean)
      .def_prop_ro("moving_variance", &ef::nn::BatchNormalization::moving_variance);
  nb::class_<ef::nn::LayerNormalization, Layer>(m, "LayerNormalization")
      .def(nb::init<double, std::string>(), nb::arg("epsilon") = 1e-3, nb::arg("name") = "");
  nb::class_<ef::nn::Embedding, Layer>(m, "Embedding")
      .def(nb::init<std::int64_t, std::int64_t, std::string>(), nb::arg("input_dim"), nb::arg("output_dim"),
           nb::arg("name") = "")
      .def_prop_ro("embeddings", &ef::nn::Embedding::embeddings);
  nb::class_<ef::nn::Add, Layer>(m, "Add").def(nb::init<std::string>(), nb::arg("name") = "");
  nb::class_<ef::nn::Concatenate, Layer>(m, "Concatenate")
      .def(nb::init<int, std::string>(), nb::arg("axis") = -1, nb::arg("name") = "");
  nb::class_<ef::nn::Reshape, Layer>(m, "Reshape")
      .def("__init__", [](ef::nn::Reshape* self, std::vector<std::int64_t> target, const std::string& name) {
        new (self) ef::nn::Reshape(ef::Shape(target), name);
      }, nb::arg("target_shape"), nb::arg("name") = "");
}

}  // namespace efpy
