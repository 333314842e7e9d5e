// vmap and ONNX rules of the elementwise ops (src/ops/primitives.h, activation_grad_op.h).
#include "eagerflow/ops/onnx_lowering.h"
#include "ops/activation_grad_op.h"
#include "ops/primitives.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef::detail {
namespace {

using batching::broadcasting;

// The op as one ONNX op of the same inputs.
void same_as(onnx::Lowering& to, const char* type) { to.node(type, to.inputs(), {to.output()}); }

void lower_unary(const Unary& u, onnx::Lowering& to) {
  const std::string x = to.input(0), out = to.output();
  switch (u.kind()) {
    case UnaryKind::neg: return same_as(to, "Neg");
    case UnaryKind::abs: return same_as(to, "Abs");
    case UnaryKind::exp: return same_as(to, "Exp");
    case UnaryKind::log: return same_as(to, "Log");
    case UnaryKind::sqrt: return same_as(to, "Sqrt");
    case UnaryKind::rsqrt: {
      std::string s = to.fresh("sqrt");
      to.node("Sqrt", {x}, {s});
      to.node("Reciprocal", {s}, {out});
      return;
    }
    case UnaryKind::square: return to.node("Mul", {x, x}, {out});
    case UnaryKind::relu: return same_as(to, "Relu");
    case UnaryKind::sigmoid: return same_as(to, "Sigmoid");
    case UnaryKind::tanh: return same_as(to, "Tanh");
    case UnaryKind::gelu: {  // x * 0.5 * (1 + erf(x / sqrt 2)): Gelu is an op only from opset 20
      DType t = to.input_spec(0).dtype;
      std::string c = to.scalar_constant(0.70710678118654752440, t);
      std::string half = to.scalar_constant(0.5, t), one = to.scalar_constant(1.0, t);
      std::string a = to.fresh("g"), e = to.fresh("g"), p = to.fresh("g"), h = to.fresh("g");
      to.node("Mul", {x, c}, {a});
      to.node("Erf", {a}, {e});
      to.node("Add", {e, one}, {p});
      to.node("Mul", {x, half}, {h});
      to.node("Mul", {h, p}, {out});
      return;
    }
    case UnaryKind::erf: return same_as(to, "Erf");
    case UnaryKind::sin: return same_as(to, "Sin");
    case UnaryKind::cos: return same_as(to, "Cos");
    case UnaryKind::tan: return same_as(to, "Tan");
    case UnaryKind::asin: return same_as(to, "Asin");
    case UnaryKind::acos: return same_as(to, "Acos");
    case UnaryKind::atan: return same_as(to, "Atan");
    case UnaryKind::sinh: return same_as(to, "Sinh");
    case UnaryKind::cosh: return same_as(to, "Cosh");
    case UnaryKind::asinh: return same_as(to, "Asinh");
    case UnaryKind::acosh: return same_as(to, "Acosh");
    case UnaryKind::atanh: return same_as(to, "Atanh");
    case UnaryKind::expm1:
    case UnaryKind::erfc: {  // exp(x) - 1 and 1 - erf(x): no ONNX op of their own
      std::string one = to.scalar_constant(1.0, to.input_spec(0).dtype), t = to.fresh(u.kind() == UnaryKind::expm1 ? "exp" : "erf");
      to.node(u.kind() == UnaryKind::expm1 ? "Exp" : "Erf", {x}, {t});
      if (u.kind() == UnaryKind::expm1) to.node("Sub", {t, one}, {out});
      else to.node("Sub", {one, t}, {out});
      return;
    }
    case UnaryKind::logical_not: return same_as(to, "Not");
  }
  to.unsupported("unknown unary kind");
}

void lower_binary(const Binary& b, onnx::Lowering& to) {
  switch (b.kind()) {
    case BinaryKind::add: return same_as(to, "Add");
    case BinaryKind::sub: return same_as(to, "Sub");
    case BinaryKind::mul: return same_as(to, "Mul");
    case BinaryKind::div: return same_as(to, "Div");
    case BinaryKind::pow: return same_as(to, "Pow");
    case BinaryKind::maximum: return same_as(to, "Max");
    case BinaryKind::minimum: return same_as(to, "Min");
    case BinaryKind::equal: return same_as(to, "Equal");
    case BinaryKind::not_equal: {
      std::string e = to.fresh("eq");
      to.node("Equal", to.inputs(), {e});
      to.node("Not", {e}, {to.output()});
      return;
    }
    case BinaryKind::less: return same_as(to, "Less");
    case BinaryKind::less_equal: return same_as(to, "LessOrEqual");
    case BinaryKind::greater: return same_as(to, "Greater");
    case BinaryKind::greater_equal: return same_as(to, "GreaterOrEqual");
    case BinaryKind::logical_and: return same_as(to, "And");
    case BinaryKind::logical_or: return same_as(to, "Or");
  }
  to.unsupported("unknown binary kind");
}

// Rules of an op that broadcasts like NumPy (batched operands aligned past the batch axis).
template <class Op>
OpRulesOf<Op> broadcasting_rules() {
  OpRulesOf<Op> r;
  r.batching = [](const Op& op, BatchingCall call) { return broadcasting(op, call); };
  return r;
}

}  // namespace

