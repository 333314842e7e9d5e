// Complex tensors' own functions (eagerflow/ops/complex.h) as _core._complex; python/eagerflow
// (math.py, signal.py, linalg.py) gives them TF's names and arguments.
#include "bindings.h"
#include "convert.h"
#include "eagerflow/ops/complex.h"
#include "eagerflow/ops/ops.h"

#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

Tensor T(H h) { return to_tensor(h); }

std::vector<std::int64_t> lengths_arg(H h) {
  if (h.is_none()) return {};
  return dims_arg(h, "fft_length", /*allow_unknown=*/false);
}

}  // namespace

void init_complex(nb::module_& m) {
  nb::module_ c = m.def_submodule("_complex", "complex tensors: tf.complex, tf.math.real ..., tf.signal's FFTs");
  c.def("complex", [](H re, H im) {
    Tensor r = T(re), i = to_tensor(im, &r);
    return ef::complex(r, i);
  }, nb::arg("real"), nb::arg("imag"));
  c.def("real", [](H x) { return ef::real(T(x)); }, nb::arg("input"));
  c.def("imag", [](H x) { return ef::imag(T(x)); }, nb::arg("input"));
  c.def("conj", [](H x) { return ef::conj(T(x)); }, nb::arg("x"));
  c.def("angle", [](H x) { return ef::angle(T(x)); }, nb::arg("input"));
  c.def("matmul", [](H a, H b, bool ta, bool tb, bool ca, bool cb) {
    Tensor x = T(a), y = to_tensor(b, &x);
    return ef::matmul_conj(x, y, ta, tb, ca, cb);
  }, nb::arg("a"), nb::arg("b"), nb::arg("transpose_a") = false, nb::arg("transpose_b") = false,
     nb::arg("conj_a") = false, nb::arg("conj_b") = false);
  c.def("eig", [](H a) {
    auto [values, vectors] = ef::linalg::eig(T(a));
    return nb::make_tuple(values, vectors);
  }, nb::arg("tensor"));
  c.def("eigvals", [](H a) { return ef::linalg::eigvals(T(a)); }, nb::arg("tensor"));
  c.def("fft", [](H x) { return ef::signal::fft(T(x)); }, nb::arg("input"));
  c.def("ifft", [](H x) { return ef::signal::ifft(T(x)); }, nb::arg("input"));
  c.def("fft2d", [](H x) { return ef::signal::fft2d(T(x)); }, nb::arg("input"));
  c.def("ifft2d", [](H x) { return ef::signal::ifft2d(T(x)); }, nb::arg("input"));
  c.def("fft3d", [](H x) { return ef::signal::fft3d(T(x)); }, nb::arg("input"));
  c.def("ifft3d", [](H x) { return ef::signal::ifft3d(T(x)); }, nb::arg("input"));
  c.def("rfft", [](H x, H n, int rank) { return ef::signal::rfft(T(x), lengths_arg(n), rank); }, nb::arg("input"),
        nb::arg("fft_length").none() = nb::none(), nb::arg("rank") = 1);
  c.def("irfft", [](H x, H n, int rank) { return ef::signal::irfft(T(x), lengths_arg(n), rank); }, nb::arg("input"),
        nb::arg("fft_length").none() = nb::none(), nb::arg("rank") = 1);
}

}  // namespace efpy
