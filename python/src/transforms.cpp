// ef.jvp, ef.linearize, ef.jacfwd, ef.jacrev, ef.hessian and ef.vmap over Python callables.
// The C++ transformations call the Python function back on this thread; the GIL stays held
// throughout (as for ef.grad), since the Python body runs inside the C++ call.
#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace efpy {
namespace {

// What the Python function returned: one tensor, or a tuple or list of them.
enum class Shape { single, tuple, list };

std::vector<ef::Tensor> flatten(nb::handle r, Shape& shape) {
  std::vector<ef::Tensor> out;
  if (PyTuple_Check(r.ptr()) || PyList_Check(r.ptr())) {
    shape = PyTuple_Check(r.ptr()) ? Shape::tuple : Shape::list;
    for (auto e : r) out.push_back(to_tensor(e));
  } else {
    shape = Shape::single;
    out.push_back(to_tensor(r));
  }
  return out;
}

nb::object build(const std::vector<ef::Tensor>& ts, Shape shape) {
  if (shape == Shape::single) return nb::cast(ts.at(0));
  nb::list l;
  for (const auto& t : ts) l.append(nb::cast(t));
  return shape == Shape::tuple ? nb::object(nb::tuple(l)) : nb::object(l);
}

nb::object call(const nb::callable& f, const std::vector<ef::Tensor>& xs) {
  nb::list args;
  for (const auto& x : xs) args.append(nb::cast(x));
  return f(*nb::tuple(args));
}

std::vector<ef::Tensor> tensors_of(nb::handle seq, const char* what, bool allow_none) {
  if (!(PyTuple_Check(seq.ptr()) || PyList_Check(seq.ptr())))
    throw ef::Error(ef::kWrongType, std::string("[jvp] ") + what + " must be a tuple or list of tensors");
  std::vector<ef::Tensor> out;
  for (auto e : seq) out.push_back(allow_none && e.is_none() ? ef::Tensor() : to_tensor(e));
  return out;
}

ef::InAxes in_axes_of(nb::handle h) {
  if (h.is_none()) {  // JAX's in_axes=None: nothing batched, which vmap reports
    ef::InAxes none(0);
    none.axes[0] = std::nullopt;
    return none;
  }
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    std::vector<std::optional<int>> axes;
    for (auto a : h)
      axes.push_back(a.is_none() ? std::nullopt : std::optional<int>(static_cast<int>(int_arg(a, "in_axes"))));
    return ef::InAxes(std::move(axes));
  }
  return ef::InAxes(static_cast<int>(int_arg(h, "in_axes")));
}

ef::OutAxes out_axes_of(nb::handle h) {
  if (PyTuple_Check(h.ptr()) || PyList_Check(h.ptr())) {
    std::vector<int> axes;
    for (auto a : h) axes.push_back(static_cast<int>(int_arg(a, "out_axes")));
    return ef::OutAxes(std::move(axes));
  }
  return ef::OutAxes(static_cast<int>(int_arg(h, "out_axes")));
}

enum class Jacobian { forward, reverse, hessian };

nb::object jacobian(const nb::callable& f, int argnum, Jacobian kind) {
  return nb::cpp_function([f, argnum, kind](nb::args args) -> ef::Tensor {
    const char* name = kind == Jacobian::forward ? "jacfwd" : kind == Jacobian::reverse ? "jacrev" : "hessian";
    ef::detail::check_argnum(name, argnum, args.size());
    // The other arguments reach f as they were given (Python values stay Python values).
    ef::detail::UnaryTensorFn g = [&](const ef::Tensor& x) {
      nb::list a;
      for (std::size_t i = 0; i < args.size(); ++i) {
        if (static_cast<int>(i) == argnum) a.append(nb::cast(x));
        else a.append(args[i]);
      }
      return to_tensor(f(*nb::tuple(a)));
    };
    ef::Tensor x = to_tensor(args[static_cast<std::size_t>(argnum)]);
    switch (kind) {
      case Jacobian::forward: return ef::detail::jacfwd_at(g, x);
      case Jacobian::reverse: return ef::detail::jacrev_at(g, x);
      case Jacobian::hessian: break;
    }
    // Reverse over reverse, as ef::hessian (include/eagerflow/autodiff/forward.h).
    return ef::detail::jacrev_at([&](const ef::Tensor& y) { return ef::detail::jacrev_at(g, y); }, x);
  });
}

}  // namespace

void init_transforms(nb::module_& m) {
  m.def(
      "jvp",
      [](nb::callable f, nb::handle primals, nb::handle tangents) {
        std::vector<ef::Tensor> xs = tensors_of(primals, "primals", false), vs = tensors_of(tangents, "tangents", true);
        Shape shape = Shape::single;
        auto body = [&](const std::vector<ef::Tensor>& a) { return flatten(call(f, a), shape); };
        auto [ys, ts] = ef::jvp(body, xs, vs);
        return nb::make_tuple(build(ys, shape), build(ts, shape));
      },
      "f"_a, "primals"_a, "tangents"_a,
      "(f(*primals), the tangent of f's outputs along `tangents`): JAX's jax.jvp. A tangent may be None (zeros).");
  m.def(
      "linearize",
      [](nb::callable f, nb::handle x) {
        auto [y, lin] = ef::linearize([&](const ef::Tensor& a) { return to_tensor(f(nb::cast(a))); }, to_tensor(x));
        // The linear map no longer calls f: it may outlive this call.
        nb::object fn = nb::cpp_function([lin = std::move(lin)](nb::handle v) { return lin(to_tensor(v)); });
        return nb::make_tuple(nb::cast(y), fn);
      },
      "f"_a, "x"_a, "(f(x), v -> J v): JAX's jax.linearize for a function of one tensor.");
  m.def(
      "jacfwd", [](nb::callable f, int argnums) { return jacobian(f, argnums, Jacobian::forward); }, "f"_a,
      "argnums"_a = 0, "The Jacobian by forward mode; shape f(x).shape + x.shape.");
  m.def(
      "jacrev", [](nb::callable f, int argnums) { return jacobian(f, argnums, Jacobian::reverse); }, "f"_a,
      "argnums"_a = 0, "The Jacobian by reverse mode; shape f(x).shape + x.shape.");
  m.def(
      "hessian", [](nb::callable f, int argnums) { return jacobian(f, argnums, Jacobian::hessian); }, "f"_a,
      "argnums"_a = 0, "The Hessian of a scalar function: jacfwd(jacrev(f)).");
  m.def(
      "vmap",
      [](nb::callable f, nb::object in_axes, nb::object out_axes) {
        ef::InAxes ia = in_axes_of(in_axes);
        ef::OutAxes oa = out_axes_of(out_axes);
        return nb::cpp_function([f, ia, oa](nb::args args) {
          std::vector<ef::Tensor> xs;
          for (auto a : args) xs.push_back(to_tensor(a));
          Shape shape = Shape::single;
          auto body = [&](const std::vector<ef::Tensor>& a) { return flatten(call(f, a), shape); };
          std::vector<ef::Tensor> outs = ef::detail::vmap_call(body, xs, ia, oa);  // sets `shape`
          return build(outs, shape);
        });
      },
      "f"_a, "in_axes"_a.none() = 0, "out_axes"_a = 0,
      "Batches f over axis in_axes of its arguments (an int for all, or one int or None per argument): JAX's "
      "jax.vmap. f returns a tensor or a tuple/list of tensors.");
}

}  // namespace efpy
