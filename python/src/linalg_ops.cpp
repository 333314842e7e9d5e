// ef::linalg (eagerflow/ops/linalg.h) as _core._linalg; python/eagerflow/linalg.py gives it TF's
// argument names.
#include "bindings.h"
#include "convert.h"
#include "eagerflow/ops/linalg.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

Tensor T(H h) { return to_tensor(h); }

}  // namespace

void init_linalg(nb::module_& m) {
  nb::module_ l = m.def_submodule("_linalg", "ef.linalg (python/eagerflow/linalg.py)");
  namespace la = ef::linalg;
#define EFPY_MATRIX_FN(name) l.def(#name, [](H a) { return la::name(T(a)); }, nb::arg("a"));
  EFPY_MATRIX_FN(cholesky) EFPY_MATRIX_FN(det) EFPY_MATRIX_FN(logdet) EFPY_MATRIX_FN(eigvalsh) EFPY_MATRIX_FN(singular_values)
  EFPY_MATRIX_FN(diag) EFPY_MATRIX_FN(diag_part) EFPY_MATRIX_FN(trace) EFPY_MATRIX_FN(adjoint)
#undef EFPY_MATRIX_FN
  l.def("slogdet", [](H a) { return la::slogdet(T(a)); }, nb::arg("a"));
  l.def("eigh", [](H a) { return la::eigh(T(a)); }, nb::arg("a"));
  l.def("svd", [](H a, bool full) { la::Svd d = la::svd(T(a), full); return nb::make_tuple(d.s, d.u, d.v); },
        nb::arg("a"), nb::arg("full_matrices") = false);
  l.def("qr", [](H a, bool full) { return la::qr(T(a), full); }, nb::arg("a"), nb::arg("full_matrices") = false);
  l.def("inv", [](H a, bool adjoint) { return la::inv(T(a), adjoint); }, nb::arg("a"), nb::arg("adjoint") = false);
  l.def("solve", [](H a, H b, bool adjoint) { auto [x, y] = tensor_operands(a, b); return la::solve(x, y, adjoint); },
        nb::arg("matrix"), nb::arg("rhs"), nb::arg("adjoint") = false);
  l.def("triangular_solve", [](H a, H b, bool lower, bool adjoint) {
          auto [x, y] = tensor_operands(a, b);
          return la::triangular_solve(x, y, lower, adjoint);
        }, nb::arg("matrix"), nb::arg("rhs"), nb::arg("lower") = true, nb::arg("adjoint") = false);
  l.def("cholesky_solve", [](H c, H b) { auto [x, y] = tensor_operands(c, b); return la::cholesky_solve(x, y); },
        nb::arg("chol"), nb::arg("rhs"));
  l.def("lstsq", [](H a, H b, double l2) { auto [x, y] = tensor_operands(a, b); return la::lstsq(x, y, l2); },
        nb::arg("matrix"), nb::arg("rhs"), nb::arg("l2_regularizer") = 0.0);
  l.def("pinv", [](H a, double rcond) { return la::pinv(T(a), rcond); }, nb::arg("a"), nb::arg("rcond") = -1.0);
  l.def("band_part", [](H a, std::int64_t lower, std::int64_t upper) { return la::band_part(T(a), lower, upper); },
        nb::arg("input"), nb::arg("num_lower"), nb::arg("num_upper"));
  l.def("set_diag", [](H a, H d) { auto [x, y] = tensor_operands(a, d); return la::set_diag(x, y); }, nb::arg("input"), nb::arg("diagonal"));
  l.def("matvec", [](H a, H b, bool ta) { auto [x, y] = tensor_operands(a, b); return la::matvec(x, y, ta); },
        nb::arg("a"), nb::arg("b"), nb::arg("transpose_a") = false);
  l.def("cross", [](H a, H b) { auto [x, y] = tensor_operands(a, b); return la::cross(x, y); }, nb::arg("a"), nb::arg("b"));
  l.def("tensordot", [](H a, H b, int axes) { auto [x, y] = tensor_operands(a, b); return la::tensordot(x, y, axes); },
        nb::arg("a"), nb::arg("b"), nb::arg("axes"));
  l.def("tensordot_axes", [](H a, H b, std::vector<int> aa, std::vector<int> ba) {
          auto [x, y] = tensor_operands(a, b);
          return la::tensordot(x, y, aa, ba);
        }, nb::arg("a"), nb::arg("b"), nb::arg("a_axes"), nb::arg("b_axes"));
  l.def("lu", [](H a, bool int64_index) { return la::lu(T(a), int64_index ? ef::DType::int64 : ef::DType::int32); },
        nb::arg("input"), nb::arg("int64_index") = false);
  l.def("lu_solve", [](H lu, H p, H b) { auto [x, y] = tensor_operands(lu, b); return la::lu_solve(x, T(p), y); },
        nb::arg("lower_upper"), nb::arg("perm"), nb::arg("rhs"));
  l.def("lu_reconstruct", [](H lu, H p) { return la::lu_reconstruct(T(lu), T(p)); }, nb::arg("lower_upper"), nb::arg("perm"));
  l.def("lu_matrix_inverse", [](H lu, H p) { return la::lu_matrix_inverse(T(lu), T(p)); }, nb::arg("lower_upper"), nb::arg("perm"));
  l.def("expm", [](H a) { return la::expm(T(a)); }, nb::arg("input"));
  l.def("sqrtm", [](H a) { return la::sqrtm(T(a)); }, nb::arg("input"));
  l.def("tridiagonal_solve", [](H d, H b, bool pivoting) {
          auto [x, y] = tensor_operands(d, b);
          return la::tridiagonal_solve(x, y, pivoting);
        }, nb::arg("diagonals"), nb::arg("rhs"), nb::arg("partial_pivoting") = true);
  l.def("tridiagonal_matmul", [](H d, H b) { auto [x, y] = tensor_operands(d, b); return la::tridiagonal_matmul(x, y); },
        nb::arg("diagonals"), nb::arg("rhs"));
  l.def("banded_triangular_solve", [](H bands, H b, bool lower, bool adjoint) {
          auto [x, y] = tensor_operands(bands, b);
          return la::banded_triangular_solve(x, y, lower, adjoint);
        }, nb::arg("bands"), nb::arg("rhs"), nb::arg("lower") = true, nb::arg("adjoint") = false);
}

}  // namespace efpy
