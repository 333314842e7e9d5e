// vmap and ONNX rules of the ops that move elements without computing (src/ops/primitives.h):
// reshapes, transposes, concatenation, slices, gathers, broadcasts and runtime shapes.
#include "eagerflow/ops/onnx_lowering.h"
#include "ops/primitives.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef::detail {
namespace {

using batching::align;
using batching::batch_shape;
using batching::example;
using batching::kToEnd;
using batching::one;
using batching::shifted_axis;

constexpr const char* kGradientOp = "a gradient op: exported graphs run inference only";

BatchingResult batch_squeeze(const Squeeze& op, BatchingCall call) {
  const Batched& x = call.inputs[0];
  std::vector<int> axes;
  if (op.axes().empty()) {
    for (int i = 0; i < x.rank(); ++i) {
      std::int64_t d = x.t.shape()[i + 1];
      if (d == kDynamic) return std::nullopt;
      if (d == 1) axes.push_back(i + 1);
    }
  } else {
    for (int a : op.axes()) axes.push_back(shifted_axis(a, x.rank(), "squeeze"));
  }
  if (axes.empty()) return one(identity(x.t));
  return one(squeeze(x.t, axes));
}

BatchingResult batch_slice(const Slice& op, BatchingCall call) {
  std::vector<std::int64_t> b{0}, e{kToEnd}, s{1};
  b.insert(b.end(), op.begin().begin(), op.begin().end());
  e.insert(e.end(), op.end().begin(), op.end().end());
  if (op.strides().empty()) s.resize(b.size(), 1);
  else s.insert(s.end(), op.strides().begin(), op.strides().end());
  return one(slice(call.inputs[0].t, b, e, s));
}

BatchingResult batch_gather(const Gather& op, BatchingCall call) {
  const Batched &x = call.inputs[0], &idx = call.inputs[1];
  int a = normalize_axis(op.axis(), x.rank(), "gather");
  if (x.batched && !idx.batched) return one(gather(x.t, idx.t, a + 1));
  if (!x.batched && idx.batched) {
    // The batch axis of the indices lands at axis a of the result.
    Tensor y = gather(x.t, idx.t, a);
    if (a == 0) return one(y);
    std::vector<int> perm{a};
    for (int i = 0; i < y.rank(); ++i)
      if (i != a) perm.push_back(i);
    return one(transpose(y, perm));
  }
  return std::nullopt;  // per-example tables and indices: the loop
}

// sum_to(x, like) sums x down to like's shape (NumPy broadcasting, undone).
BatchingResult batch_sum_to(const SumTo&, BatchingCall call) {
  const Batched &x = call.inputs[0], &like = call.inputs[1];
  if (!x.batched) return one(sum_to(x.t, example(like.t, 0)), false);
  int extra = x.rank() - like.rank();
  if (like.batched) {
    Tensor r = sum_to(x.t, align(like, x.rank()));
    if (extra <= 0) return one(r);
    std::vector<int> axes;
    for (int i = 1; i <= extra; ++i) axes.push_back(i);
    return one(squeeze(r, axes));
  }
  // One target shape for every example: reduce the axes sum_to would, keeping the batch axis.
  if (!like.t.shape().is_static() || extra < 0) return std::nullopt;
  std::vector<int> kept, dropped;
  for (int i = 0; i < like.rank(); ++i) {
    std::int64_t target = like.t.shape()[i], have = x.t.shape()[extra + i + 1];
    if (target == 1 && have != 1) kept.push_back(extra + i + 1);
  }
  for (int i = 1; i <= extra; ++i) dropped.push_back(i);
  Tensor r = x.t;
  if (!kept.empty()) r = sum(r, kept, true);
  if (!dropped.empty()) r = sum(r, dropped, false);
  return one(r);
}

BatchingResult batch_broadcast(const BroadcastTo&, BatchingCall call) {
  const Shape& target = call.specs[0].shape;
  int r = target.rank();
  auto to_static = [&](const Batched& x) {
    std::vector<std::int64_t> dims{kDynamic};  // keeps the batch axis
    dims.insert(dims.end(), target.begin(), target.end());
    return one(broadcast_to(align(x, r), Shape(dims)));
  };
  if (call.inputs.size() == 1) return to_static(call.inputs[0]);
  const Batched &x = call.inputs[0], &like = call.inputs[1];
  if (like.batched) return one(broadcast_like(x.batched ? align(x, like.rank()) : x.t, like.t));
  if (!target.is_static()) return std::nullopt;
  return to_static(x);
}

BatchingResult batch_reshape_like(const ReshapeLike&, BatchingCall call) {
  const Batched &x = call.inputs[0], &like = call.inputs[1];
  const Shape& target = call.specs[0].shape;
  if (x.batched && !like.batched && target.is_static()) return one(reshape(x.t, batch_shape(call.batch, target)));
  if (x.batched && like.batched) return one(reshape_like(x.t, like.t));
  if (!target.is_static()) return std::nullopt;
  if (!x.batched) return one(reshape(x.t, target), false);
  return std::nullopt;
}

void lower_reshape(const Reshape&, onnx::Lowering& to) {
  std::vector<std::int64_t> dims = to.output_spec().shape.dims();
  for (auto& d : dims)
    if (d == kDynamic) d = -1;
  // A target with one unknown dim: -1 (ONNX infers it); zeros stay zeros (allowzero).
  int unknown = 0;
  for (auto d : dims) unknown += d == -1;
  if (unknown > 1) to.unsupported("more than one dynamic dim in the target");
  to.node("Reshape", {to.input(0), to.ints(dims)}, {to.output()}, {{"allowzero", 1}});
}

void lower_squeeze(const Squeeze& q, onnx::Lowering& to) {
  const Shape& sh = to.input_spec(0).shape;
  std::vector<std::int64_t> axes(q.axes().begin(), q.axes().end());
  if (axes.empty())  // every size-1 axis
    for (int a = 0; a < sh.rank(); ++a)
      if (sh[a] == 1) axes.push_back(a);
  for (auto& a : axes) a = a < 0 ? a + sh.rank() : a;
  to.node("Squeeze", {to.input(0), to.ints(axes)}, {to.output()});
}

void lower_transpose(const Transpose& t, onnx::Lowering& to) {
  int rank = to.input_spec(0).shape.rank();
  std::vector<std::int64_t> perm;
  for (int a : t.perm()) perm.push_back(a < 0 ? a + rank : a);
  if (perm.empty())  // the default: reversed axes
    for (int a = rank - 1; a >= 0; --a) perm.push_back(a);
  to.node("Transpose", to.inputs(), {to.output()}, {{"perm", perm}});
}

void lower_slice(const Slice& sl, onnx::Lowering& to) {
  std::vector<std::int64_t> axes, steps = sl.strides();
  for (std::size_t a = 0; a < sl.begin().size(); ++a) axes.push_back(static_cast<std::int64_t>(a));
  while (steps.size() < sl.begin().size()) steps.push_back(1);
  to.node("Slice", {to.input(0), to.ints(sl.begin()), to.ints(sl.end()), to.ints(axes), to.ints(steps)}, {to.output()});
}

void lower_broadcast(const BroadcastTo&, onnx::Lowering& to) {
  if (to.num_inputs() == 2) {  // broadcast_like: to input 1's runtime shape
    std::string s = to.fresh("shape");
    to.node("Shape", {to.input(1)}, {s});
    return to.node("Expand", {to.input(0), s}, {to.output()});
  }
  std::vector<std::int64_t> dims = to.output_spec().shape.dims();
  for (auto& d : dims)
    if (d == kDynamic) d = 1;  // 1 broadcasts: keeps the input's dim
  to.node("Expand", {to.input(0), to.ints(dims)}, {to.output()});
}

}  // namespace

