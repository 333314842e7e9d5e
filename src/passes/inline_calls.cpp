// Inlining: a call node becomes the nodes of the graph it calls, so that the other passes see
// through it (a loaded model's dense layers fuse, its unused outputs go) and replay runs no
// nested plan. The called graph is replayed through dispatch on the caller's values, so its
// shape rules run again: a graph traced with a dynamic batch gets the caller's sizes.
#include "eagerflow/passes/passes.h"
#include "eagerflow/trace/context.h"
#include "exec/interpret.h"
#include "function/call_op.h"
#include "ops/interpreters.h"

namespace ef::passes {
namespace {

const ir::Graph& called_graph(const CallOp& call) {
  return call.with_residuals() ? call.function()->gradient().forward->traced() : call.function()->traced();
}

std::vector<Tensor> replay_inlining(const ir::Graph& g, std::span<const Tensor> inputs) {
  return exec::replay(g, inputs, [](const ir::Node& node, std::span<const Tensor> args) {
    auto* call = dynamic_cast<const CallOp*>(node.op.get());
    return call ? replay_inlining(called_graph(*call), args) : dispatch(*node.op, args);
  });
}

}  // namespace

std::shared_ptr<ir::Graph> inline_calls(const ir::Graph& g) {
  bool any = false;
  for (const ir::Node& node : g.nodes) any |= dynamic_cast<const CallOp*>(node.op.get()) != nullptr;
  if (!any) return std::make_shared<ir::Graph>(g);
  detail::OutsideKernel outside;
  detail::SuspendTapes hide_tapes;  // what is replayed here belongs to the new graph only
  trace::TraceContext ctx(g.name, /*allow_variable_creation=*/false);
  // The whole graph is replayed, so that the values after a call get the sizes the call's
  // graph now computes (and the later passes see static shapes where there are).
  std::vector<Tensor> inputs;
  for (int v : g.inputs) inputs.push_back(ctx.add_input(g.values[static_cast<std::size_t>(v)].spec));
  trace::TraceScope scope(ctx);
  ctx.set_outputs(replay_inlining(g, inputs));
  return ctx.graph();
}

}  // namespace ef::passes
