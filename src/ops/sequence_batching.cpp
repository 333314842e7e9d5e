// vmap batching rules of issue 18's ops (src/ops/sequence_primitives.h): each op on the batched
// tensor, its axes shifted past the batch axis. src/autodiff/batching_rules.cpp asks here
// before falling back to one call per example.
#include <optional>

#include "autodiff/vmap_internal.h"
#include "eagerflow/ops/ops.h"
#include "ops/sequence_primitives.h"

namespace ef::detail {

std::optional<std::vector<Batched>> sequence_batching_rule(const Primitive& op, std::span<const Batched> in) {
  if ((dynamic_cast<const CumprodGrad*>(&op) || dynamic_cast<const CumprodJvp*>(&op)) && in.size() == 2 && in[0].rank() >= 1) {
    // An unbatched operand is broadcast to the other's batch (its runtime shape).
    Tensor x = in[0].batched ? in[0].t : broadcast_like(expand_dims(in[0].t, 0), in[1].t);
    Tensor g = in[1].batched ? in[1].t : broadcast_like(expand_dims(in[1].t, 0), in[0].t);
    OpParams p = op.parameters();
    int axis = normalize_axis(p.axis("axis"), in[0].rank(), op.name()) + 1;
    if (dynamic_cast<const CumprodGrad*>(&op))
      return std::vector<Batched>{{dispatch1(CumprodGrad(axis, p.flag("exclusive"), p.flag("reverse")), {x, g}), true}};
    return std::vector<Batched>{{dispatch1(CumprodJvp(axis, p.flag("exclusive"), p.flag("reverse")), {x, g}), true}};
  }
  if (in.size() != 1) return std::nullopt;  // take_along_axis and the gradients: one call per example
  for (const auto& b : in)
    if (!b.batched) return std::nullopt;
  const Tensor& x = in[0].t;
  int rank = in[0].rank();  // one example's
  auto shifted = [&](int axis) { return normalize_axis(axis, rank, op.name()) + 1; };
  auto batched = [](std::vector<Tensor> ts) {
    std::vector<Batched> out;
    for (auto& t : ts) out.push_back({std::move(t), true});
    return out;
  };
  // Elementwise, or acting on trailing axes only: the same op on the wider tensor.
  if (dynamic_cast<const Rounding*>(&op) || dynamic_cast<const Clip*>(&op) || dynamic_cast<const Tri*>(&op) ||
      dynamic_cast<const TopK*>(&op)) {
    if (dynamic_cast<const Tri*>(&op) && rank < 2) return std::nullopt;  // the op's own error, per example
    if (dynamic_cast<const TopK*>(&op) && rank < 1) return std::nullopt;
    return batched(dispatch(op, std::span<const Tensor>(&x, 1)));
  }
  if (auto* r = dynamic_cast<const ReduceBool*>(&op)) {
    std::vector<bool> mask = r->reduced_mask(rank);
    std::vector<int> axes;
    for (int a = 0; a < rank; ++a)
      if (mask[static_cast<std::size_t>(a)]) axes.push_back(a + 1);
    if (axes.empty()) return batched({cast(x, DType::bool_)});  // nothing reduced (a scalar example)
    return batched({r->any() ? any(x, axes, r->keepdims()) : all(x, axes, r->keepdims())});
  }
  if (auto* c = dynamic_cast<const Cumulative*>(&op)) {
    if (rank < 1) return std::nullopt;
    return batched({dispatch1(Cumulative(c->product(), shifted(c->axis()), c->exclusive(), c->reverse()), {x})});
  }
  if (auto* s = dynamic_cast<const Sort*>(&op)) {
    if (rank < 1) return std::nullopt;
    return batched({sort(x, shifted(s->axis()), s->descending())});
  }
  if (auto* s = dynamic_cast<const ArgSort*>(&op)) {
    if (rank < 1) return std::nullopt;
    return batched({argsort(x, shifted(s->axis()), s->descending())});
  }
  if (auto* p = dynamic_cast<const Pad*>(&op)) {
    std::vector<std::int64_t> paddings{0, 0};
    paddings.insert(paddings.end(), p->paddings().begin(), p->paddings().end());
    return batched({dispatch1(Pad(paddings, p->mode(), p->constant()), {x})});
  }
  if (auto* t = dynamic_cast<const Tile*>(&op)) {
    std::vector<std::int64_t> m{1};
    m.insert(m.end(), t->multiples().begin(), t->multiples().end());
    return batched({dispatch1(Tile(m), {x})});
  }
  if (auto* r = dynamic_cast<const Repeat*>(&op)) {
    if (rank < 1) return std::nullopt;
    return batched({dispatch1(Repeat(r->repeats(), shifted(r->axis())), {x})});
  }
  return std::nullopt;
}

}  // namespace ef::detail
