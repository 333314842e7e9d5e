// Keras layers of issue 17 (Lambda, Rescaling, Normalization, Conv2DTranspose, UpSampling2D,
// ZeroPadding2D, LeakyReLU, ELU), regularizers and constraints, activations as functions, and
// Layer.add_loss / losses / apply_constraints / activity_regularizer on every layer.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "eagerflow/nn/activation_layers.h"
#include "eagerflow/nn/conv_layers.h"
#include "eagerflow/nn/conv_transpose.h"
#include "eagerflow/nn/preprocessing.h"
#include "eagerflow/nn/reshaping.h"
#include "convert.h"
#include "layer_args.h"
#include "py_layer.h"

namespace efpy {
namespace {

using ef::Tensor;
using ef::nn::Constraint;
using ef::nn::Layer;
using ef::nn::Regularizer;

// A Python callable as a C++ function of one tensor, called with the GIL taken (fit, predict
// and replay run C++ with it released).
std::function<Tensor(const Tensor&)> py_tensor_fn(nb::handle fn) {
  auto held = std::make_shared<nb::object>(nb::borrow(fn));
  return [held](const Tensor& x) {
    nb::gil_scoped_acquire gil;
    return to_tensor((*held)(x));
  };
}

// None, a Keras name, an ef.keras.regularizers object (its C++ regularizer is `_ef`), a
// _core.Regularizer, or any callable weight -> scalar.
Regularizer regularizer_of(nb::handle h) {
  if (h.is_none()) return {};
  if (PyUnicode_Check(h.ptr())) return Regularizer(nb::cast<std::string>(h));
  Regularizer* r;
  if (nb::try_cast(h, r, false) && r) return *r;
  if (nb::hasattr(h, "_ef")) return regularizer_of(h.attr("_ef"));
  if (PyCallable_Check(h.ptr()))
    return Regularizer(py_tensor_fn(h), nb::cast<std::string>(nb::str(h.type().attr("__name__"))));
  throw nb::value_error("could not interpret the regularizer: expected None, a name (\"l1\", \"l2\", \"l1_l2\"), "
                        "a Regularizer or a callable");
}

Constraint constraint_of(nb::handle h) {
  if (h.is_none()) return {};
  if (PyUnicode_Check(h.ptr())) return Constraint(nb::cast<std::string>(h));
  Constraint* c;
  if (nb::try_cast(h, c, false) && c) return *c;
  if (nb::hasattr(h, "_ef")) return constraint_of(h.attr("_ef"));
  if (PyCallable_Check(h.ptr()))
    return Constraint(py_tensor_fn(h), nb::cast<std::string>(nb::str(h.type().attr("__name__"))));
  throw nb::value_error("could not interpret the constraint: expected None, a name (\"max_norm\", \"non_neg\", "
                        "\"unit_norm\", \"min_max_norm\"), a Constraint or a callable");
}

ef::nn::ActivationFn activation_of(nb::handle a) {
  if (a.is_none()) return {};
  if (PyUnicode_Check(a.ptr())) return activation_by_name(nb::cast<std::string>(a));
  return ef::nn::ActivationFn(py_tensor_fn(a));
}

// Keras' int-or-pair arguments (kernel_size=3, strides=(2, 1)).
std::pair<std::int64_t, std::int64_t> int_pair(nb::handle h, const char* what) {
  std::vector<std::int64_t> v = dims_arg(h, what, /*allow_unknown=*/false);
  if (v.size() == 1 && PyIndex_Check(h.ptr())) return {v[0], v[0]};
  if (v.size() != 2) throw nb::value_error((std::string(what) + " must be an int or a pair of ints").c_str());
  return {v[0], v[1]};
}
ef::Stride2 stride_of(nb::handle h, const char* what) {
  auto [a, b] = int_pair(h, what);
  return {a, b};
}

// Keras' axis: an int, a sequence of ints, or None (one statistic for everything).
std::vector<int> axes_of(nb::handle h) { return axes_arg(h, "axis"); }

void check_channels_last(const std::optional<std::string>& data_format, const char* layer) {
  if (data_format && *data_format != "channels_last")
    throw nb::value_error((std::string(layer) + ": only data_format=\"channels_last\" is supported, got \"" +
                           *data_format + "\"").c_str());
}

nb::object property(nb::handle getter, nb::handle setter = nb::none()) {
  return nb::module_::import_("builtins").attr("property")(getter, setter);
}

}  // namespace

ef::nn::ActivationFn activation_arg(nb::handle h) { return activation_of(h); }
ef::nn::Regularizer regularizer_arg(nb::handle h) { return regularizer_of(h); }
ef::nn::Constraint constraint_arg(nb::handle h) { return constraint_of(h); }

void init_layers_keras(nb::module_& m) {
  // ---------------------------------------------------------------- regularizers, constraints
  nb::class_<Regularizer>(m, "Regularizer")
      .def(nb::init<const std::string&>(), nb::arg("name"))
      .def(nb::init<double, double>(), nb::arg("l1"), nb::arg("l2"))
      .def("__call__", [](const Regularizer& r, nb::handle x) { return r(to_tensor(x)); }, nb::arg("x"))
      .def_prop_ro("name", &Regularizer::name)
      .def_prop_ro("l1", &Regularizer::l1)
      .def_prop_ro("l2", &Regularizer::l2);
  nb::class_<Constraint>(m, "Constraint")
      .def(nb::init<const std::string&>(), nb::arg("name"))
      .def("__call__", [](const Constraint& c, nb::handle w) { return c(to_tensor(w)); }, nb::arg("w"))
      .def_prop_ro("name", &Constraint::name);
  m.def("_max_norm", &ef::nn::max_norm, nb::arg("max_value") = 2.0, nb::arg("axis") = std::vector<int>{0});
  m.def("_non_neg", &ef::nn::non_neg);
  m.def("_unit_norm", &ef::nn::unit_norm, nb::arg("axis") = std::vector<int>{0});
  m.def("_min_max_norm", &ef::nn::min_max_norm, nb::arg("min_value") = 0.0, nb::arg("max_value") = 1.0,
        nb::arg("rate") = 1.0, nb::arg("axis") = std::vector<int>{0});
  m.def("_as_regularizer", &regularizer_of, nb::arg("identifier").none());
  m.def("_as_constraint", &constraint_of, nb::arg("identifier").none());

  // ---------------------------------------------------------------- activations
  m.def("_activation", [](const std::string& name, nb::handle x) { return ef::nn::ActivationFn(name)(to_tensor(x)); },
        nb::arg("name"), nb::arg("x"));
  m.def("_leaky_relu", [](nb::handle x, double s) { return ef::nn::leaky_relu(to_tensor(x), s); }, nb::arg("x"),
        nb::arg("negative_slope") = 0.2);
  m.def("_elu", [](nb::handle x, double a) { return ef::nn::elu(to_tensor(x), a); }, nb::arg("x"), nb::arg("alpha") = 1.0);

  // ---------------------------------------------------------------- on every Layer
  nb::handle layer_type = nb::type<Layer>();
  nb::setattr(layer_type, "add_loss",
              nb::cpp_function([](Layer& self, nb::handle loss) { self.add_loss(to_tensor(loss)); }, nb::is_method(),
                               nb::scope(layer_type), nb::name("add_loss"), nb::arg("loss")));
  nb::setattr(layer_type, "apply_constraints",
              nb::cpp_function([](Layer& self) { self.apply_constraints(); }, nb::is_method(), nb::scope(layer_type),
                               nb::name("apply_constraints")));
  nb::setattr(layer_type, "losses",
              property(nb::cpp_function([](const Layer& self) { return self.losses(); }, nb::is_method())));
  nb::setattr(layer_type, "_activity_regularizer",
              property(nb::cpp_function(
                           [](const Layer& self) -> std::optional<Regularizer> {
                             const Regularizer* r = self.activity_regularizer();
                             return r ? std::optional<Regularizer>(*r) : std::nullopt;
                           },
                           nb::is_method()),
                       nb::cpp_function([](Layer& self, nb::handle r) { self.set_activity_regularizer(regularizer_of(r)); },
                                        nb::is_method())));
  // ---------------------------------------------------------------- layers
  nb::class_<ef::nn::Lambda, Layer>(m, "Lambda")
      .def("__init__",
           [](ef::nn::Lambda* self, nb::handle function, const std::string& name) {
             if (!PyCallable_Check(function.ptr())) throw nb::type_error("Lambda: function must be callable");
             new (self) ef::nn::Lambda(py_tensor_fn(function), name);
           },
           nb::arg("function"), nb::arg("name") = "");
  nb::class_<ef::nn::Rescaling, Layer>(m, "Rescaling")
      .def(nb::init<double, double, std::string>(), nb::arg("scale"), nb::arg("offset") = 0.0, nb::arg("name") = "")
      .def_prop_ro("scale", &ef::nn::Rescaling::scale)
      .def_prop_ro("offset", &ef::nn::Rescaling::offset);
  nb::class_<ef::nn::Normalization, Layer>(m, "Normalization")
      .def("__init__",
           [](ef::nn::Normalization* self, nb::handle axis, nb::handle mean, nb::handle variance, bool invert,
              const std::string& name) {
             std::optional<Tensor> m, v;
             if (!mean.is_none()) m = ef::cast(to_tensor(mean), ef::DType::float32);
             if (!variance.is_none()) v = ef::cast(to_tensor(variance), ef::DType::float32);
             new (self) ef::nn::Normalization(axes_of(axis), m, v, invert, name);
           },
           nb::arg("axis").none() = -1, nb::arg("mean").none() = nb::none(), nb::arg("variance").none() = nb::none(),
           nb::arg("invert") = false, nb::arg("name") = "")
      .def("adapt", [](ef::nn::Normalization& self, nb::handle data) { self.adapt(to_tensor(data)); }, nb::arg("data"))
      .def_prop_ro("mean", &ef::nn::Normalization::mean)
      .def_prop_ro("variance", &ef::nn::Normalization::variance)
      .def_prop_ro("invert", &ef::nn::Normalization::invert)
      .def_prop_ro("axis", [](const ef::nn::Normalization& n) {
        nb::list out;
        for (int a : n.axis()) out.append(a);
        return nb::tuple(out);
      });
  nb::class_<ef::nn::LeakyReLU, Layer>(m, "LeakyReLU")
      .def(nb::init<double, std::string>(), nb::arg("negative_slope") = 0.3, nb::arg("name") = "")
      .def_prop_ro("negative_slope", &ef::nn::LeakyReLU::negative_slope);
  nb::class_<ef::nn::ELU, Layer>(m, "ELU")
      .def(nb::init<double, std::string>(), nb::arg("alpha") = 1.0, nb::arg("name") = "")
      .def_prop_ro("alpha", &ef::nn::ELU::alpha);
  nb::class_<ef::nn::UpSampling2D, Layer>(m, "UpSampling2D")
      .def("__init__",
           [](ef::nn::UpSampling2D* self, nb::handle size, std::optional<std::string> data_format,
              const std::string& interpolation, const std::string& name) {
             check_channels_last(data_format, "UpSampling2D");
             new (self) ef::nn::UpSampling2D(stride_of(size, "size"), interpolation, name);
           },
           nb::arg("size") = nb::make_tuple(2, 2), nb::arg("data_format").none() = nb::none(),
           nb::arg("interpolation") = "nearest", nb::arg("name") = "")
      .def_prop_ro("size", [](const ef::nn::UpSampling2D& u) { return nb::make_tuple(u.size().h, u.size().w); })
      .def_prop_ro("interpolation", &ef::nn::UpSampling2D::interpolation);
  nb::class_<ef::nn::ZeroPadding2D, Layer>(m, "ZeroPadding2D")
      .def("__init__",
           [](ef::nn::ZeroPadding2D* self, nb::handle padding, std::optional<std::string> data_format,
              const std::string& name) {
             check_channels_last(data_format, "ZeroPadding2D");
             ef::nn::Padding2D p;
             if (PyLong_Check(padding.ptr())) {
               auto v = int_arg(padding, "ZeroPadding2D: padding");
               p = {v, v, v, v};
             } else {
               std::vector<nb::object> parts;
               for (auto x : padding) parts.push_back(nb::borrow(x));
               if (parts.size() != 2)
                 throw nb::value_error("ZeroPadding2D: padding should have two elements: an int, (height, width) or "
                                       "((top, bottom), (left, right))");
               auto [t, b] = int_pair(parts[0], "the 1st entry of padding");
               auto [l, r] = int_pair(parts[1], "the 2nd entry of padding");
               p = {t, b, l, r};
             }
             new (self) ef::nn::ZeroPadding2D(p, name);
           },
           nb::arg("padding") = nb::make_tuple(1, 1), nb::arg("data_format").none() = nb::none(), nb::arg("name") = "")
      .def_prop_ro("padding", [](const ef::nn::ZeroPadding2D& z) {
        const auto& p = z.padding();
        return nb::make_tuple(nb::make_tuple(p.top, p.bottom), nb::make_tuple(p.left, p.right));
      });
  nb::class_<ef::nn::Conv2DTranspose, Layer>(m, "Conv2DTranspose")
      .def("__init__",
           [](ef::nn::Conv2DTranspose* self, std::int64_t filters, nb::handle kernel_size, nb::handle strides,
              const std::string& padding, std::optional<std::string> data_format, nb::handle activation, bool use_bias,
              nb::handle kernel_regularizer, nb::handle bias_regularizer, nb::handle activity_regularizer,
              nb::handle kernel_constraint, nb::handle bias_constraint, const std::string& name,
              nb::handle kernel_initializer, nb::handle bias_initializer) {
             check_channels_last(data_format, "Conv2DTranspose");
             ef::nn::Conv2DTransposeOptions o;
             o.strides = stride_of(strides, "strides");
             o.padding = padding;
             o.activation = activation_of(activation);
             o.use_bias = use_bias;
             o.kernel_regularizer = regularizer_of(kernel_regularizer);
             o.bias_regularizer = regularizer_of(bias_regularizer);
             o.activity_regularizer = regularizer_of(activity_regularizer);
             o.kernel_constraint = constraint_of(kernel_constraint);
             o.bias_constraint = constraint_of(bias_constraint);
             if (!kernel_initializer.is_none()) o.kernel_initializer = initializer_arg(kernel_initializer);
             if (!bias_initializer.is_none()) o.bias_initializer = initializer_arg(bias_initializer);
             new (self) ef::nn::Conv2DTranspose(filters, stride_of(kernel_size, "kernel_size"), o, name);
           },
           nb::arg("filters"), nb::arg("kernel_size"), nb::arg("strides") = 1, nb::arg("padding") = "valid",
           nb::arg("data_format").none() = nb::none(), nb::arg("activation").none() = nb::none(),
           nb::arg("use_bias") = true, nb::arg("kernel_regularizer").none() = nb::none(),
           nb::arg("bias_regularizer").none() = nb::none(), nb::arg("activity_regularizer").none() = nb::none(),
           nb::arg("kernel_constraint").none() = nb::none(), nb::arg("bias_constraint").none() = nb::none(),
           nb::arg("name") = "", nb::arg("kernel_initializer").none() = nb::none(),
           nb::arg("bias_initializer").none() = nb::none())
      .def_prop_ro("kernel", &ef::nn::Conv2DTranspose::kernel)
      .def_prop_ro("bias", &ef::nn::Conv2DTranspose::bias);
}

}  // namespace efpy