void register_layout_rules() {
  register_op_rules<Reshape>({
      .batching = [](const Reshape&, BatchingCall call) -> BatchingResult {
        if (!call.specs[0].shape.is_static()) return std::nullopt;
        return one(reshape(call.inputs[0].t, batch_shape(call.batch, call.specs[0].shape)));
      },
      .onnx = lower_reshape,
  });
  register_op_rules<ReshapeLike>({.batching = batch_reshape_like, .onnx = [](const ReshapeLike&, onnx::Lowering& to) {
                                    std::string s = to.fresh("shape");
                                    to.node("Shape", {to.input(1)}, {s});
                                    to.node("Reshape", {to.input(0), s}, {to.output()});
                                  }});
  register_op_rules<ExpandDims>({
      .batching = [](const ExpandDims& e, BatchingCall call) {
        const Batched& x = call.inputs[0];
        return one(expand_dims(x.t, normalize_axis(e.axis(), x.rank() + 1, "expand_dims") + 1));
      },
      .onnx = [](const ExpandDims& e, onnx::Lowering& to) {
        int rank = to.output_spec().shape.rank();
        to.node("Unsqueeze", {to.input(0), to.ints({e.axis() < 0 ? e.axis() + rank : e.axis()})}, {to.output()});
      },
  });
  register_op_rules<Squeeze>({.batching = batch_squeeze, .onnx = lower_squeeze});
  register_op_rules<Transpose>({
      .batching = [](const Transpose& t, BatchingCall call) {
        std::vector<int> perm{0};
        for (int p : t.resolved(call.inputs[0].rank())) perm.push_back(p + 1);
        return one(transpose(call.inputs[0].t, perm));
      },
      .onnx = lower_transpose,
  });
  register_op_rules<Concat>({
      .batching = [](const Concat& c, BatchingCall call) {
        std::vector<Tensor> xs;
        for (const auto& b : call.inputs) xs.push_back(batching::materialize(c, b, call.batch));
        return one(concat(xs, shifted_axis(c.axis(), call.inputs[0].rank(), "concat")));
      },
      .onnx = [](const Concat& c, onnx::Lowering& to) {
        int rank = to.output_spec().shape.rank();
        to.node("Concat", to.inputs(), {to.output()}, {{"axis", c.axis() < 0 ? c.axis() + rank : c.axis()}});
      },
  });
  register_op_rules<Slice>({.batching = batch_slice, .onnx = lower_slice});
  register_op_rules<SliceGrad>({.runs_per_example = true, .onnx_unsupported = kGradientOp});
  register_op_rules<Gather>({.batching = batch_gather, .onnx = [](const Gather& g, onnx::Lowering& to) {
                               to.node("Gather", to.inputs(), {to.output()}, {{"axis", g.axis()}});
                             }});
  register_op_rules<GatherGrad>({.runs_per_example = true, .onnx_unsupported = kGradientOp});
  register_op_rules<OneHot>({
      .batching = [](const OneHot& o, BatchingCall call) { return one(one_hot(call.inputs[0].t, o.depth(), call.specs[0].dtype)); },
      .onnx = [](const OneHot& o, onnx::Lowering& to) {
        DType t = to.output_spec().dtype;
        std::string depth = to.constant(scalar(o.depth()));
        std::string values = to.constant(cast(tensor({0.0f, 1.0f}), t));
        to.node("OneHot", {to.input(0), depth, values}, {to.output()}, {{"axis", -1}});
      },
  });
  register_op_rules<ShapeOf>({
      // Shapes are the same for every example: ask the first one.
      .batching = [](const ShapeOf& op, BatchingCall call) { return one(dispatch1(op, {example(call.inputs[0].t, 0)}), false); },
      .onnx = [](const ShapeOf& op, onnx::Lowering& to) { to.node(std::string(op.name()) == "size" ? "Size" : "Shape", to.inputs(), {to.output()}); },
  });
  register_op_rules<BroadcastTo>({.batching = batch_broadcast, .onnx = lower_broadcast});
  register_op_rules<SumTo>({.batching = batch_sum_to, .onnx_unsupported = "sum_to appears in gradients only"});
}

}  // namespace ef::detail
