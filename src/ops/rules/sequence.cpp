// vmap and ONNX rules of issue 18's ops (src/ops/sequence_primitives.h): under vmap each runs on
// the batched tensor with its axes shifted past the batch axis.
#include "eagerflow/ops/onnx_lowering.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"
#include "ops/sequence_primitives.h"

namespace ef::detail {
namespace {

using batching::one;
using batching::shifted_axis;

constexpr const char* kGradientOp = "a gradient op: exported graphs run inference only";

// A one-input op's batching rule from `f(op, x, example_rank)`; nullopt (one call per
// example, where the op raises its own error) below `min_rank`.
template <class Op, class F>
std::function<BatchingResult(const Op&, BatchingCall)> on_batched_input(int min_rank, F f) {
  return [min_rank, f](const Op& op, BatchingCall call) -> BatchingResult {
    if (call.inputs.size() != 1 || !call.inputs[0].batched || call.inputs[0].rank() < min_rank) return std::nullopt;
    return one(f(op, call.inputs[0].t, call.inputs[0].rank()));
  };
}
// Elementwise, or acting on trailing axes only: the same op on the wider tensor.
template <class Op>
std::function<BatchingResult(const Op&, BatchingCall)> same_op(int min_rank) {
  return on_batched_input<Op>(min_rank, [](const Op& op, const Tensor& x, int) { return dispatch1(op, {x}); });
}

std::int64_t axis_of(int a, int rank) { return static_cast<std::int64_t>(a < 0 ? a + rank : a); }

std::int64_t static_dim(onnx::Lowering& to, int a, const char* what) {
  std::int64_t d = to.input_spec(0).shape[a];
  if (d == kDynamic) to.unsupported(std::string(what) + " over a dynamic dim");
  return d;
}

void lower_reduce_bool(const ReduceBool& r, onnx::Lowering& to) {
  // bool -> int32, ReduceMax (any) / ReduceMin (all), -> bool.
  const TensorSpec& x = to.input_spec(0);
  std::string b = to.input(0), i = to.fresh("i"), red = to.fresh("r");
  if (x.dtype != DType::bool_) {
    b = to.fresh("b");
    to.node("Cast", to.inputs(), {b}, {{"to", onnx::dtype_code(DType::bool_)}});
  }
  to.node("Cast", {b}, {i}, {{"to", onnx::dtype_code(DType::int32)}});
  std::vector<bool> mask = r.reduced_mask(x.shape.rank());
  std::vector<std::int64_t> axes;
  for (std::size_t a = 0; a < mask.size(); ++a)
    if (mask[a]) axes.push_back(static_cast<std::int64_t>(a));
  if (axes.empty())
    to.node("Identity", {i}, {red});
  else
    to.node(r.any() ? "ReduceMax" : "ReduceMin", {i}, {red},
            {{"axes", axes}, {"keepdims", to.output_spec().shape.rank() == x.shape.rank()}});
  to.node("Cast", {red}, {to.output()}, {{"to", onnx::dtype_code(DType::bool_)}});
}

void lower_pad(const Pad& p, onnx::Lowering& to) {
  const TensorSpec& x = to.input_spec(0);
  int rank = x.shape.rank();
  if (p.mode() == Pad::Mode::symmetric) {
    // ONNX's Pad has no symmetric mode: one Gather per padded axis with the index map.
    std::string cur = to.input(0);
    std::vector<int> axes;
    for (std::size_t a = 0; a < p.paddings().size() / 2; ++a)
      if (p.paddings()[2 * a] || p.paddings()[2 * a + 1]) axes.push_back(static_cast<int>(a));
    if (axes.empty()) return to.node("Identity", {cur}, {to.output()});
    for (std::size_t i = 0; i < axes.size(); ++i) {
      int a = axes[i];
      static_dim(to, a, "symmetric padding");
      std::string next = i + 1 == axes.size() ? to.output() : to.fresh("padded");
      to.node("Gather", {cur, to.ints(*p.axis_map(x.shape, a))}, {next}, {{"axis", a}});
      cur = next;
    }
    return;
  }
  std::vector<std::int64_t> pads(static_cast<std::size_t>(2 * rank), 0);
  for (std::size_t a = 0; a < p.paddings().size() / 2; ++a) {
    pads[a] = p.paddings()[2 * a];
    pads[a + static_cast<std::size_t>(rank)] = p.paddings()[2 * a + 1];
  }
  std::vector<std::string> args{to.input(0), to.ints(pads)};
  if (p.mode() == Pad::Mode::constant) args.push_back(to.scalar_constant(p.constant(), x.dtype));
  to.node("Pad", args, {to.output()}, {{"mode", p.mode() == Pad::Mode::constant ? "constant" : "reflect"}});
}

// ONNX's TopK puts equal values lower index first: the stable order, either direction.
void top_k(onnx::Lowering& to, int axis, std::int64_t k, bool largest, const std::string& values, const std::string& indices) {
  to.node("TopK", {to.input(0), to.ints({k})}, {values, indices}, {{"axis", axis}, {"largest", largest}, {"sorted", 1}});
}

}  // namespace

void register_sequence_rules() {
  register_op_rules<Tri>({.batching = same_op<Tri>(2), .onnx = [](const Tri& t, onnx::Lowering& to) {
                            to.node("Trilu", {to.input(0), to.constant(scalar(t.k()))}, {to.output()}, {{"upper", !t.lower()}});
                          }});
  register_op_rules<Rounding>({.batching = same_op<Rounding>(0), .onnx = [](const Rounding& r, onnx::Lowering& to) {
                                 if (is_integer(to.input_spec(0).dtype)) return to.node("Identity", to.inputs(), {to.output()});
                                 const char* type = r.kind() == RoundKind::floor ? "Floor" : r.kind() == RoundKind::ceil ? "Ceil" : "Round";
                                 to.node(type, to.inputs(), {to.output()});
                               }});
  register_op_rules<Clip>({.batching = same_op<Clip>(0), .onnx = [](const Clip& c, onnx::Lowering& to) {
                             DType t = to.input_spec(0).dtype;
                             to.node("Clip", {to.input(0), to.scalar_constant(c.lo(), t), to.scalar_constant(c.hi(), t)}, {to.output()});
                           }});
  register_op_rules<ReduceBool>({
      .batching = on_batched_input<ReduceBool>(0,
                                               [](const ReduceBool& r, const Tensor& x, int rank) {
                                                 std::vector<bool> mask = r.reduced_mask(rank);
                                                 std::vector<int> axes;
                                                 for (int a = 0; a < rank; ++a)
                                                   if (mask[static_cast<std::size_t>(a)]) axes.push_back(a + 1);
                                                 if (axes.empty()) return cast(x, DType::bool_);  // a scalar example
                                                 return r.any() ? any(x, axes, r.keepdims()) : all(x, axes, r.keepdims());
                                               }),
      .onnx = lower_reduce_bool,
  });
  register_op_rules<Pad>({.batching = on_batched_input<Pad>(0,
                                                            [](const Pad& p, const Tensor& x, int) {
                                                              std::vector<std::int64_t> paddings{0, 0};
                                                              paddings.insert(paddings.end(), p.paddings().begin(), p.paddings().end());
                                                              return dispatch1(Pad(paddings, p.mode(), p.constant()), {x});
                                                            }),
                          .onnx = lower_pad});
  register_op_rules<Tile>({.batching = on_batched_input<Tile>(0,
                                                              [](const Tile& t, const Tensor& x, int) {
                                                                std::vector<std::int64_t> m{1};
                                                                m.insert(m.end(), t.multiples().begin(), t.multiples().end());
                                                                return dispatch1(Tile(m), {x});
                                                              }),
                           .onnx = [](const Tile& t, onnx::Lowering& to) {
                             to.node("Tile", {to.input(0), to.ints(t.multiples())}, {to.output()});
                           }});
  register_op_rules<Repeat>({.batching = on_batched_input<Repeat>(1,
                                                                  [](const Repeat& r, const Tensor& x, int rank) {
                                                                    return dispatch1(Repeat(r.repeats(), shifted_axis(r.axis(), rank, "repeat")), {x});
                                                                  }),
                             .onnx = [](const Repeat& r, onnx::Lowering& to) {
                               // A Gather with the index map of the (static) axis.
                               const Shape& shape = to.input_spec(0).shape;
                               int a = static_cast<int>(axis_of(r.axis(), shape.rank()));
                               static_dim(to, a, "repeat");
                               std::vector<std::int64_t> map;
                               if (auto m = r.axis_map(shape, a)) map = *m;
                               else
                                 for (std::int64_t i = 0; i < shape[a]; ++i) map.push_back(i);
                               to.node("Gather", {to.input(0), to.ints(map)}, {to.output()}, {{"axis", a}});
                             }});
  register_op_rules<AxisMapGrad>({.runs_per_example = true, .onnx_unsupported = kGradientOp});
  register_op_rules<Cumulative>({
      .batching = on_batched_input<Cumulative>(1,
                                               [](const Cumulative& c, const Tensor& x, int rank) {
                                                 return dispatch1(Cumulative(c.product(), shifted_axis(c.axis(), rank, "cumulative"),
                                                                             c.exclusive(), c.reverse()),
                                                                  {x});
                                               }),
      .onnx = [](const Cumulative& c, onnx::Lowering& to) {
        if (c.product()) to.unsupported("ONNX has no cumulative product");
        std::int64_t axis = axis_of(c.axis(), to.input_spec(0).shape.rank());
        to.node("CumSum", {to.input(0), to.constant(scalar(axis))}, {to.output()},
                {{"exclusive", c.exclusive()}, {"reverse", c.reverse()}});
      },
  });
  // The cumprod gradients: an unbatched operand is broadcast to the other's batch (its runtime shape).
  auto cumprod_pair = [](auto make) {
    return [make](const Primitive& op, BatchingCall call) -> BatchingResult {
      const auto& in = call.inputs;
      if (in.size() != 2 || in[0].rank() < 1) return std::nullopt;
      Tensor x = in[0].batched ? in[0].t : broadcast_like(expand_dims(in[0].t, 0), in[1].t);
      Tensor g = in[1].batched ? in[1].t : broadcast_like(expand_dims(in[1].t, 0), in[0].t);
      OpParams p = op.parameters();
      int axis = shifted_axis(p.axis("axis"), in[0].rank(), op.name());
      return one(dispatch1(*make(axis, p.flag("exclusive"), p.flag("reverse")), {x, g}));
    };
  };
  register_op_rules<CumprodGrad>({
      .batching = cumprod_pair([](int a, bool e, bool r) { return std::make_shared<CumprodGrad>(a, e, r); }),
      .onnx_unsupported = kGradientOp,
  });
  register_op_rules<CumprodJvp>({
      .batching = cumprod_pair([](int a, bool e, bool r) { return std::make_shared<CumprodJvp>(a, e, r); }),
      .onnx_unsupported = "a forward-mode derivative op: exported graphs run inference only",
  });
  register_op_rules<Sort>({.batching = on_batched_input<Sort>(1,
                                                              [](const Sort& s, const Tensor& x, int rank) {
                                                                return sort(x, shifted_axis(s.axis(), rank, "sort"), s.descending());
                                                              }),
                           .onnx = [](const Sort& s, onnx::Lowering& to) {
                             int a = static_cast<int>(axis_of(s.axis(), to.input_spec(0).shape.rank()));
                             top_k(to, a, static_dim(to, a, "sort"), s.descending(), to.output(), to.fresh("unused"));
                           }});
  register_op_rules<ArgSort>({.batching = on_batched_input<ArgSort>(1,
                                                                    [](const ArgSort& s, const Tensor& x, int rank) {
                                                                      return argsort(x, shifted_axis(s.axis(), rank, "argsort"), s.descending());
                                                                    }),
                              .onnx = [](const ArgSort& s, onnx::Lowering& to) {
                                int a = static_cast<int>(axis_of(s.axis(), to.input_spec(0).shape.rank()));
                                top_k(to, a, static_dim(to, a, "argsort"), s.descending(), to.fresh("unused"), to.output());
                              }});
  register_op_rules<TopK>({
      .batching = [](const TopK& op, BatchingCall call) -> BatchingResult {
        if (call.inputs.size() != 1 || !call.inputs[0].batched || call.inputs[0].rank() < 1) return std::nullopt;
        return batched_results(dispatch(op, call.batched_inputs()));
      },
      .onnx = [](const TopK& t, onnx::Lowering& to) {
        std::string indices = to.fresh("indices64");
        top_k(to, to.input_spec(0).shape.rank() - 1, t.k(), true, to.output(0), indices);
        to.node("Cast", {indices}, {to.output(1)}, {{"to", onnx::dtype_code(DType::int32)}});
      },
  });
  register_op_rules<TakeAlongAxis>({.runs_per_example = true, .onnx = [](const TakeAlongAxis& t, onnx::Lowering& to) {
                                      to.node("GatherElements", to.inputs(), {to.output()},
                                              {{"axis", axis_of(t.axis(), to.input_spec(0).shape.rank())}});
                                    }});
  register_op_rules<ScatterAlongAxis>({.runs_per_example = true, .onnx = [](const ScatterAlongAxis& s, onnx::Lowering& to) {
                                         const TensorSpec& like = to.input_spec(2);
                                         std::string shape = to.fresh("shape"), zero = to.fresh("zeros");
                                         to.node("Shape", {to.input(2)}, {shape});
                                         to.node("ConstantOfShape", {shape}, {zero},
                                                 {{"value", cast(full({1}, 0.0, DType::float64), like.dtype)}});
                                         int a = static_cast<int>(axis_of(s.axis(), like.shape.rank()));
                                         to.node("ScatterElements", {zero, to.input(1), to.input(0)}, {to.output()},
                                                 {{"axis", a}, {"reduction", "add"}});
                                       }});
}

}  // namespace ef::detail
