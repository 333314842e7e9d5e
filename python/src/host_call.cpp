// ef::host_call (eagerflow/ops/host_call.h) for Python callables: tf.py_function and
// tf.numpy_function inside ef.function (python/eagerflow/_functional_ops.py).
#include "bindings.h"
#include "convert.h"
#include "eagerflow/ops/host_call.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

// A Python object owned from C++: released with the GIL held, whichever thread drops the last
// reference (a graph may be destroyed where the GIL is released).
struct PyRef {
  PyObject* object;
  explicit PyRef(nb::handle h) : object(h.ptr()) { Py_XINCREF(object); }
  ~PyRef() {
    if (!Py_IsInitialized()) return;
    nb::gil_scoped_acquire gil;
    Py_XDECREF(object);
  }
};

// Calls a Python function of a list of tensors that returns a list of tensors, with the GIL
// (graphs run with it released); a Python exception becomes an ef::Error that carries its text.
std::vector<ef::Tensor> call_python(const std::shared_ptr<PyRef>& fn, const std::string& what,
                                    const std::vector<std::vector<ef::Tensor>>& argument_lists) {
  nb::gil_scoped_acquire gil;
  try {
    nb::list args;
    for (const auto& list : argument_lists) {
      nb::list items;
      for (const ef::Tensor& t : list) items.append(nb::cast(t));
      args.append(items);
    }
    nb::object result = nb::handle(fn->object)(*args);
    std::vector<ef::Tensor> out;
    for (nb::handle item : result) out.push_back(item.is_none() ? ef::Tensor() : to_tensor(item));
    return out;
  } catch (nb::python_error& e) {
    std::string text = e.what();
    e.restore();
    PyErr_Clear();
    ef::fail(ef::ErrorCode::invalid_argument, what, "the Python function raised " + text);
  }
}

}  // namespace

void init_host_call(nb::module_& m) {
  m.def(
      "_host_call",
      [](nb::handle fn, const std::vector<ef::Tensor>& inputs, const std::vector<ef::TensorSpec>& outputs,
         const std::string& name, nb::handle vjp) {
        auto f = std::make_shared<ef::HostFunction>();
        f->name = name;
        f->outputs = outputs;
        auto forward = std::make_shared<PyRef>(fn);
        f->fn = [forward, name](const std::vector<ef::Tensor>& xs) { return call_python(forward, name, {xs}); };
        if (!vjp.is_none()) {
          auto backward = std::make_shared<PyRef>(vjp);
          f->vjp = [backward, name](const std::vector<ef::Tensor>& xs, const std::vector<ef::Tensor>& cots) {
            return call_python(backward, name + "_grad", {xs, cots});
          };
        }
        std::vector<ef::Tensor> out;
        {
          nb::gil_scoped_release release;  // the call may run here and take the GIL itself
          out = ef::host_call(std::move(f), inputs);
        }
        return out;
      },
      nb::arg("fn"), nb::arg("inputs"), nb::arg("outputs"), nb::arg("name"), nb::arg("vjp").none() = nb::none(),
      "Runs fn(list of tensors) -> list of tensors as an op: inside ef.function, on every call of the graph.");
}

}  // namespace efpy
