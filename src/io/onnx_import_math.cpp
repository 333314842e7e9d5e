// ONNX elementwise, activation, reduction, matrix and small utility ops, interpreted with ef ops.
#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/ops/array_ops.h"
#include "eagerflow/ops/math.h"
#include "eagerflow/ops/ops.h"
#include "io/onnx_import_program.h"

namespace ef::onnx::detail {
namespace {

using Out = std::vector<Tensor>;

Tensor like(const Tensor& x, double v) { return scalar_like(x, v); }

// Integer division as ONNX defines it (truncation), for shape arithmetic known at trace time.
Tensor int_div(const Tensor& a, const Tensor& b) {
  Tensor fa = cast(a, DType::float64), fb = cast(b, DType::float64);
  Tensor q = div(fa, fb);
  return cast(where(less(q, like(q, 0)), ceil(q), floor(q)), a.dtype());
}

void add_unary(std::map<std::string, OpFn>& t, const char* name, Tensor (*f)(const Tensor&)) {
  t[name] = [f](NodeContext& c) { return Out{f(c.in(0))}; };
}

void add_binary(std::map<std::string, OpFn>& t, const char* name, Tensor (*f)(const Tensor&, const Tensor&)) {
  t[name] = [f](NodeContext& c) { return Out{f(c.in(0), c.in(1))}; };
}

// The ONNX reduce ops: axes an attribute (before opset 18; ReduceSum before 13) or input 1.
Out reduce(NodeContext& c, Tensor (*f)(const Tensor&, std::vector<int>, bool)) {
  const Tensor& x = c.in(0);
  std::vector<std::int64_t> axes = c.attr_ints("axes");
  if (c.has(1)) axes = c.ints(1);
  bool keepdims = c.attr_int("keepdims", 1) != 0;
  if (axes.empty() && c.attr_int("noop_with_empty_axes", 0) != 0) return {identity(x)};
  std::vector<int> ax;
  for (auto a : axes) ax.push_back(c.axis(a, x.rank()));
  if (x.rank() == 0) return {identity(x)};
  return {f(x, ax, keepdims)};
}

// Softmax before opset 13: x seen as 2-D [prod(dims before axis), prod(the rest)].
Out softmax_like(NodeContext& c, Tensor (*f)(const Tensor&, int)) {
  const Tensor& x = c.in(0);
  if (c.program.opset >= 13) return {f(x, c.axis(c.attr_int("axis", -1), x.rank()))};
  int axis = c.axis(c.attr_int("axis", 1), x.rank());
  std::int64_t inner = 1;
  for (int d = axis; d < x.rank(); ++d) {
    if (x.shape()[d] == kDynamic) c.unsupported("opset < 13 softmax over a dynamic dim");
    inner *= x.shape()[d];
  }
  Tensor y = f(reshape(x, Shape{-1, inner}), -1);
  return {reshape_like(y, x)};
}

Tensor matmul_nd(const Tensor& a, const Tensor& b) {
  if (a.rank() == 1 && b.rank() == 1) return sum(mul(a, b));
  if (a.rank() == 1) return squeeze(matmul(expand_dims(a, 0), b), {-2});
  if (b.rank() == 1) return squeeze(matmul(a, expand_dims(b, -1)), {-1});
  return matmul(a, b);
}

}  // namespace

void add_math_ops(std::map<std::string, OpFn>& t) {
  add_binary(t, "Add", add);
  add_binary(t, "Sub", sub);
  add_binary(t, "Mul", mul);
  t["Div"] = [](NodeContext& c) {
    const Tensor &a = c.in(0), &b = c.in(1);
    if (is_integer(a.dtype()) && !a.is_symbolic() && !b.is_symbolic()) return Out{int_div(a, b)};
    return Out{div(a, b)};
  };
  t["Pow"] = [](NodeContext& c) {
    const Tensor &a = c.in(0), &b = c.in(1);
    return Out{pow(a, b.dtype() == a.dtype() ? b : cast(b, a.dtype()))};
  };
  t["Max"] = [](NodeContext& c) {
    Tensor r = c.in(0);
    for (std::size_t i = 1; i < c.num_inputs(); ++i) r = maximum(r, c.in(i));
    return Out{identity(r)};
  };
  t["Min"] = [](NodeContext& c) {
    Tensor r = c.in(0);
    for (std::size_t i = 1; i < c.num_inputs(); ++i) r = minimum(r, c.in(i));
    return Out{identity(r)};
  };
  t["Sum"] = [](NodeContext& c) {
    Tensor r = c.in(0);
    for (std::size_t i = 1; i < c.num_inputs(); ++i) r = add(r, c.in(i));
    return Out{identity(r)};
  };
  t["Mean"] = [](NodeContext& c) {
    Tensor r = c.in(0);
    for (std::size_t i = 1; i < c.num_inputs(); ++i) r = add(r, c.in(i));
    return Out{div(r, like(r, static_cast<double>(c.num_inputs())))};
  };
  add_binary(t, "Equal", equal);
  add_binary(t, "Less", less);
  add_binary(t, "LessOrEqual", less_equal);
  add_binary(t, "Greater", greater);
  add_binary(t, "GreaterOrEqual", greater_equal);
  add_binary(t, "And", logical_and);
  add_binary(t, "Or", logical_or);
  add_binary(t, "Xor", math::logical_xor);
  add_unary(t, "Not", logical_not);

  add_unary(t, "Neg", neg);
  add_unary(t, "Abs", abs);
  add_unary(t, "Exp", exp);
  add_unary(t, "Log", log);
  add_unary(t, "Sqrt", sqrt);
  add_unary(t, "Reciprocal", math::reciprocal);
  add_unary(t, "Floor", floor);
  add_unary(t, "Ceil", ceil);
  add_unary(t, "Round", round);
  add_unary(t, "Sign", math::sign);
  add_unary(t, "Sin", sin);
  add_unary(t, "Cos", cos);
  add_unary(t, "Tan", tan);
  add_unary(t, "Asin", asin);
  add_unary(t, "Acos", acos);
  add_unary(t, "Atan", atan);
  add_unary(t, "Sinh", sinh);
  add_unary(t, "Cosh", cosh);
  add_unary(t, "Asinh", asinh);
  add_unary(t, "Acosh", acosh);
  add_unary(t, "Atanh", atanh);
  add_unary(t, "Erf", erf);
  add_unary(t, "IsNaN", math::is_nan);
  add_unary(t, "Relu", relu);
  add_unary(t, "Sigmoid", sigmoid);
  add_unary(t, "Tanh", tanh);
  add_unary(t, "Softplus", nn::softplus);
  add_unary(t, "Softsign", nn::softsign);
  add_unary(t, "Mish", nn::mish);
  t["IsInf"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    bool pos = c.attr_int("detect_positive", 1) != 0, negative = c.attr_int("detect_negative", 1) != 0;
    Tensor inf = math::is_inf(x);
    if (pos && negative) return Out{inf};
    if (!pos && !negative) return Out{logical_and(inf, logical_not(inf))};
    return Out{logical_and(inf, pos ? greater(x, like(x, 0)) : less(x, like(x, 0)))};
  };
  t["LeakyRelu"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    double alpha = c.attr_float("alpha", 0.01f);
    return Out{where(less(x, like(x, 0)), mul(x, like(x, alpha)), x)};
  };
  t["PRelu"] = [](NodeContext& c) {
    const Tensor &x = c.in(0), &slope = c.in(1);
    return Out{where(less(x, like(x, 0)), mul(x, slope), x)};
  };
  t["Elu"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    double alpha = c.attr_float("alpha", 1.0f);
    return Out{where(less(x, like(x, 0)), mul(like(x, alpha), sub(exp(x), like(x, 1))), x)};
  };
  t["Selu"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    double alpha = c.attr_float("alpha", 1.67326319217681884765625f);
    double gamma = c.attr_float("gamma", 1.05070102214813232421875f);
    Tensor y = where(less_equal(x, like(x, 0)), mul(like(x, alpha), sub(exp(x), like(x, 1))), x);
    return Out{mul(y, like(x, gamma))};
  };
  t["HardSigmoid"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    double alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
    return Out{clip(add(mul(x, like(x, alpha)), like(x, beta)), 0.0, 1.0)};
  };
  t["HardSwish"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    return Out{mul(x, clip(add(mul(x, like(x, 1.0 / 6)), like(x, 0.5)), 0.0, 1.0))};
  };
  t["Gelu"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    std::string approx = c.attr_string("approximate", "none");
    if (approx == "none") return Out{mul(mul(x, like(x, 0.5)), add(like(x, 1), erf(mul(x, like(x, M_SQRT1_2)))))};
    if (approx != "tanh") c.bad("approximate must be 'none' or 'tanh'");
    Tensor inner = mul(like(x, std::sqrt(2.0 / M_PI)), add(x, mul(like(x, 0.044715), mul(x, mul(x, x)))));
    return Out{mul(mul(x, like(x, 0.5)), add(like(x, 1), tanh(inner)))};
  };
  t["Softmax"] = [](NodeContext& c) { return softmax_like(c, softmax); };
  t["LogSoftmax"] = [](NodeContext& c) { return softmax_like(c, log_softmax); };
  t["Clip"] = [](NodeContext& c) {
    Tensor x = c.in(0);
    if (c.has(1)) x = maximum(x, c.in(1));
    if (c.has(2)) x = minimum(x, c.in(2));
    return Out{identity(x)};
  };

  t["ReduceSum"] = [](NodeContext& c) { return reduce(c, sum); };
  t["ReduceMean"] = [](NodeContext& c) { return reduce(c, mean); };
  t["ReduceMax"] = [](NodeContext& c) { return reduce(c, max); };
  t["ReduceMin"] = [](NodeContext& c) { return reduce(c, min); };
  t["ReduceProd"] = [](NodeContext& c) { return reduce(c, math::reduce_prod); };
  t["ReduceLogSumExp"] = [](NodeContext& c) { return reduce(c, math::reduce_logsumexp); };
  t["ReduceSumSquare"] = [](NodeContext& c) {
    return reduce(c, [](const Tensor& x, std::vector<int> a, bool k) { return sum(square(x), std::move(a), k); });
  };
  t["ReduceL2"] = [](NodeContext& c) {
    return reduce(c, [](const Tensor& x, std::vector<int> a, bool k) { return sqrt(sum(square(x), std::move(a), k)); });
  };
  t["ArgMax"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    if (c.attr_int("select_last_index", 0) != 0) c.unsupported("select_last_index=1");
    return Out{argmax(x, c.axis(c.attr_int("axis", 0), x.rank()), c.attr_int("keepdims", 1) != 0)};
  };
  t["ArgMin"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    if (c.attr_int("select_last_index", 0) != 0) c.unsupported("select_last_index=1");
    return Out{argmax(neg(x), c.axis(c.attr_int("axis", 0), x.rank()), c.attr_int("keepdims", 1) != 0)};
  };
  t["CumSum"] = [](NodeContext& c) {
    const Tensor& x = c.in(0);
    auto axis = c.ints(1);
    if (axis.size() != 1) c.bad("axis must hold one value");
    return Out{cumsum(x, c.axis(axis[0], x.rank()), c.attr_int("exclusive", 0) != 0, c.attr_int("reverse", 0) != 0)};
  };

  t["MatMul"] = [](NodeContext& c) { return Out{matmul_nd(c.in(0), c.in(1))}; };
  t["Gemm"] = [](NodeContext& c) {
    const Tensor &a = c.in(0), &b = c.in(1);
    if (a.rank() != 2 || b.rank() != 2) c.bad("A and B must be 2-D");
    Tensor y = matmul(a, b, c.attr_int("transA", 0) != 0, c.attr_int("transB", 0) != 0);
    double alpha = c.attr_float("alpha", 1.0f), beta = c.attr_float("beta", 1.0f);
    if (alpha != 1.0) y = mul(y, like(y, alpha));
    if (c.has(2)) y = add(y, beta == 1.0 ? c.in(2) : mul(c.in(2), like(c.in(2), beta)));
    return Out{y};
  };
  t["Einsum"] = [](NodeContext& c) {
    std::string eq;
    for (char ch : c.attr_string("equation", "")) if (ch != ' ') eq += ch;
    std::vector<Tensor> ops;
    for (std::size_t i = 0; i < c.num_inputs(); ++i) ops.push_back(c.in(i));
    return Out{einsum(eq, ops)};
  };

  t["Cast"] = [](NodeContext& c) {
    DType to = dtype_from_code(c.attr_int("to"), c.program.what + " node '" + c.node.name + "'");
    c.partial_out = {c.known_dims(0)};
    return Out{cast(c.in(0), to)};
  };
  t["CastLike"] = [](NodeContext& c) { return Out{cast(c.in(0), c.in(1).dtype())}; };
  t["Identity"] = [](NodeContext& c) {
    c.partial_out = {c.known_dims(0)};
    return Out{identity(c.in(0))};
  };
  t["Dropout"] = [](NodeContext& c) {  // inference: the identity, and a mask of ones
    if (c.has(2) && c.number(2) != 0) c.unsupported("training_mode=true (the importer runs models for inference)");
    const Tensor& x = c.in(0);
    return Out{identity(x), cast(ones_like(x), DType::bool_)};
  };
  t["Where"] = [](NodeContext& c) { return Out{where(c.in(0), c.in(1), c.in(2))}; };
  t["Constant"] = [](NodeContext& c) {
    if (c.node.attrs.size() != 1) c.bad("takes exactly one attribute");
    const std::string& name = c.node.attrs.begin()->first;
    Tensor v;
    if (name == "value") v = c.attr_tensor("value");
    else if (name == "value_float") v = scalar(c.attr_float("value_float", 0));
    else if (name == "value_int") v = scalar(c.attr_int("value_int"));
    else if (name == "value_floats") {
      auto f = c.attr_floats("value_floats");
      v = tensor(f, Shape{static_cast<std::int64_t>(f.size())});
    } else if (name == "value_ints") {
      auto i = c.attr_ints("value_ints");
      v = tensor(i, Shape{static_cast<std::int64_t>(i.size())});
    } else {
      c.unsupported("attribute '" + name + "' (value, value_float(s) and value_int(s) are supported)");
    }
    return Out{v};
  };
}

}  // namespace ef::onnx::detail
