// The op table as ef.<name>: every argument that is a tensor also takes arrays and numbers.
#include <cmath>

#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"
#include "eagerflow/ops/op_observer.h"
#include "eagerflow/ops/scatter_nd.h"

namespace efpy {
namespace {

using ef::Tensor;
using H = nb::handle;

Tensor T(H h) { return to_tensor(h); }
// Two operands: a Python number takes the other operand's dtype.
std::pair<Tensor, Tensor> T2(H a, H b) {
  bool a_tensor = nb::isinstance<Tensor>(a);
  if (a_tensor || !nb::isinstance<Tensor>(b)) {
    Tensor x = to_tensor(a);
    return {x, to_tensor(b, &x)};
  }
  Tensor y = to_tensor(b);
  return {to_tensor(a, &y), y};
}

std::vector<int> axes_of(H axis) { return axes_arg(axis, "axis"); }

ef::Shape shape_of(H shape) { return ef::Shape(dims_arg(shape, "shape")); }

ef::Stride2 stride2(H s) {
  auto v = dims_arg(s, "strides", /*allow_unknown=*/false);
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() != 2) throw nb::value_error("expected an int or a pair of ints");
  return {v[0], v[1]};
}

std::vector<Tensor> tensor_list(H xs) {
  std::vector<Tensor> out;
  for (auto x : xs) out.push_back(to_tensor(x));
  return out;
}

std::optional<std::uint64_t> seed_of(H seed) {
  if (seed.is_none()) return std::nullopt;
  return seed_arg(seed, "seed");
}

ef::DType dtype_or(H d, ef::DType fallback) { return d.is_none() ? fallback : dtype_from_py(d); }

// A tf.range argument's dtype: a Python int is int32 (int64 beyond), a float float32, a
// tensor or array its own (a scalar of a numeric dtype).
ef::DType range_arg_dtype(H h, const char* what) {
  if (PyBool_Check(h.ptr()))
    throw nb::type_error((std::string("ef.range: ") + what + " must be a number, got bool").c_str());
  if (PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr())) return to_tensor(h).dtype();
  Tensor t = to_tensor(h);
  if (t.rank() != 0)
    throw nb::value_error(
        (std::string("ef.range: ") + what + " must be a scalar, got shape " + t.shape().str()).c_str());
  if (t.dtype() == ef::DType::bool_)
    throw nb::type_error((std::string("ef.range: ") + what + " must be a number, got a bool tensor").c_str());
  return t.dtype();
}

int range_rank(ef::DType d) {
  switch (d) {
    case ef::DType::int32: return 0;
    case ef::DType::int64: return 1;
    case ef::DType::bfloat16: return 2;
    case ef::DType::float16: return 2;
    case ef::DType::float32: return 3;
    case ef::DType::float64: return 4;
    case ef::DType::bool_:
    case ef::DType::string: return -1;
    case ef::DType::uint8: case ef::DType::int8: case ef::DType::int16: case ef::DType::uint16:
    case ef::DType::uint32: case ef::DType::uint64: return 0;
    case ef::DType::complex64: case ef::DType::complex128: return -1;
  }
  return -1;
}

// One argument as a number of dtype `d`: Python numbers must hold in d (1.5 as int32 is an
// error, as in TF); tensors are cast (truncated), as TF casts them.
double range_value(H h, ef::DType d) {
  Tensor t = PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) ? to_tensor_as(h, d) : to_tensor(h);
  return ef::cast(ef::cast(t, d), ef::DType::float64).item<double>();
}

Tensor range_op(H start, H limit, H delta, H dtype, H /*name*/) {
  nb::object zero = nb::int_(0);
  if (limit.is_none()) limit = start, start = zero;
  ef::DType d;
  if (!dtype.is_none()) {
    d = dtype_from_py(dtype);
    if (d == ef::DType::bool_) throw nb::type_error("ef.range: dtype must be numeric, got bool");
  } else {
    d = range_arg_dtype(start, "start");
    const std::pair<H, const char*> rest[] = {{limit, "limit"}, {delta, "delta"}};
    for (const auto& [h, what] : rest) {
      ef::DType a = range_arg_dtype(h, what);
      if (range_rank(a) > range_rank(d)) d = a;
    }
  }
  double lo = range_value(start, d), hi = range_value(limit, d), step = range_value(delta, d);
  if (step == 0) invalid_argument("[range] requires delta != 0");
  if (!std::isfinite(lo) || !std::isfinite(hi) || !std::isfinite(step))
    invalid_argument("[range] start, limit and delta must be finite, got " + std::to_string(lo) + ", " +
                     std::to_string(hi) + ", " + std::to_string(step));
  return ef::arange(lo, hi, step, d);
}

}  // namespace

