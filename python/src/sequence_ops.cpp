// Issue 18's ops as ef.<name> with NumPy/Keras-like signatures (ef.einsum, ef.cumsum, ef.pad,
// ef.top_k, ...) and ef.random.randint / categorical / stateless_categorical / permutation.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

Tensor T(H h) { return to_tensor(h); }

bool is_number(H h) { return PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) || PyBool_Check(h.ptr()); }

std::optional<std::uint64_t> seed_of(H seed) {
  if (seed.is_none()) return std::nullopt;
  return seed_arg(seed, "seed");
}

ef::Shape shape_of(H shape) { return ef::Shape(dims_arg(shape, "shape", /*allow_unknown=*/false)); }

std::vector<int> axes_of(H axis) { return axes_arg(axis, "axis"); }

std::vector<std::int64_t> ints_of(H v) { return dims_arg(v, "value", /*allow_unknown=*/false); }

// np.pad's pad_width / tf.pad's paddings: an int (every side of every axis), one pair (every
// axis), or one pair per axis.
std::vector<std::pair<std::int64_t, std::int64_t>> paddings_of(H p, int rank) {
  if (nb::isinstance<Tensor>(p)) {
    Tensor t = nb::cast<Tensor>(p);
    auto v = ef::cast(t, ef::DType::int64).to_vector<std::int64_t>();
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    for (std::size_t i = 0; i + 1 < v.size(); i += 2) out.emplace_back(v[i], v[i + 1]);
    return out;
  }
  if (PyLong_Check(p.ptr())) {
    auto n = int_arg(p, "paddings");
    return std::vector<std::pair<std::int64_t, std::int64_t>>(static_cast<std::size_t>(rank), {n, n});
  }
  std::vector<nb::handle> items;
  for (auto x : p) items.push_back(x);
  if (items.size() == 2 && PyLong_Check(items[0].ptr()) && PyLong_Check(items[1].ptr()))
    return std::vector<std::pair<std::int64_t, std::int64_t>>(
        static_cast<std::size_t>(rank), {int_arg(items[0], "paddings"), int_arg(items[1], "paddings")});
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (auto x : items) {
    std::vector<std::int64_t> pair = ints_of(x);
    if (pair.size() == 1) pair.push_back(pair[0]);
    if (pair.size() != 2) throw nb::value_error("pad: each axis needs a (before, after) pair");
    out.emplace_back(pair[0], pair[1]);
  }
  if (out.size() == 1 && rank > 1) out.resize(static_cast<std::size_t>(rank), out[0]);
  return out;
}

}  // namespace

