// Batching rules: how each op runs on a batch when its per-example inputs gain a leading batch
// axis. Every rule calls public ops (or the op itself on wider tensors), so the batched program
// runs eagerly, records into an enclosing trace and is seen by tapes like any other code.
// Ops without a rule run once per example (slice, apply, stack): correct, but slow.
#include <algorithm>
#include <limits>
#include <optional>

#include "autodiff/vmap_internal.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/variable.h"
#include "function/scan_op.h"
#include "ops/activation_grad_op.h"
#include "ops/attention_op.h"
#include "ops/layer_norm_op.h"
#include "ops/optimizer_update_op.h"
#include "ops/softmax_cross_entropy_op.h"
#include "ops/primitives.h"

namespace ef::detail {
namespace {

// Bounded: a long-running program that never reads the log must not grow it.
constexpr std::size_t kMaxLoggedFallbacks = 256;
thread_local std::vector<std::string> fallback_log;

constexpr std::int64_t kToEnd = std::numeric_limits<std::int64_t>::max();  // a slice bound: "to the end"

using Rule = std::optional<std::vector<Batched>>;

std::vector<Batched> all_batched(std::vector<Tensor> ts) {
  std::vector<Batched> out;
  for (auto& t : ts) out.push_back({std::move(t), true});
  return out;
}
std::vector<Batched> one(Tensor t, bool batched = true) { return {{std::move(t), batched}}; }

// Inserts size-1 axes after the batch axis until one example has rank `target`, so that
// NumPy broadcasting lines up per-example axes and never an example axis with the batch axis.
Tensor align(const Batched& b, int target) {
  Tensor t = b.t;
  for (int r = b.rank(); r < target; ++r) t = expand_dims(t, 1);
  return t;
}

int max_rank(std::span<const Batched> in) {
  int r = 0;
  for (const auto& b : in) r = std::max(r, b.rank());
  return r;
}

// Shape of a batched result: the batch size first (-1 when known only at run time).
Shape batch_shape(std::int64_t batch, const Shape& example) {
  std::vector<std::int64_t> dims{batch == kDynamic ? -1 : batch};
  dims.insert(dims.end(), example.begin(), example.end());
  return Shape(dims);
}

[[noreturn]] void need_static_batch(const Primitive& op, const std::string& why) {
  fail("vmap", std::string("the batch size is known only at run time here, and batching '") + op.name() +
                   "' needs it (" + why + "); give the batched arguments a static batch dim");
}

// An unbatched operand repeated for every example.
Tensor materialize(const Primitive& op, const Batched& b, std::int64_t batch) {
  if (b.batched) return b.t;
  if (batch == kDynamic) need_static_batch(op, "to repeat an unbatched operand");
  std::vector<std::int64_t> dims{batch};
  dims.insert(dims.end(), b.t.shape().begin(), b.t.shape().end());
  return broadcast_to(expand_dims(b.t, 0), Shape(dims));
}

Tensor example(const Tensor& batched, std::int64_t i) { return squeeze(slice(batched, {i}, {i + 1}), {0}); }

// Elementwise and broadcasting ops (matmul's batch dims broadcast too): the same op on the
// aligned operands; unbatched operands broadcast over the batch.
std::vector<Batched> broadcasting(const Primitive& op, std::span<const Batched> in) {
  int r = max_rank(in);
  std::vector<Tensor> xs;
  for (const auto& b : in) xs.push_back(b.batched ? align(b, r) : b.t);
  return all_batched(dispatch(op, xs));
}

// [B, N, ...] -> [B*N, ...] for ops that already take a batch of images; nullopt when the
// example's dims are not static.
std::optional<Tensor> merge_batch(const Tensor& t) {
  std::vector<std::int64_t> dims{-1};
  for (int i = 2; i < t.rank(); ++i) {
    if (t.shape()[i] == kDynamic || t.shape()[i] == 0) return std::nullopt;
    dims.push_back(t.shape()[i]);
  }
  return reshape(t, Shape(dims));
}

Rule image_rule(const Primitive& op, std::span<const Batched> in, std::span<const TensorSpec> specs, std::int64_t batch,
                std::vector<bool> merged) {
  if (!specs[0].shape.is_static()) return std::nullopt;
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i].batched != merged[i]) return std::nullopt;
    if (!merged[i]) {
      xs.push_back(in[i].t);
      continue;
    }
    auto m = merge_batch(in[i].t);
    if (!m) return std::nullopt;
    xs.push_back(*m);
  }
  return one(reshape(dispatch1(op, xs), batch_shape(batch, specs[0].shape)));
}

