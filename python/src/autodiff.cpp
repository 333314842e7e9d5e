// ef.GradientTape (a context manager in Python: python/eagerflow/_autodiff.py) and ef.Variable.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace efpy {
namespace {

// A gradient source: a Variable or a tensor.
ef::GradientSource source_of(nb::handle h) {
  ef::Variable* v;
  if (nb::try_cast(h, v, false) && v) return *v;
  return to_tensor(h);
}

ef::Tensor value_for(const ef::Variable& v, nb::handle x) { return to_tensor_as(x, v.dtype()); }

nb::object none_or(const ef::Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); }

// A tape records from its construction (__enter__) to __exit__, then stays paused so that
// gradient() can be asked after the `with` block, as in TF.
struct PyTape {
  PyTape(bool persistent, bool watch) : tape(persistent, watch) {}
  ef::GradientTape tape;
  std::unique_ptr<ef::GradientTape::Pause> pause;
};

}  // namespace

void init_autodiff(nb::module_& m) {
  nb::class_<ef::Variable>(m, "Variable")
      .def("__init__",
           [](ef::Variable* self, nb::handle initial_value, const std::string& name, bool trainable, nb::handle dtype) {
             ef::Tensor init;
             if (dtype.is_none()) {
               init = to_tensor(initial_value);
             } else {
               ef::DType d = dtype_from_py(dtype);
               init = to_tensor_as(initial_value, d);  // refuses what d cannot hold
               if (init.dtype() != d) init = ef::cast(init, d);
             }
             new (self) ef::Variable(init, name, trainable);
           },
           nb::arg("initial_value"), nb::arg("name") = "Variable", nb::arg("trainable") = true,
           nb::arg("dtype") = nb::none())
      .def_prop_ro("name", &ef::Variable::name)
      .def_prop_ro("dtype", &ef::Variable::dtype)
      .def_prop_ro("_shape_tuple",
                   [](const ef::Variable& v) {
                     nb::list out;
                     for (auto d : v.shape()) out.append(d == ef::kDynamic ? nb::none() : nb::cast(d));
                     return nb::tuple(out);
                   })
      .def_prop_ro("trainable", &ef::Variable::trainable)
      .def("value", &ef::Variable::value)
      .def("read_value", &ef::Variable::value)
      .def("_ef_tensor", &ef::Variable::value)
      .def("numpy", [](const ef::Variable& v) { return nb::cast(v.value()).attr("numpy")(); })
      .def("__array__",
           [](const ef::Variable& v, nb::handle dtype, nb::handle copy) {
             return nb::cast(v.value()).attr("__array__")(dtype, copy);
           },
           nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      // Python values become the variable's dtype, refusing what it cannot hold (TF's assign
      // converts with dtype=variable.dtype); a tensor of another dtype is the op's error.
      .def("assign", [](const ef::Variable& v, nb::handle x) { v.assign(value_for(v, x)); return v; })
      .def("assign_add", [](const ef::Variable& v, nb::handle x) { v.assign_add(value_for(v, x)); return v; })
      .def("assign_sub", [](const ef::Variable& v, nb::handle x) { v.assign_sub(value_for(v, x)); return v; })
      .def("_same_as", &ef::Variable::same_as)
      .def("__hash__", [](const ef::Variable& v) { return reinterpret_cast<std::intptr_t>(v.state_ptr().get()); })
      // Two wrappers of one variable are equal (layer.weights == [layer.kernel, layer.bias], as
      // Keras' objects are), consistent with __hash__; anything else compares by identity.
      .def("__eq__",
           [](const ef::Variable& v, nb::handle other) -> nb::object {
             ef::Variable* o = nullptr;
             if (nb::try_cast(other, o, false) && o) return nb::bool_(v.same_as(*o));
             return nb::borrow(Py_NotImplemented);
           })
      .def("__ne__",
           [](const ef::Variable& v, nb::handle other) -> nb::object {
             ef::Variable* o = nullptr;
             if (nb::try_cast(other, o, false) && o) return nb::bool_(!v.same_as(*o));
             return nb::borrow(Py_NotImplemented);
           })
      .def("__repr__", [](const ef::Variable& v) {
        // TF's: <tf.Variable 'x:0' shape=() dtype=float32, numpy=1.0>.
        std::string name = v.name().find(':') == std::string::npos ? v.name() + ":0" : v.name();
        std::string s = "<tf.Variable '" + name + "' shape=" + v.shape().tuple_str() + " dtype=" +
                        std::string(ef::name_of(v.dtype()));
        if (!ef::trace::current()) s += ", numpy=" + tensor_values_text(v.value(), /*is_repr=*/true);
        return s + ">";
      });

  nb::class_<PyTape>(m, "_GradientTape")
      .def(nb::init<bool, bool>(), nb::arg("persistent") = false, nb::arg("watch_accessed_variables") = true)
      .def("_stop", [](PyTape& t) { if (!t.pause) t.pause = std::make_unique<ef::GradientTape::Pause>(t.tape); })
      .def("_resume", [](PyTape& t) { t.pause.reset(); })
      .def("watch",
           [](PyTape& self, nb::handle x) {
             ef::GradientTape& tape = self.tape;
             if (PyList_Check(x.ptr()) || PyTuple_Check(x.ptr())) {
               for (auto e : x) {
                 auto s = source_of(e);
                 s.is_variable() ? tape.watch(s.variable()) : tape.watch(s.tensor());
               }
               return;
             }
             auto s = source_of(x);
             s.is_variable() ? tape.watch(s.variable()) : tape.watch(s.tensor());
           })
      .def("gradient",
           [](PyTape& self, nb::handle target, nb::handle sources, nb::handle output_gradients,
              const std::string& unconnected) -> nb::object {
             ef::GradientTape& tape = self.tape;
             bool single = !(PyList_Check(sources.ptr()) || PyTuple_Check(sources.ptr()));
             std::vector<ef::GradientSource> srcs;
             if (single) srcs.push_back(source_of(sources));
             else
               for (auto s : sources) srcs.push_back(source_of(s));
             std::vector<ef::Tensor> targets;
             if (PyList_Check(target.ptr()) || PyTuple_Check(target.ptr()))
               for (auto t : target) targets.push_back(to_tensor(t));
             else
               targets.push_back(to_tensor(target));
             std::vector<ef::Tensor> out_grads;
             if (!output_gradients.is_none()) {
               if (PyList_Check(output_gradients.ptr()) || PyTuple_Check(output_gradients.ptr()))
                 for (auto t : output_gradients) out_grads.push_back(to_tensor(t));
               else
                 out_grads.push_back(to_tensor(output_gradients));
             }
             auto mode = unconnected == "zero" ? ef::UnconnectedGradients::zero : ef::UnconnectedGradients::none;
             std::vector<ef::Tensor> g = tape.gradient(targets, srcs, out_grads, mode);
             if (single) return none_or(g.at(0));
             nb::list out;
             for (auto& t : g) out.append(none_or(t));
             return out;
           },
           nb::arg("target"), nb::arg("sources"), nb::arg("output_gradients") = nb::none(),
           nb::arg("unconnected_gradients") = "none")
      .def("watched_variables", [](PyTape& t) { return t.tape.watched_variables(); })
      .def("reset", [](PyTape& t) { t.tape.reset(); });
}

}  // namespace efpy
