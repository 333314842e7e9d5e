// vmap and ONNX rules of reductions, argmax and softmax (src/ops/primitives.h).
#include "eagerflow/ops/onnx_lowering.h"
#include "ops/primitives.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef::detail {
namespace {

using batching::one;
using batching::shifted_axis;

BatchingResult batch_reduce(const Reduce& op, BatchingCall call) {
  const Batched& x = call.inputs[0];
  int rank = x.rank();
  std::vector<bool> mask = op.reduced_mask(rank);
  std::vector<int> axes;
  for (int i = 0; i < rank; ++i)
    if (mask[static_cast<std::size_t>(i)]) axes.push_back(i + 1);
  if (axes.empty()) return one(identity(x.t));  // a scalar example: nothing to reduce
  bool keepdims = call.specs[0].shape.rank() == rank;
  switch (op.kind()) {
    case ReduceKind::sum: return one(sum(x.t, axes, keepdims));
    case ReduceKind::mean: return one(mean(x.t, axes, keepdims));
    case ReduceKind::max: return one(max(x.t, axes, keepdims));
    case ReduceKind::min: return one(min(x.t, axes, keepdims));
  }
  return std::nullopt;
}

void lower_reduce(const Reduce& r, onnx::Lowering& to) {
  const TensorSpec& x = to.input_spec(0);
  std::vector<bool> mask = r.reduced_mask(x.shape.rank());
  std::vector<std::int64_t> axes;
  for (std::size_t a = 0; a < mask.size(); ++a)
    if (mask[a]) axes.push_back(static_cast<std::int64_t>(a));
  bool keep = to.output_spec().shape.rank() == x.shape.rank();
  if (axes.empty()) return to.node("Identity", to.inputs(), {to.output()});  // nothing reduced (rank 0)
  // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
  if (r.kind() == ReduceKind::sum) return to.node("ReduceSum", {to.input(0), to.ints(axes)}, {to.output()}, {{"keepdims", keep}});
  ReduceKind k = r.kind();
  const char* type = k == ReduceKind::mean ? "ReduceMean" : k == ReduceKind::max ? "ReduceMax" : "ReduceMin";
  to.node(type, to.inputs(), {to.output()}, {{"axes", axes}, {"keepdims", keep}});
}

}  // namespace

void register_reduction_rules() {
  register_op_rules<Reduce>({.batching = batch_reduce, .onnx = lower_reduce});
  register_op_rules<ArgMax>({
      .batching = [](const ArgMax& a, BatchingCall call) {
        const Batched& x = call.inputs[0];
        return one(argmax(x.t, shifted_axis(a.axis(), x.rank(), "argmax"), a.keepdims()));
      },
      .onnx = [](const ArgMax& a, onnx::Lowering& to) {
        int rank = to.input_spec(0).shape.rank();
        to.node("ArgMax", to.inputs(), {to.output()}, {{"axis", a.axis() < 0 ? a.axis() + rank : a.axis()}, {"keepdims", a.keepdims()}});
      },
  });
  register_op_rules<Softmax>({
      .batching = [](const Softmax& s, BatchingCall call) {
        const Batched& x = call.inputs[0];
        int axis = shifted_axis(s.axis(), x.rank(), s.name());
        return one(s.log() ? log_softmax(x.t, axis) : softmax(x.t, axis));
      },
      .onnx = [](const Softmax& s, onnx::Lowering& to) {
        to.node(s.log() ? "LogSoftmax" : "Softmax", to.inputs(), {to.output()}, {{"axis", s.axis()}});
      },
  });
}

}  // namespace ef::detail
