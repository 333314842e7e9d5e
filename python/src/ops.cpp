// The op table as ef.<name>: every argument that is a tensor also takes arrays and numbers.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"

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

std::vector<int> axes_of(H axis) {
  if (axis.is_none()) return {};
  if (PyLong_Check(axis.ptr())) return {nb::cast<int>(axis)};
  return nb::cast<std::vector<int>>(axis);
}

ef::Shape shape_of(H shape) {
  if (nb::isinstance<Tensor>(shape)) return ef::Shape(nb::cast<Tensor>(shape).to_vector<std::int64_t>());
  if (PyLong_Check(shape.ptr())) return ef::Shape{nb::cast<std::int64_t>(shape)};
  std::vector<std::int64_t> dims;
  for (auto d : shape) dims.push_back(d.is_none() ? ef::kDynamic : nb::cast<std::int64_t>(d));
  return ef::Shape(dims);
}

ef::Stride2 stride2(H s) {
  if (PyLong_Check(s.ptr())) {
    auto v = nb::cast<std::int64_t>(s);
    return {v, v};
  }
  auto v = nb::cast<std::vector<std::int64_t>>(s);
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
  return nb::cast<std::uint64_t>(seed);
}

ef::DType dtype_or(H d, ef::DType fallback) { return d.is_none() ? fallback : dtype_from_py(d); }


}  // namespace

void init_ops(nb::module_& m) {
#define EF_UNARY(name) m.def(#name, [](H x) { return ef::name(T(x)); }, nb::arg("x"));
  EF_UNARY(logical_not) EF_UNARY(neg) EF_UNARY(abs) EF_UNARY(exp) EF_UNARY(log) EF_UNARY(sqrt) EF_UNARY(rsqrt)
  EF_UNARY(square) EF_UNARY(relu) EF_UNARY(sigmoid) EF_UNARY(tanh) EF_UNARY(gelu) EF_UNARY(erf) EF_UNARY(sin)
  EF_UNARY(cos) EF_UNARY(identity) EF_UNARY(stop_gradient) EF_UNARY(zeros_like) EF_UNARY(ones_like)
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
  m.attr("divide") = m.attr("div");

  m.def("where", [](H c, H a, H b) { auto [x, y] = T2(a, b); return ef::where(T(c), x, y); }, nb::arg("condition"),
        nb::arg("x"), nb::arg("y"));
  m.def("cast", [](H x, H dtype) { return ef::cast(T(x), dtype_from_py(dtype)); }, nb::arg("x"), nb::arg("dtype"));

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
  m.def("one_hot", [](H i, std::int64_t depth, H dtype) { return ef::one_hot(T(i), depth, dtype_or(dtype, ef::DType::float32)); },
        nb::arg("indices"), nb::arg("depth"), nb::arg("dtype") = nb::none());
  m.def("shape", [](H x) { return ef::shape(T(x)); }, nb::arg("x"));
  m.def("size", [](H x) { return ef::size(T(x)); }, nb::arg("x"));
  m.def("full_like", [](H x, double v) { return ef::full_like(T(x), v); }, nb::arg("x"), nb::arg("value"));
  m.def("broadcast_to", [](H x, H shape) { return ef::broadcast_to(T(x), shape_of(shape)); }, nb::arg("x"),
        nb::arg("shape"));
  m.def("broadcast_like", [](H x, H like) { return ef::broadcast_like(T(x), T(like)); });
  m.def("sum_to", [](H x, H like) { return ef::sum_to(T(x), T(like)); });
  m.def("reshape_like", [](H x, H like) { return ef::reshape_like(T(x), T(like)); });
  m.def("zeros", [](H shape, H dtype) { return ef::zeros(shape_of(shape), dtype_or(dtype, ef::DType::float32)); },
        nb::arg("shape"), nb::arg("dtype") = nb::none());
  m.def("ones", [](H shape, H dtype) { return ef::ones(shape_of(shape), dtype_or(dtype, ef::DType::float32)); },
        nb::arg("shape"), nb::arg("dtype") = nb::none());
  m.def("fill", [](H shape, double v, H dtype) { return ef::full(shape_of(shape), v, dtype_or(dtype, ef::DType::float32)); },
        nb::arg("dims"), nb::arg("value"), nb::arg("dtype") = nb::none());
  m.def("range",
        [](double start, H limit, double delta, H dtype) {
          if (limit.is_none()) return ef::arange(0, start, delta, dtype_or(dtype, ef::DType::int32));
          return ef::arange(start, nb::cast<double>(limit), delta, dtype_or(dtype, ef::DType::int32));
        },
        nb::arg("start"), nb::arg("limit") = nb::none(), nb::arg("delta") = 1.0, nb::arg("dtype") = nb::none());
  m.def("check_numerics", [](H x, const std::string& msg) { return ef::check_numerics(T(x), msg); }, nb::arg("x"),
        nb::arg("message"));
  m.def("class_indices", [](H x, std::int64_t n, const std::string& who) { return ef::class_indices(T(x), n, who); });

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
      (*keep)(nb::str(line.data(), line.size()));
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
      [](nb::callable cond_fn, nb::callable body_fn, H loop_vars, std::optional<std::int64_t> max_iter) {
        ef::LoopCond c = [cond_fn](const std::vector<Tensor>& vs) { return to_tensor(cond_fn(*nb::cast(vs))); };
        ef::LoopBody b = [body_fn](const std::vector<Tensor>& vs) {
          nb::object r = body_fn(*nb::cast(vs));
          if (!(PyTuple_Check(r.ptr()) || PyList_Check(r.ptr()))) return std::vector<Tensor>{to_tensor(r)};
          return tensor_list(r);
        };
        return ef::while_loop(c, b, tensor_list(loop_vars), max_iter);
      },
      nb::arg("cond"), nb::arg("body"), nb::arg("loop_vars"), nb::arg("maximum_iterations") = nb::none());

  nb::module_ r = m.def_submodule("random", "Random draws: stateful ops (fresh numbers at every call of a graph).");
  r.def("set_seed", &ef::random::set_seed, nb::arg("seed"));
  r.def("uniform",
        [](H shape, double lo, double hi, H dtype, H seed) {
          return ef::random::uniform(shape_of(shape), lo, hi, dtype_or(dtype, ef::DType::float32), seed_of(seed));
        },
        nb::arg("shape"), nb::arg("minval") = 0.0, nb::arg("maxval") = 1.0, nb::arg("dtype") = nb::none(),
        nb::arg("seed") = nb::none());
  r.def("normal",
        [](H shape, double mean, double stddev, H dtype, H seed) {
          return ef::random::normal(shape_of(shape), mean, stddev, dtype_or(dtype, ef::DType::float32), seed_of(seed));
        },
        nb::arg("shape"), nb::arg("mean") = 0.0, nb::arg("stddev") = 1.0, nb::arg("dtype") = nb::none(),
        nb::arg("seed") = nb::none());
  r.def("uniform_like", [](H x, double lo, double hi, H seed) { return ef::random::uniform_like(T(x), lo, hi, seed_of(seed)); },
        nb::arg("x"), nb::arg("minval") = 0.0, nb::arg("maxval") = 1.0, nb::arg("seed") = nb::none());
  r.def("normal_like", [](H x, double mean, double sd, H seed) { return ef::random::normal_like(T(x), mean, sd, seed_of(seed)); },
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