void init_sequence_ops(nb::module_& m) {
  m.def("tril", [](H x, std::int64_t k) { return ef::tril(T(x), k); }, nb::arg("x"), nb::arg("k") = 0);
  m.def("triu", [](H x, std::int64_t k) { return ef::triu(T(x), k); }, nb::arg("x"), nb::arg("k") = 0);
  m.def("floor", [](H x) { return ef::floor(T(x)); }, nb::arg("x"));
  m.def("ceil", [](H x) { return ef::ceil(T(x)); }, nb::arg("x"));
  m.def("round", [](H x) { return ef::round(T(x)); }, nb::arg("x"), "Round half to even (NumPy, TF).");
  m.def(
      "clip",
      [](H x, H lo, H hi) {
        Tensor t = T(x);
        if (is_number(lo) && is_number(hi)) return ef::clip(t, nb::cast<double>(lo), nb::cast<double>(hi));
        return ef::clip(t, to_tensor(lo, &t), to_tensor(hi, &t));
      },
      nb::arg("x"), nb::arg("x_min"), nb::arg("x_max"), "np.clip / keras.ops.clip / tf.clip_by_value.");
  m.attr("clip_by_value") = m.attr("clip");
  m.def("any", [](H x, H axis, bool keepdims) { return ef::any(T(x), axes_of(axis), keepdims); }, nb::arg("x"),
        nb::arg("axis") = nb::none(), nb::arg("keepdims") = false);
  m.def("all", [](H x, H axis, bool keepdims) { return ef::all(T(x), axes_of(axis), keepdims); }, nb::arg("x"),
        nb::arg("axis") = nb::none(), nb::arg("keepdims") = false);
  m.attr("reduce_any") = m.attr("any");
  m.attr("reduce_all") = m.attr("all");
  m.def(
      "pad",
      [](H x, H paddings, const std::string& mode, H value) {
        Tensor t = T(x);
        return ef::pad(t, paddings_of(paddings, t.rank()), mode, fill_value(value, t.dtype(), "pad: constant_values"));
      },
      nb::arg("x"), nb::arg("paddings"), nb::arg("mode") = "constant", nb::arg("constant_values") = 0,
      "np.pad / tf.pad: paddings an int, a (before, after) pair or one pair per axis; mode 'constant', "
      "'reflect' or 'symmetric' (any case).");
  m.def("tile", [](H x, H multiples) { return ef::tile(T(x), ints_of(multiples)); }, nb::arg("x"), nb::arg("multiples"));
  m.def(
      "repeat",
      [](H x, H repeats, std::optional<int> axis) {
        if (PyLong_Check(repeats.ptr())) return ef::repeat(T(x), int_arg(repeats, "repeats"), axis);
        return ef::repeat(T(x), ints_of(repeats), axis);
      },
      nb::arg("x"), nb::arg("repeats"), nb::arg("axis") = nb::none());
  for (bool prod : {false, true})
    m.def(
        prod ? "cumprod" : "cumsum",
        [prod](H x, std::optional<int> axis, bool exclusive, bool reverse) {
          Tensor t = T(x);
          if (!axis) t = ef::reshape(t, {-1});  // NumPy / Keras: no axis flattens
          int a = axis.value_or(0);
          return prod ? ef::cumprod(t, a, exclusive, reverse) : ef::cumsum(t, a, exclusive, reverse);
        },
        nb::arg("x"), nb::arg("axis") = nb::none(), nb::arg("exclusive") = false, nb::arg("reverse") = false);
  m.def(
      "einsum",
      [](const std::string& eq, nb::args operands) {
        std::vector<Tensor> ts;
        for (auto o : operands) ts.push_back(T(o));
        return ef::einsum(eq, ts);
      },
      nb::arg("subscripts"), nb::arg("operands"));
  m.def("sort", [](H x, int axis, bool descending) { return ef::sort(T(x), axis, descending); }, nb::arg("x"),
        nb::arg("axis") = -1, nb::arg("descending") = false);
  m.def("argsort", [](H x, int axis, bool descending) { return ef::argsort(T(x), axis, descending); }, nb::arg("x"),
        nb::arg("axis") = -1, nb::arg("descending") = false);
  m.def(
      "top_k",
      [](H x, std::int64_t k) {
        auto r = ef::top_k(T(x), k);
        return nb::make_tuple(r.values, r.indices);
      },
      nb::arg("x"), nb::arg("k") = 1, "tf.math.top_k: (values, int32 indices) over the last axis, largest first.");
  m.def("take_along_axis", [](H x, H idx, int axis) { return ef::take_along_axis(T(x), T(idx), axis); }, nb::arg("x"),
        nb::arg("indices"), nb::arg("axis"));

  nb::module_ r = nb::borrow<nb::module_>(m.attr("random"));
  r.def(
      "randint",
      [](H shape, std::int64_t lo, std::int64_t hi, H dtype, H seed) {
        return ef::random::randint(shape_of(shape), lo, hi, dtype.is_none() ? ef::DType::int32 : dtype_from_py(dtype), seed_of(seed));
      },
      nb::arg("shape"), nb::arg("minval"), nb::arg("maxval"), nb::arg("dtype") = "int32", nb::arg("seed") = nb::none());
  r.def(
      "categorical",
      [](H logits, std::int64_t n, H dtype, H seed) {
        return ef::random::categorical(T(logits), n, dtype.is_none() ? ef::DType::int64 : dtype_from_py(dtype), seed_of(seed));
      },
      nb::arg("logits"), nb::arg("num_samples"), nb::arg("dtype") = nb::none(), nb::arg("seed") = nb::none());
  r.def(
      "stateless_categorical",
      [](H logits, std::int64_t n, std::uint64_t seed, H dtype) {
        return ef::random::stateless_categorical(T(logits), n, seed, dtype.is_none() ? ef::DType::int64 : dtype_from_py(dtype));
      },
      nb::arg("logits"), nb::arg("num_samples"), nb::arg("seed"), nb::arg("dtype") = nb::none());
  r.def(
      "permutation",
      [](H x, H seed) {
        if (PyLong_Check(x.ptr())) return ef::random::permutation(int_arg(x, "x"), seed_of(seed));
        Tensor t = T(x);  // np.random.permutation(array): shuffled along axis 0
        if (t.rank() == 0) throw nb::value_error("permutation: x must be an int or have rank >= 1");
        return ef::gather(t, ef::random::permutation(t.dim(0), seed_of(seed)), 0);
      },
      nb::arg("x"), nb::arg("seed") = nb::none());
}

}  // namespace efpy
