// The C++ side of ef.custom_gradient and ef.custom_vjp (python/eagerflow/_custom_gradient.py
// gives them TF's and JAX's Python forms). The Python functions are called back from C++:
// while tracing (ef.function traces with the GIL released) and when a tape takes the gradient,
// so every call-back takes the GIL, and the references are dropped with it held.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "interpreter_exit.h"

namespace efpy {
namespace {

using ef::Tensor;

// A list of tensors from a Python sequence; None is an undefined tensor ("no gradient").
std::vector<Tensor> tensors_of(nb::handle seq, const std::string& what) {
  if (!nb::isinstance<nb::list>(seq) && !nb::isinstance<nb::tuple>(seq))
    throw nb::type_error((what + " must be a list or tuple of tensors").c_str());
  std::vector<Tensor> out;
  for (nb::handle h : seq) out.push_back(h.is_none() ? Tensor() : to_tensor(h));
  return out;
}

nb::list py_list(const std::vector<Tensor>& ts) {
  nb::list out;
  for (const auto& t : ts) out.append(t.defined() ? nb::cast(t) : nb::none());
  return out;
}

}  // namespace

void init_custom(nb::module_& m) {
  // body(inputs) -> (outputs, grad) with grad(cotangents) -> gradients (lists of tensors).
  m.def("_custom_gradient_call", [](const std::string& name, nb::handle body, nb::handle inputs) {
    std::shared_ptr<nb::object> fn = hold_py(body);
    ef::CustomGradientBody call = [fn, name](const std::vector<Tensor>& xs) {
      nb::gil_scoped_acquire gil;
      nb::object r = (*fn)(py_list(xs));
      if (!nb::isinstance<nb::tuple>(r) || nb::len(r) != 2)
        throw nb::type_error(("ef.custom_gradient: '" + name + "' must return (outputs, grad_fn)").c_str());
      ef::OutputsAndGrad out;
      out.outputs = tensors_of(r[0], "the outputs of '" + name + "'");
      if (!r[1].is_none()) {
        std::shared_ptr<nb::object> grad = hold_py(r[1]);
        out.grad = [grad, name](const std::vector<Tensor>& dys) {
          nb::gil_scoped_acquire gil;
          return tensors_of((*grad)(py_list(dys)), "the gradients returned by the gradient function of '" + name + "'");
        };
      }
      return out;
    };
    return ef::call_with_custom_gradient(name, call, tensors_of(inputs, "inputs"));
  });

  // primal(inputs) -> outputs; fwd(inputs) -> (outputs, residuals); bwd(residuals, cotangents) -> gradients.
  m.def("_custom_vjp_call", [](const std::string& name, nb::handle primal, nb::handle fwd, nb::handle bwd, nb::handle inputs) {
    std::shared_ptr<nb::object> p = hold_py(primal), f = hold_py(fwd), b = hold_py(bwd);
    ef::CustomVjp v(name, [p, name](const std::vector<Tensor>& xs) {
      nb::gil_scoped_acquire gil;
      return tensors_of((*p)(py_list(xs)), "the outputs of '" + name + "'");
    });
    v.defvjp(
        [f, name](const std::vector<Tensor>& xs) {
          nb::gil_scoped_acquire gil;
          nb::object r = (*f)(py_list(xs));
          if (!nb::isinstance<nb::tuple>(r) || nb::len(r) != 2)
            throw nb::type_error(("ef.custom_vjp: the fwd of '" + name + "' must return (outputs, residuals)").c_str());
          return ef::VjpForward{tensors_of(r[0], "the outputs of '" + name + "'"),
                                tensors_of(r[1], "the residuals of '" + name + "'")};
        },
        [b, name](const std::vector<Tensor>& res, const std::vector<Tensor>& dys) {
          nb::gil_scoped_acquire gil;
          return tensors_of((*b)(py_list(res), py_list(dys)), "the gradients returned by the bwd of '" + name + "'");
        });
    return v(tensors_of(inputs, "inputs"));
  });

  m.def("_custom_variables", [] { return ef::custom_variables(); });
}

}  // namespace efpy