Rule reduce_rule(const Reduce& op, const Batched& x, const TensorSpec& spec) {
  int rank = x.rank();
  std::vector<bool> mask = op.reduced_mask(rank);
  std::vector<int> axes;
  for (int i = 0; i < rank; ++i)
    if (mask[static_cast<std::size_t>(i)]) axes.push_back(i + 1);
  if (axes.empty()) return one(identity(x.t));  // a scalar example: nothing to reduce
  bool keepdims = spec.shape.rank() == rank;
  switch (op.kind()) {
    case ReduceKind::sum: return one(sum(x.t, axes, keepdims));
    case ReduceKind::mean: return one(mean(x.t, axes, keepdims));
    case ReduceKind::max: return one(max(x.t, axes, keepdims));
    case ReduceKind::min: return one(min(x.t, axes, keepdims));
  }
  return std::nullopt;
}

Rule squeeze_rule(const Squeeze& op, const Batched& x) {
  std::vector<int> axes;
  if (op.axes().empty()) {
    for (int i = 0; i < x.rank(); ++i) {
      std::int64_t d = x.t.shape()[i + 1];
      if (d == kDynamic) return std::nullopt;
      if (d == 1) axes.push_back(i + 1);
    }
  } else {
    for (int a : op.axes()) axes.push_back(normalize_axis(a, x.rank(), "squeeze") + 1);
  }
  if (axes.empty()) return one(identity(x.t));
  return one(squeeze(x.t, axes));
}

Rule slice_rule(const Slice& op, const Batched& x) {
  std::vector<std::int64_t> b{0}, e{kToEnd}, s{1};
  b.insert(b.end(), op.begin().begin(), op.begin().end());
  e.insert(e.end(), op.end().begin(), op.end().end());
  if (op.strides().empty()) s.resize(b.size(), 1);
  else s.insert(s.end(), op.strides().begin(), op.strides().end());
  return one(slice(x.t, b, e, s));
}

