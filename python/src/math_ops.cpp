// ef.math's compositions (eagerflow/ops/math.h) as _core._math; python/eagerflow/math.py gives
// them TF's argument names.
#include "bindings.h"
#include "convert.h"
#include "eagerflow/ops/math.h"
#include "eagerflow/ops/segment.h"
#include "eagerflow/ops/special.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

Tensor T(H h) { return to_tensor(h); }

}  // namespace

void init_math(nb::module_& m) {
  nb::module_ mm = m.def_submodule("_math", "ef.math's compositions (python/eagerflow/math.py)");
#define EFPY_UNARY(name) mm.def(#name, [](H x) { return ef::math::name(T(x)); }, nb::arg("x"));
  EFPY_UNARY(is_nan) EFPY_UNARY(is_inf) EFPY_UNARY(is_finite) EFPY_UNARY(sign) EFPY_UNARY(reciprocal)
  EFPY_UNARY(log1p) EFPY_UNARY(softplus) EFPY_UNARY(log_sigmoid) EFPY_UNARY(lgamma) EFPY_UNARY(digamma) EFPY_UNARY(lbeta)
  EFPY_UNARY(erfinv) EFPY_UNARY(ndtri) EFPY_UNARY(erfcinv)
#undef EFPY_UNARY
#define EFPY_BINARY(name) \
  mm.def(#name, [](H a, H b) { auto [x, y] = tensor_operands(a, b); return ef::math::name(x, y); }, nb::arg("x"), nb::arg("y"));
  EFPY_BINARY(squared_difference) EFPY_BINARY(divide_no_nan) EFPY_BINARY(multiply_no_nan) EFPY_BINARY(xlogy)
  EFPY_BINARY(logical_xor)
#undef EFPY_BINARY
#define EFPY_REDUCTION(name)                                                                                  \
  mm.def(#name, [](H x, H axis, bool keepdims) { return ef::math::name(T(x), axes_arg(axis, "axis"), keepdims); }, \
         nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  EFPY_REDUCTION(reduce_prod) EFPY_REDUCTION(reduce_logsumexp) EFPY_REDUCTION(reduce_variance)
  EFPY_REDUCTION(reduce_std) EFPY_REDUCTION(reduce_euclidean_norm) EFPY_REDUCTION(count_nonzero)
#undef EFPY_REDUCTION
  mm.def("linspace", [](H start, H stop, std::int64_t num) { auto [a, b] = tensor_operands(start, stop); return ef::math::linspace(a, b, num); },
         nb::arg("start"), nb::arg("stop"), nb::arg("num"));
  mm.def("eye", [](std::int64_t rows, std::int64_t columns, H dtype) {
           return ef::math::eye(rows, columns, dtype.is_none() ? ef::DType::float32 : dtype_from_py(dtype));
         }, nb::arg("num_rows"), nb::arg("num_columns") = -1, nb::arg("dtype").none() = nb::none());
  mm.def("norm", [](H x, const std::string& ord, H axis, bool keepdims) {
           return ef::math::norm(T(x), ord, axes_arg(axis, "axis"), keepdims);
         }, nb::arg("x"), nb::arg("ord"), nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false);
  mm.def("clip_by_norm", [](H x, double clip_norm, H axes) { return ef::math::clip_by_norm(T(x), clip_norm, axes_arg(axes, "axes")); },
         nb::arg("t"), nb::arg("clip_norm"), nb::arg("axes").none() = nb::none());
  mm.def("clip_by_global_norm", [](const std::vector<std::optional<ef::Tensor>>& xs, double clip_norm) {
           std::vector<Tensor> in;
           for (const auto& x : xs) in.push_back(x ? *x : Tensor());
           auto [clipped, global] = ef::math::clip_by_global_norm(in, clip_norm);
           nb::list out;
           for (const Tensor& t : clipped) out.append(t.defined() ? nb::cast(t) : nb::none());
           return nb::make_tuple(out, global);
         }, nb::arg("t_list"), nb::arg("clip_norm"));
  mm.def("meshgrid", [](const std::vector<ef::Tensor>& xs, const std::string& indexing) { return ef::math::meshgrid(xs, indexing); },
         nb::arg("xs"), nb::arg("indexing") = "xy");
  mm.def("unsorted_segment_reduce", [](const std::string& kind, H data, H ids, std::int64_t n) {
           return ef::math::unsorted_segment_reduce(kind, T(data), T(ids), n);
         }, nb::arg("kind"), nb::arg("data"), nb::arg("segment_ids"), nb::arg("num_segments"));
  mm.def("segment_reduce", [](const std::string& kind, H data, H ids) { return ef::math::segment_reduce(kind, T(data), T(ids)); },
         nb::arg("kind"), nb::arg("data"), nb::arg("segment_ids"));
  mm.def("l2_normalize", [](H x, H axis, double epsilon) { return ef::math::l2_normalize(T(x), axes_arg(axis, "axis"), epsilon); },
         nb::arg("x"), nb::arg("axis").none() = nb::none(), nb::arg("epsilon") = 1e-12);
}

}  // namespace efpy