std::pair<ef::Tensor, ef::Tensor> tensor_operands(nb::handle a, nb::handle b) { return T2(a, b); }

void init_ops(nb::module_& m) {
#define EF_UNARY(name) m.def(#name, [](H x) { return ef::name(T(x)); }, nb::arg("x"));
  EF_UNARY(logical_not) EF_UNARY(neg) EF_UNARY(abs) EF_UNARY(exp) EF_UNARY(log) EF_UNARY(sqrt) EF_UNARY(rsqrt)
  EF_UNARY(square) EF_UNARY(relu) EF_UNARY(sigmoid) EF_UNARY(tanh) EF_UNARY(gelu) EF_UNARY(erf) EF_UNARY(sin)
  EF_UNARY(cos) EF_UNARY(tan) EF_UNARY(asin) EF_UNARY(acos) EF_UNARY(atan) EF_UNARY(sinh) EF_UNARY(cosh) EF_UNARY(asinh)
  EF_UNARY(acosh) EF_UNARY(atanh) EF_UNARY(expm1) EF_UNARY(erfc) EF_UNARY(identity) EF_UNARY(stop_gradient) EF_UNARY(zeros_like) EF_UNARY(ones_like)
#undef EF_UNARY
  m.attr("negative") = m.attr("neg");
#define EF_BINARY(name)                                                      \
  m.def(#name, [](H a, H b) { auto [x, y] = T2(a, b); return ef::name(x, y); }, nb::arg("x"), nb::arg("y"));
  EF_BINARY(add) EF_BINARY(sub) EF_BINARY(mul) EF_BINARY(div) EF_BINARY(pow) EF_BINARY(maximum) EF_BINARY(minimum)
  EF_BINARY(equal) EF_BINARY(not_equal) EF_BINARY(less) EF_BINARY(less_equal) EF_BINARY(greater)
  EF_BINARY(greater_equal) EF_BINARY(logical_and) EF_BINARY(logical_or)
#undef EF_BINARY
  m.attr("subtract") = m.attr("sub");
  m.attr("multiply") = m.attr("mul");
  // tf.divide / tf.truediv: integers divide as float64 (ef.div keeps the operands' dtype).
  m.def("divide", [](H a, H b) { auto [x, y] = T2(a, b); return true_divide(x, y); }, nb::arg("x"), nb::arg("y"));
  m.attr("truediv") = m.attr("divide");

  m.def("where", [](H c, H a, H b) { auto [x, y] = T2(a, b); return ef::where(T(c), x, y); }, nb::arg("condition"),
        nb::arg("x"), nb::arg("y"));
  m.def("cast", [](H x, H dtype) { return ef::cast(T(x), dtype_from_py(dtype)); }, nb::arg("x"), nb::arg("dtype"));
  m.def("_saturate_cast", [](H x, H dtype) { return ef::saturate_cast(T(x), dtype_from_py(dtype)); }, nb::arg("value"),
        nb::arg("dtype"));

#define EF_REDUCE(name, alias)                                                                                   \
  m.def(#name, [](H x, H axis, bool keepdims) { return ef::name(T(x), axes_of(axis), keepdims); }, nb::arg("x"), \
        nb::arg("axis") = nb::none(), nb::arg("keepdims") = false);                                               \
  m.attr(alias) = m.attr(#name);
  EF_REDUCE(sum, "reduce_sum") EF_REDUCE(mean, "reduce_mean") EF_REDUCE(max, "reduce_max") EF_REDUCE(min, "reduce_min")
#undef EF_REDUCE
  m.def("argmax", [](H x, int axis, bool keepdims) { return ef::argmax(T(x), axis, keepdims); }, nb::arg("x"),
        nb::arg("axis") = -1, nb::arg("keepdims") = false);
  m.def("softmax", [](H x, int axis) { return ef::softmax(T(x), axis); }, nb::arg("x"), nb::arg("axis") = -1);
  m.def("log_softmax", [](H x, int axis) { return ef::log_softmax(T(x), axis); }, nb::arg("x"), nb::arg("axis") = -1);
  m.def("matmul",
        [](H a, H b, bool ta, bool tb) { auto [x, y] = T2(a, b); return ef::matmul(x, y, ta, tb); },
        nb::arg("a"), nb::arg("b"), nb::arg("transpose_a") = false, nb::arg("transpose_b") = false);
  m.def("conv2d",
        [](H x, H k, H strides, const std::string& padding, H dilation) {
          return ef::conv2d(T(x), T(k), stride2(strides), padding, stride2(dilation));
        },
        nb::arg("x"), nb::arg("kernel"), nb::arg("strides") = 1, nb::arg("padding") = "valid",
        nb::arg("dilation") = 1);
  m.def("max_pool2d",
        [](H x, H pool, H strides, const std::string& padding) {
          return ef::max_pool2d(T(x), stride2(pool), strides.is_none() ? std::nullopt : std::optional(stride2(strides)),
                                padding);
        },
        nb::arg("x"), nb::arg("pool_size") = 2, nb::arg("strides") = nb::none(), nb::arg("padding") = "valid");
  m.def("avg_pool2d",
        [](H x, H pool, H strides, const std::string& padding) {
          return ef::avg_pool2d(T(x), stride2(pool), strides.is_none() ? std::nullopt : std::optional(stride2(strides)),
                                padding);
        },
        nb::arg("x"), nb::arg("pool_size") = 2, nb::arg("strides") = nb::none(), nb::arg("padding") = "valid");
  m.def("reshape", [](H x, H shape) { return ef::reshape(T(x), shape_of(shape)); }, nb::arg("x"), nb::arg("shape"));
  m.def("transpose", [](H x, H perm) { return ef::transpose(T(x), axes_of(perm)); }, nb::arg("x"),
        nb::arg("perm") = nb::none());
  m.def("expand_dims", [](H x, int axis) { return ef::expand_dims(T(x), axis); }, nb::arg("x"), nb::arg("axis"));
  m.def("squeeze", [](H x, H axis) { return ef::squeeze(T(x), axes_of(axis)); }, nb::arg("x"),
        nb::arg("axis") = nb::none());
  m.def("concat", [](H xs, int axis) { return ef::concat(tensor_list(xs), axis); }, nb::arg("values"),
        nb::arg("axis"));
  m.def("stack", [](H xs, int axis) { return ef::stack(tensor_list(xs), axis); }, nb::arg("values"),
        nb::arg("axis") = 0);
  m.def("slice",
        [](H x, std::vector<std::int64_t> b, std::vector<std::int64_t> e, std::vector<std::int64_t> s) {
          return ef::slice(T(x), b, e, s);
        },
        nb::arg("x"), nb::arg("begin"), nb::arg("end"), nb::arg("strides") = std::vector<std::int64_t>{});
  m.def("gather", [](H x, H i, int axis) { return ef::gather(T(x), T(i), axis); }, nb::arg("x"), nb::arg("indices"),
        nb::arg("axis") = 0);
  m.def("gather_nd", [](H params, H indices, int batch_dims) { return ef::gather_nd(T(params), T(indices), batch_dims); },
        nb::arg("params"), nb::arg("indices"), nb::arg("batch_dims") = 0);
  m.def("scatter_nd", [](H indices, H updates, H shape) {
          return ef::scatter_nd(T(indices), T(updates), ef::Shape(dims_arg(shape, "shape", /*allow_unknown=*/false)));
        }, nb::arg("indices"), nb::arg("updates"), nb::arg("shape"));
#define EFPY_TENSOR_SCATTER(mode)                                                                                      \
  m.def("tensor_scatter_nd_" #mode, [](H t, H i, H u) { auto [x, y] = T2(t, u); return ef::tensor_scatter_nd_##mode(x, T(i), y); }, \
        nb::arg("tensor"), nb::arg("indices"), nb::arg("updates"));
  EFPY_TENSOR_SCATTER(update) EFPY_TENSOR_SCATTER(add) EFPY_TENSOR_SCATTER(sub) EFPY_TENSOR_SCATTER(min)
  EFPY_TENSOR_SCATTER(max)
#undef EFPY_TENSOR_SCATTER
  m.def("one_hot", [](H i, std::int64_t depth, H dtype) { return ef::one_hot(T(i), depth, dtype_or(dtype, ef::DType::float32)); },
        nb::arg("indices"), nb::arg("depth"), nb::arg("dtype") = nb::none());
  m.def("shape", [](H x) { return ef::shape(T(x)); }, nb::arg("x"));
  m.def("size", [](H x) { return ef::size(T(x)); }, nb::arg("x"));
  m.def(
      "full_like",
      [](H x, H v) {
        Tensor t = T(x);
        return ef::full_like(t, fill_value(v, t.dtype(), "full_like: value"));
      },
      nb::arg("x"), nb::arg("value"));
  m.def("broadcast_to", [](H x, H shape) { return ef::broadcast_to(T(x), shape_of(shape)); }, nb::arg("x"),
        nb::arg("shape"));
  m.def("broadcast_like", [](H x, H like) { return ef::broadcast_like(T(x), T(like)); });
  m.def("sum_to", [](H x, H like) { return ef::sum_to(T(x), T(like)); });
  m.def("reshape_like", [](H x, H like) { return ef::reshape_like(T(x), T(like)); });
  m.def("zeros", [](H shape, H dtype) { return ef::zeros(shape_of(shape), dtype_or(dtype, ef::DType::float32)); },
        nb::arg("shape"), nb::arg("dtype") = nb::none());
  m.def("ones", [](H shape, H dtype) { return ef::ones(shape_of(shape), dtype_or(dtype, ef::DType::float32)); },
        nb::arg("shape"), nb::arg("dtype") = nb::none());
  // tf.fill: the dtype is the value's (int32 for a Python int, float32 for a float) unless given.
  m.def("fill",
        [](H shape, H v, H dtype) {
          ef::DType d = dtype.is_none() ? T(v).dtype() : dtype_from_py(dtype);
          return ef::full(shape_of(shape), fill_value(v, d, "fill: value"), d);
        },
        nb::arg("dims"), nb::arg("value"), nb::arg("dtype") = nb::none());
  m.def("range", &range_op, nb::arg("start"), nb::arg("limit") = nb::none(), nb::arg("delta") = 1,
        nb::arg("dtype") = nb::none(), nb::arg("name") = nb::none(),
        "tf.range: [start, limit) by delta; the dtype is the widest of the arguments' (int32 < int64 < float32 < "
        "float64: a Python int is int32, a float float32) unless `dtype` is given.");
  m.def("check_numerics", [](H x, const std::string& msg) { return ef::check_numerics(T(x), msg); }, nb::arg("x"),
        nb::arg("message"));
  m.def("class_indices", [](H x, std::int64_t n, const std::string& who) { return ef::class_indices(T(x), n, who); });
  m.def("_set_check_numerics", &ef::debug::enable_check_numerics, nb::arg("on"));
  m.def("_check_numerics_enabled", &ef::debug::check_numerics_enabled);
  m.def("_set_log_device_placement", &ef::debug::set_log_device_placement, nb::arg("on"));
  m.def("_log_device_placement", &ef::debug::log_device_placement);
  m.def("_assert", [](H condition, const std::vector<ef::Tensor>& data, const std::string& message, std::int64_t summarize) {
    ef::assert_that(T(condition), data, message, summarize);
  }, nb::arg("condition"), nb::arg("data"), nb::arg("message"), nb::arg("summarize") = 3,
     "tf.debugging.Assert's op: INVALID_ARGUMENT when any element of condition is false (an effect: traced, it "
     "checks every call).");

  // ef.print: an op, so it prints at every call of a traced function. Tensors print their
  // values; anything else prints as str() at trace time.
  m.def("print", [](nb::args args, nb::kwargs kwargs) {
    std::vector<ef::detail::PrintPiece> pieces;
    std::vector<Tensor> tensors;
    for (auto a : args) {
      if (nb::isinstance<Tensor>(a)) {
        pieces.push_back({{}, true});
        tensors.push_back(nb::cast<Tensor>(a));
      } else if (nb::hasattr(a, "_ef_tensor")) {
        pieces.push_back({{}, true});
        tensors.push_back(to_tensor(a));
      } else {
        pieces.push_back({nb::cast<std::string>(nb::str(a)), false});
      }
    }
    ef::detail::print_op(std::move(pieces), std::move(tensors));
  });
  // Sends ef.print's lines to a Python callable (sys.stdout.write by default in the package).
  m.def("_set_print_sink", [](nb::object sink) {
    if (sink.is_none()) {
      ef::set_print_sink(nullptr);
      return;
    }
    auto keep = std::make_shared<nb::object>(std::move(sink));
    ef::set_print_sink([keep](std::string_view line) {
      nb::gil_scoped_acquire gil;
      // Printed string tensors may hold any bytes: invalid UTF-8 is written escaped, never an error.
      nb::object text = nb::steal(PyUnicode_DecodeUTF8(line.data(), static_cast<Py_ssize_t>(line.size()), "backslashreplace"));
      if (!text) throw nb::python_error();
      (*keep)(text);
    });
  }, nb::arg("sink").none());

  // ef.cond(pred, true_fn, false_fn): each branch returns a tensor or a tuple/list of tensors.
  m.def(
      "cond",
      [](H pred, nb::callable true_fn, nb::callable false_fn) -> nb::object {
        auto single = std::make_shared<std::optional<bool>>();
        auto wrap = [single](nb::callable fn) -> ef::detail::Branch {
          return [fn, single]() -> std::vector<Tensor> {
            nb::object r = fn();
            bool is_single = !(PyTuple_Check(r.ptr()) || PyList_Check(r.ptr()));
            if (!single->has_value()) *single = is_single;
            if (is_single) return {to_tensor(r)};
            return tensor_list(r);
          };
        };
        std::vector<Tensor> out = ef::detail::cond_impl(T(pred), wrap(true_fn), wrap(false_fn));
        if (single->value_or(true)) return nb::cast(out.at(0));
        return nb::tuple(nb::cast(out));
      },
      nb::arg("pred"), nb::arg("true_fn"), nb::arg("false_fn"));
  m.def(
      "while_loop",
      [](nb::callable cond_fn, nb::callable body_fn, H loop_vars, std::optional<std::int64_t> max_iter,
         nb::handle shape_invariants) {
        ef::LoopCond c = [cond_fn](const std::vector<Tensor>& vs) { return to_tensor(cond_fn(*nb::cast(vs))); };
        ef::LoopBody b = [body_fn](const std::vector<Tensor>& vs) {
          nb::object r = body_fn(*nb::cast(vs));
          if (!(PyTuple_Check(r.ptr()) || PyList_Check(r.ptr()))) return std::vector<Tensor>{to_tensor(r)};
          return tensor_list(r);
        };
        // TF's shape_invariants: None, or one entry per loop variable: None (its own shape) or a
        // shape whose None dims may change between iterations.
        std::vector<std::optional<ef::Shape>> invariants;
        if (!shape_invariants.is_none())
          for (nb::handle s : shape_invariants) {
            if (s.is_none()) {
              invariants.emplace_back();
              continue;
            }
            std::vector<std::int64_t> dims;
            for (nb::handle d : s) dims.push_back(d.is_none() ? ef::kDynamic : nb::cast<std::int64_t>(d));
            invariants.emplace_back(ef::Shape(dims));
          }
        return ef::while_loop(c, b, tensor_list(loop_vars), max_iter, invariants);
      },
      nb::arg("cond"), nb::arg("body"), nb::arg("loop_vars"), nb::arg("maximum_iterations") = nb::none(),
      nb::arg("shape_invariants") = nb::none());

  nb::module_ r = m.def_submodule("random", "Random draws: stateful ops (fresh numbers at every call of a graph).");
  r.def("set_seed", &ef::random::set_seed, nb::arg("seed"));
  // keras.random.SeedGenerator: a seed with its own draw counter; pass it as seed= to draw its
  // sequence (each draw the next set of numbers, the same sequence for another generator of the
  // same seed).
  using Generator = ef::random::SeedGenerator;
  nb::class_<Generator>(r, "SeedGenerator")
      .def("__init__",
           [](Generator* g, H seed) {
             if (seed.is_none()) new (g) Generator();
             else new (g) Generator(seed_arg(seed, "seed"));
           },
           nb::arg("seed") = nb::none())
      .def_prop_ro("seed", &Generator::seed)
      .def_prop_rw("draws", &Generator::draws, [](Generator& g, std::uint64_t n) { g.set_draws(n); })
      .def("__repr__", [](const Generator& g) {
        return "<SeedGenerator seed=" + std::to_string(g.seed()) + " draws=" + std::to_string(g.draws()) + ">";
      });
  auto generator_of = [](H seed) -> const Generator* {
    return nb::isinstance<Generator>(seed) ? nb::inst_ptr<Generator>(seed) : nullptr;
  };
  r.def("uniform",
        [generator_of](H shape, double lo, double hi, H dtype, H seed) {
          ef::DType d = dtype_or(dtype, ef::DType::float32);
          if (auto* g = generator_of(seed)) return ef::random::uniform(shape_of(shape), lo, hi, d, *g);
          return ef::random::uniform(shape_of(shape), lo, hi, d, seed_of(seed));
        },
        nb::arg("shape"), nb::arg("minval") = 0.0, nb::arg("maxval") = 1.0, nb::arg("dtype") = nb::none(),
        nb::arg("seed") = nb::none());
  r.def("normal",
        [generator_of](H shape, double mean, double stddev, H dtype, H seed) {
          ef::DType d = dtype_or(dtype, ef::DType::float32);
          if (auto* g = generator_of(seed)) return ef::random::normal(shape_of(shape), mean, stddev, d, *g);
          return ef::random::normal(shape_of(shape), mean, stddev, d, seed_of(seed));
        },
        nb::arg("shape"), nb::arg("mean") = 0.0, nb::arg("stddev") = 1.0, nb::arg("dtype") = nb::none(),
        nb::arg("seed") = nb::none());
  r.def("truncated_normal",
        [generator_of](H shape, double mean, double stddev, H dtype, H seed) {
          ef::DType d = dtype_or(dtype, ef::DType::float32);
          if (auto* g = generator_of(seed)) return ef::random::truncated_normal(shape_of(shape), mean, stddev, d, *g);
          return ef::random::truncated_normal(shape_of(shape), mean, stddev, d, seed_of(seed));
        },
        nb::arg("shape"), nb::arg("mean") = 0.0, nb::arg("stddev") = 1.0, nb::arg("dtype") = nb::none(),
        nb::arg("seed") = nb::none());
  r.def("stateless_truncated_normal",
        [](H shape, std::uint64_t seed, double mean, double sd, H dtype) {
          return ef::random::stateless_truncated_normal(shape_of(shape), seed, mean, sd, dtype_or(dtype, ef::DType::float32));
        },
        nb::arg("shape"), nb::arg("seed"), nb::arg("mean") = 0.0, nb::arg("stddev") = 1.0, nb::arg("dtype") = nb::none());
  r.def("uniform_like",
        [generator_of](H x, double lo, double hi, H seed) {
          if (auto* g = generator_of(seed)) return ef::random::uniform_like(T(x), lo, hi, *g);
          return ef::random::uniform_like(T(x), lo, hi, seed_of(seed));
        },
        nb::arg("x"), nb::arg("minval") = 0.0, nb::arg("maxval") = 1.0, nb::arg("seed") = nb::none());
  r.def("normal_like",
        [generator_of](H x, double mean, double sd, H seed) {
          if (auto* g = generator_of(seed)) return ef::random::normal_like(T(x), mean, sd, *g);
          return ef::random::normal_like(T(x), mean, sd, seed_of(seed));
        },
        nb::arg("x"), nb::arg("mean") = 0.0, nb::arg("stddev") = 1.0, nb::arg("seed") = nb::none());
  r.def("stateless_uniform",
        [](H shape, std::uint64_t seed, double lo, double hi, H dtype) {
          return ef::random::stateless_uniform(shape_of(shape), seed, lo, hi, dtype_or(dtype, ef::DType::float32));
        },
        nb::arg("shape"), nb::arg("seed"), nb::arg("minval") = 0.0, nb::arg("maxval") = 1.0, nb::arg("dtype") = nb::none());
  r.def("stateless_normal",
        [](H shape, std::uint64_t seed, double mean, double sd, H dtype) {
          return ef::random::stateless_normal(shape_of(shape), seed, mean, sd, dtype_or(dtype, ef::DType::float32));
        },
        nb::arg("shape"), nb::arg("seed"), nb::arg("mean") = 0.0, nb::arg("stddev") = 1.0, nb::arg("dtype") = nb::none());
}

}  // namespace efpy