Rule gather_rule(const Gather& op, const Batched& x, const Batched& idx) {
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
Rule sum_to_rule(const Batched& x, const Batched& like) {
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

Rule broadcast_rule(const BroadcastTo& op, std::span<const Batched> in, const TensorSpec& spec) {
  int r = spec.shape.rank();
  auto to_static = [&](const Batched& x) {
    std::vector<std::int64_t> dims{kDynamic};  // keeps the batch axis
    dims.insert(dims.end(), spec.shape.begin(), spec.shape.end());
    return one(broadcast_to(align(x, r), Shape(dims)));
  };
  if (in.size() == 1) return to_static(in[0]);
  const Batched &x = in[0], &like = in[1];
  if (like.batched) return one(broadcast_like(x.batched ? align(x, like.rank()) : x.t, like.t));
  if (!spec.shape.is_static()) return std::nullopt;
  (void)op;
  return to_static(x);
}

Rule reshape_like_rule(const Batched& x, const Batched& like, const TensorSpec& spec) {
  if (x.batched && like.batched) return one(reshape_like(x.t, like.t));
  if (!spec.shape.is_static()) return std::nullopt;
  if (!x.batched) return one(reshape(x.t, spec.shape), false);
  return std::nullopt;  // handled by the caller, which knows the batch size
}

}  // namespace
// Issue 18's ops: src/ops/sequence_batching.cpp.
std::optional<std::vector<Batched>> sequence_batching_rule(const Primitive& op, std::span<const Batched> in);
namespace {

Rule rule_for(const Primitive& op, std::span<const Batched> in, std::span<const TensorSpec> specs, std::int64_t batch) {
  if (dynamic_cast<const Unary*>(&op) || dynamic_cast<const Binary*>(&op) || dynamic_cast<const Where*>(&op) ||
      dynamic_cast<const Cast*>(&op) || dynamic_cast<const Identity*>(&op) || dynamic_cast<const CheckNumerics*>(&op) ||
      dynamic_cast<const ClassIndices*>(&op) || dynamic_cast<const FillLike*>(&op) || dynamic_cast<const MatMul*>(&op) ||
      dynamic_cast<const ActivationGrad*>(&op))
    return broadcasting(op, in);
  // A draw shaped like a batched tensor: fresh numbers for every example.
  if (dynamic_cast<const RandomOp*>(&op) && in.size() == 1) return broadcasting(op, in);
  if (auto* r = dynamic_cast<const Reduce*>(&op)) return reduce_rule(*r, in[0], specs[0]);
  if (auto* s = dynamic_cast<const ScanOp*>(&op)) return scan_batching_rule(*s, in, batch);
  if (auto* a = dynamic_cast<const ArgMax*>(&op))
    return one(argmax(in[0].t, normalize_axis(a->axis(), in[0].rank(), "argmax") + 1, a->keepdims()));
  if (auto* s = dynamic_cast<const Softmax*>(&op)) {
    int axis = normalize_axis(s->axis(), in[0].rank(), s->name()) + 1;
    return one(s->log() ? log_softmax(in[0].t, axis) : softmax(in[0].t, axis));
  }
  if (dynamic_cast<const Reshape*>(&op)) {
    if (!specs[0].shape.is_static()) return std::nullopt;
    return one(reshape(in[0].t, batch_shape(batch, specs[0].shape)));
  }
  if (dynamic_cast<const ReshapeLike*>(&op)) {
    if (in[0].batched && !in[1].batched && specs[0].shape.is_static())
      return one(reshape(in[0].t, batch_shape(batch, specs[0].shape)));
    return reshape_like_rule(in[0], in[1], specs[0]);
  }
  if (auto* e = dynamic_cast<const ExpandDims*>(&op))
    return one(expand_dims(in[0].t, normalize_axis(e->axis(), in[0].rank() + 1, "expand_dims") + 1));
  if (auto* s = dynamic_cast<const Squeeze*>(&op)) return squeeze_rule(*s, in[0]);
  if (auto* t = dynamic_cast<const Transpose*>(&op)) {
    std::vector<int> perm{0};
    for (int p : t->resolved(in[0].rank())) perm.push_back(p + 1);
    return one(transpose(in[0].t, perm));
  }
  if (auto* c = dynamic_cast<const Concat*>(&op)) {
    std::vector<Tensor> xs;
    for (const auto& b : in) xs.push_back(materialize(op, b, batch));
    return one(concat(xs, normalize_axis(c->axis(), in[0].rank(), "concat") + 1));
  }
  if (auto* s = dynamic_cast<const Slice*>(&op)) return slice_rule(*s, in[0]);
  if (auto* g = dynamic_cast<const Gather*>(&op)) return gather_rule(*g, in[0], in[1]);
  if (auto* o = dynamic_cast<const OneHot*>(&op)) return one(one_hot(in[0].t, o->depth(), specs[0].dtype));
  // Shapes are the same for every example: ask the first one.
  if (dynamic_cast<const ShapeOf*>(&op)) return one(dispatch1(op, {example(in[0].t, 0)}), false);
  if (auto* b = dynamic_cast<const BroadcastTo*>(&op)) return broadcast_rule(*b, in, specs[0]);
  if (dynamic_cast<const SumTo*>(&op)) return sum_to_rule(in[0], in[1]);
  if (dynamic_cast<const Conv2D*>(&op)) return image_rule(op, in, specs, batch, {true, false});
  if (dynamic_cast<const Pool2D*>(&op)) return image_rule(op, in, specs, batch, {true});
  if (dynamic_cast<const Pool2DGrad*>(&op)) return image_rule(op, in, specs, batch, {true, true});
  if (dynamic_cast<const Conv2DBackpropInput*>(&op)) return image_rule(op, in, specs, batch, {true, false, true});
  if (auto* a = dynamic_cast<const AssignVariable*>(&op))
    fail(ErrorCode::unimplemented, "vmap",
         "cannot assign a batched value " + in[0].t.spec().str() + " to variable '" + a->variable()->name +
             "' (each example would write its own value); assign outside ef::vmap");
  if (auto* u = dynamic_cast<const ApplyUpdate*>(&op))
    fail(ErrorCode::unimplemented, "vmap",
         std::string("cannot apply an optimizer update (") + u->name() + ") to variable '" + u->variables()[0]->name +
             "' with a batched gradient (each example would update it again); update outside ef::vmap");
  if (Rule r = sequence_batching_rule(op, in)) return r;
  if (Rule r = attention_batching_rule(op, in, specs, batch)) return r;
  if (Rule r = layer_norm_batching_rule(op, in, batch)) return r;
  if (Rule r = softmax_cross_entropy_batching_rule(op, in, batch)) return r;
  return std::nullopt;
}

// The op once per example: slice every batched input, apply, stack the results.
std::vector<Batched> per_example(const Primitive& op, std::span<const Batched> in, std::int64_t batch) {
  if (batch == kDynamic) need_static_batch(op, "it has no batching rule and runs once per example");
  if (batch == 0)
    fail("vmap", std::string("op '") + op.name() + "' has no batching rule and runs once per example; a batch of size 0 has none");
  if (fallback_log.size() >= kMaxLoggedFallbacks) fallback_log.erase(fallback_log.begin());
  fallback_log.emplace_back(op.name());
  std::vector<std::vector<Tensor>> results;
  for (std::int64_t i = 0; i < batch; ++i) {
    std::vector<Tensor> xs;
    for (const auto& b : in) xs.push_back(b.batched ? example(b.t, i) : b.t);
    std::vector<Tensor> outs = dispatch(op, xs);
    results.resize(outs.size());
    for (std::size_t k = 0; k < outs.size(); ++k) results[k].push_back(std::move(outs[k]));
  }
  std::vector<Batched> out;
  for (auto& r : results) out.push_back({stack(r, 0), true});
  return out;
}

}  // namespace

std::vector<Batched> apply_batching_rule(const Primitive& op, std::span<const Batched> in,
                                         std::span<const TensorSpec> specs, std::int64_t batch) {
  if (Rule r = rule_for(op, in, specs, batch)) return std::move(*r);
  return per_example(op, in, batch);
}

std::vector<std::string> take_vmap_fallback_log() {
  std::vector<std::string> log;
  log.swap(fallback_log);
  return log;
}

}  // namespace ef::detail
