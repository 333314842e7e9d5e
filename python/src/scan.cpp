// ef.scan's core: eagerflow._core._scan(body, init, xs, length, reverse) over flat lists of
// tensors. python/eagerflow/_scan.py flattens and rebuilds the pytrees (tuples, lists, dicts)
// that JAX users pass.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"

namespace efpy {
namespace {

std::vector<ef::Tensor> tensors_of(nb::handle seq, const char* what) {
  if (!(PyTuple_Check(seq.ptr()) || PyList_Check(seq.ptr())))
    ef::fail(ef::kWrongType, "scan", std::string(what) + " must be a list or tuple of tensors");
  std::vector<ef::Tensor> out;
  for (nb::handle h : seq) out.push_back(to_tensor(h));
  return out;
}

}  // namespace

void init_scan(nb::module_& m) {
  m.def(
      "_scan",
      [](nb::callable body, nb::handle init, nb::handle xs, std::optional<std::int64_t> length, bool reverse) {
        nb::object error_type = nb::module_::import_("eagerflow._core").attr("Error");
        ef::ScanBody f = [body, error_type](const std::vector<ef::Tensor>& carry, const std::vector<ef::Tensor>& x) {
          nb::object r;
          try {
            r = body(nb::cast(carry), nb::cast(x));
          } catch (nb::python_error& e) {
            // An ef.Error from the body becomes the ef::Error it was, so that ef::scan names
            // the step (or the traced specs) in front of it; other exceptions pass unchanged.
            if (!e.matches(error_type)) throw;
            throw ef::Error(kind_of_python(e), nb::cast<std::string>(nb::str(e.value())));
          }
          if (!PyTuple_Check(r.ptr()) || nb::len(r) != 2)
            ef::fail(ef::kWrongType, "scan", "the body must return a pair (carry, y)");
          return std::pair{tensors_of(r[0], "the body's carry"), tensors_of(r[1], "the body's y")};
        };
        auto [carry, ys] = ef::scan(f, tensors_of(init, "init"), tensors_of(xs, "xs"),
                                    ef::ScanOptions{.reverse = reverse, .length = length});
        return nb::make_tuple(nb::cast(carry), nb::cast(ys));
      },
      nb::arg("body"), nb::arg("init"), nb::arg("xs"), nb::arg("length").none() = nb::none(), nb::arg("reverse") = false);
}

}  // namespace efpy