void register_elementwise_rules() {
  auto unary = broadcasting_rules<Unary>();
  unary.onnx = lower_unary;
  register_op_rules<Unary>(std::move(unary));

  auto binary = broadcasting_rules<Binary>();
  binary.onnx = lower_binary;
  register_op_rules<Binary>(std::move(binary));

  auto where = broadcasting_rules<Where>();
  where.onnx = [](const Where&, onnx::Lowering& to) { same_as(to, "Where"); };
  register_op_rules<Where>(std::move(where));

  auto cast_rules = broadcasting_rules<Cast>();
  cast_rules.onnx = [](const Cast&, onnx::Lowering& to) {
    to.node("Cast", to.inputs(), {to.output()}, {{"to", onnx::dtype_code(to.output_spec().dtype)}});
  };
  register_op_rules<Cast>(std::move(cast_rules));

  auto identity = broadcasting_rules<Identity>();
  identity.onnx = [](const Identity&, onnx::Lowering& to) { same_as(to, "Identity"); };
  register_op_rules<Identity>(std::move(identity));

  auto check = broadcasting_rules<CheckNumerics>();
  check.onnx_unsupported = "check_numerics raises at run time; ONNX has no such op (export without it)";
  register_op_rules<CheckNumerics>(std::move(check));

  // Under vmap each example is checked on its own values.
  register_op_rules<Assert>({.runs_per_example = true, .onnx_unsupported = "an assertion is an effect; exported graphs compute only"});

  auto classes = broadcasting_rules<ClassIndices>();
  classes.onnx_unsupported = "class_indices has no ONNX form";
  register_op_rules<ClassIndices>(std::move(classes));

  auto fill = broadcasting_rules<FillLike>();
  fill.onnx = [](const FillLike& f, onnx::Lowering& to) {
    std::string shape = to.fresh("shape");
    to.node("Shape", {to.input(0)}, {shape});
    to.node("ConstantOfShape", {shape}, {to.output()},
            {{"value", cast(full({1}, f.value(), DType::float64), to.output_spec().dtype)}});
  };
  register_op_rules<FillLike>(std::move(fill));

  auto activation_grad = broadcasting_rules<ActivationGrad>();
  activation_grad.onnx_unsupported = "a gradient op: exported graphs run inference only";
  register_op_rules<ActivationGrad>(std::move(activation_grad));

  register_op_rules<RandomOp>({
      // A draw shaped like a batched tensor: fresh numbers for every example.
      .batching = [](const RandomOp& op, BatchingCall call) -> BatchingResult {
        if (call.inputs.size() != 1) return std::nullopt;
        return broadcasting(op, call);
      },
      .onnx_unsupported = "random draws are not exported (ONNX's are not the same stream)",
  });
}

}  // namespace ef::detail
