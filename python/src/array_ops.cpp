// ef's array functions (eagerflow/ops/array_ops.h) as _core._array; python/eagerflow/_array_ops.py
// gives them TF's argument names.
#include "bindings.h"
#include "convert.h"
#include "eagerflow/ops/array_ops.h"

#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

Tensor T(H h) { return to_tensor(h); }

ef::DType dtype_or_default(H d, ef::DType fallback) { return d.is_none() ? fallback : dtype_from_py(d); }

}  // namespace

void init_array_ops(nb::module_& m) {
  nb::module_ a = m.def_submodule("_array", "TF's array functions (python/eagerflow/_array_ops.py)");
  a.def("reverse", [](H x, std::vector<int> axes) { return ef::reverse(T(x), axes); }, nb::arg("x"), nb::arg("axes"));
  a.def("roll", [](H x, std::vector<std::int64_t> shifts, std::vector<int> axes) { return ef::roll(T(x), shifts, axes); },
        nb::arg("x"), nb::arg("shifts"), nb::arg("axes"));
  a.def("split_equal", [](H x, std::int64_t num, int axis) { return ef::split(T(x), num, axis); }, nb::arg("x"), nb::arg("num"),
        nb::arg("axis"));
  a.def("split_sizes", [](H x, std::vector<std::int64_t> sizes, int axis) { return ef::split(T(x), sizes, axis); },
        nb::arg("x"), nb::arg("sizes"), nb::arg("axis"));
  a.def("unstack", [](H x, int axis) { return ef::unstack(T(x), axis); }, nb::arg("x"), nb::arg("axis"));
  a.def("sequence_mask", [](H lengths, std::int64_t maxlen, H dtype) {
          return ef::sequence_mask(T(lengths), maxlen, dtype_or_default(dtype, ef::DType::bool_));
        }, nb::arg("lengths"), nb::arg("maxlen") = -1, nb::arg("dtype") = nb::none());
  a.def("searchsorted", [](H seq, H values, bool right, H out_type) {
          auto [s, v] = tensor_operands(seq, values);
          return ef::searchsorted(s, v, right, dtype_or_default(out_type, ef::DType::int32));
        }, nb::arg("sorted_sequence"), nb::arg("values"), nb::arg("right") = false, nb::arg("out_type") = nb::none());
  a.def("boolean_mask", [](H x, H mask, int axis) { return ef::boolean_mask(T(x), T(mask), axis); }, nb::arg("x"),
        nb::arg("mask"), nb::arg("axis") = 0);
  a.def("where_coordinates", [](H c) { return ef::where_coordinates(T(c)); }, nb::arg("condition"));
  a.def("unique", [](H x, H out_idx) {
          ef::Unique u = ef::unique(T(x), dtype_or_default(out_idx, ef::DType::int32));
          return nb::make_tuple(u.y, u.idx, u.count);
        }, nb::arg("x"), nb::arg("out_idx") = nb::none());
}

}  // namespace efpy
