// Inlining: a call node becomes the nodes of the graph it calls, so that the other passes see
// through it (a loaded model's dense layers fuse, its unused outputs go) and replay runs no
// nested plan. The called graph is replayed through dispatch on the caller's values, so its
// shape rules run again: a graph traced with a dynamic batch gets the caller's sizes.
#include "eagerflow/passes/passes.h"
#include "eagerflow/trace/context.h"
#include "function/call_op.h"
#include "ops/interpreters.h"

namespace ef::passes {
namespace {

const ir::Graph& called_graph(const CallOp& call) {
  return call.with_residuals() ? call.function()->gradient().forward->traced() : call.function()->traced();
}

std::vector<Tensor> replay(const ir::Graph& g, std::span<const Tensor> inputs) {
  std::vector<Tensor> slots(g.values.size());
  for (std::size_t i = 0; i < g.inputs.size(); ++i) slots[static_cast<std::size_t>(g.inputs[i])] = inputs[i];
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ir::ValueKind::constant) slots[v] = g.constants[static_cast<std::size_t>(g.values[v].index)];
  std::vector<Tensor> args;
  for (const ir::Node& node : g.nodes) {
    args.clear();
    for (int v : node.inputs) args.push_back(slots[static_cast<std::size_t>(v)]);
    auto* call = dynamic_cast<const CallOp*>(node.op.get());
    std::vector<Tensor> outs = call ? replay(called_graph(*call), args) : dispatch(*node.op, args);
    for (std::size_t o = 0; o < node.outputs.size(); ++o) slots[static_cast<std::size_t>(node.outputs[o])] = outs[o];
  }
  std::vector<Tensor> out;
  for (int v : g.outputs) out.push_back(slots[static_cast<std::size_t>(v)]);
  return out;
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
  ctx.set_outputs(replay(g, inputs));
  return ctx.graph();
}

}  // namespace ef::passes
