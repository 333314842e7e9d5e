// Python values into declared layer arguments (layer_args.h), and Layer._ef_declared_input_shape:
// the input shape a Sequential that starts with the layer is built for (python/eagerflow/_training.py).
#include "layer_args.h"

#include <cctype>
#include <exception>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "convert.h"
#include "py_layer.h"

namespace efpy {

void arg_from_python(bool& out, nb::handle h, const std::string& what) {
  if (PyBool_Check(h.ptr())) out = h.ptr() == Py_True;
  else if (PyIndex_Check(h.ptr())) out = int_arg(h, what.c_str()) != 0;  // a NumPy bool or 0 / 1, as Keras' truth test
  else throw nb::type_error((what + " must be a boolean, got " + nb::cast<std::string>(nb::repr(h))).c_str());
}
void arg_from_python(std::int64_t& out, nb::handle h, const std::string& what) {
  if (PyBool_Check(h.ptr())) throw nb::type_error((what + " must be an integer, got " + nb::cast<std::string>(nb::repr(h))).c_str());
  out = int_arg(h, what.c_str());
}
void arg_from_python(double& out, nb::handle h, const std::string& what) { out = float_arg(h, what.c_str()); }
void arg_from_python(std::string& out, nb::handle h, const std::string& what) {
  if (!PyUnicode_Check(h.ptr())) throw nb::type_error((what + " must be a string, got " + nb::cast<std::string>(nb::repr(h))).c_str());
  out = nb::cast<std::string>(h);
  // Keras' standardize_padding: "SAME" and "Valid" are "same" and "valid".
  if (what.size() >= 7 && what.compare(what.size() - 7, 7, "padding") == 0)
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}
void arg_from_python(ef::Stride2& out, nb::handle h, const std::string& what) {
  std::vector<std::int64_t> v = dims_arg(h, what.c_str(), /*allow_unknown=*/false);
  if (v.size() == 1 && PyIndex_Check(h.ptr())) v.push_back(v[0]);  // Keras: kernel_size=3 is (3, 3)
  if (v.size() != 2) throw nb::value_error((what + " must be an int or a pair of ints").c_str());
  out = {v[0], v[1]};
}
void arg_from_python(ef::nn::ActivationFn& out, nb::handle h, const std::string&) { out = activation_arg(h); }
void arg_from_python(ef::nn::Initializer& out, nb::handle h, const std::string&) { out = initializer_arg(h); }
void arg_from_python(ef::nn::Regularizer& out, nb::handle h, const std::string&) { out = regularizer_arg(h); }
void arg_from_python(ef::nn::Constraint& out, nb::handle h, const std::string&) { out = constraint_arg(h); }
void arg_from_python(std::optional<ef::nn::DTypePolicy>& out, nb::handle h, const std::string& what) {
  try {
    out = dtype_policy_arg(h);  // a name, a DTypePolicy, a dtype or Keras 3's serialized form
  } catch (const std::exception& e) {
    // Keras' ValueError for a policy it does not know, whatever the converter raised.
    throw nb::value_error((what + "=" + nb::cast<std::string>(nb::repr(h)) +
                           " is not a policy eagerflow has (float32, float64, bfloat16, mixed_bfloat16): " + e.what())
                              .c_str());
  }
}
void arg_from_python(std::optional<std::int64_t>& out, nb::handle h, const std::string& what) {
  out = int_arg(h, what.c_str());
}
void arg_from_python(std::optional<std::vector<std::int64_t>>& out, nb::handle h, const std::string& what) {
  out = dims_arg(h, what.c_str(), /*allow_unknown=*/true);
}

void unrecognized_keywords(const std::string& cls, const nb::dict& unknown) {
  // Keras 3's words, so that code matching its message keeps matching.
  throw nb::type_error(("Unrecognized keyword arguments passed to " + cls + ": " + nb::cast<std::string>(nb::repr(unknown))).c_str());
}

void init_layer_args(nb::module_& m) {
  auto layer = nb::borrow<nb::object>(m.attr("Layer"));
  auto prop = nb::module_::import_("builtins").attr("property");
  layer.attr("_ef_declared_input_shape") = prop(
      nb::cpp_function([](const ef::nn::Layer& l) -> nb::object {
        const auto& s = l.declared_input_shape();
        return s ? nb::object(shape_tuple(*s)) : nb::none();
      }),
      nb::cpp_function([](ef::nn::Layer& l, nb::handle shape) {
        if (shape.is_none()) return l.set_declared_input_shape(std::nullopt);
        l.set_declared_input_shape(ef::Shape(dims_arg(shape, "input_shape", /*allow_unknown=*/true)));
      }));
}

ef::nn::ActivationFn activation_by_name(const std::string& name) {
  try {
    return ef::nn::ActivationFn(name);
  } catch (const ef::Error&) {
    std::exception_ptr original = std::current_exception();
    nb::object fn;
    try {
      fn = nb::module_::import_("eagerflow.keras.activations").attr("get")(name);
    } catch (const nb::python_error&) {
      std::rethrow_exception(original);  // keras.activations lacks it too: the C++ error, listing names
    }
    return ef::nn::ActivationFn(
        [fn](const ef::Tensor& x) {
          nb::gil_scoped_acquire gil;
          return to_tensor(fn(x));
        },
        name);
  }
}

}  // namespace efpy
