#include "autodiff/gradient_split.h"

#include <algorithm>

#include "autodiff/tape_impl.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/trace/context.h"
#include "exec/interpret.h"
#include "function/call_op.h"
#include "function/control_flow_ops.h"
#include "function/scan_op.h"
#include "ops/primitives.h"
#include "trace/graph_edit.h"

namespace ef::detail {
namespace {

// Replays one node of the graph being split inside the joint trace. A call records the
// variant that keeps its own residuals, so that nested calls are not run twice either.
std::vector<Tensor> replay_node(const ir::Node& node, std::span<const Tensor> args) {
  if (auto* call = dynamic_cast<const CallOp*>(node.op.get()))
    return dispatch(CallOp(call->function(), call->function()->has_gradient()), args);
  if (auto* cond = dynamic_cast<const CondOp*>(node.op.get()))
    if (std::optional<CondOp> variant = cond->with_residuals()) return dispatch(*variant, args);
  if (auto* loop = dynamic_cast<const WhileOp*>(node.op.get()))
    if (std::optional<WhileOp> variant = loop->with_residuals()) return dispatch(*variant, args);
  if (auto* scan = dynamic_cast<const ScanOp*>(node.op.get()))
    if (std::optional<ScanOp> variant = scan->with_residuals()) {
      std::vector<Tensor> out = dispatch(*variant, args);
      out.resize(node.outputs.size());  // the graph's node had the plain op's outputs
      return out;
    }
  return dispatch(*node.op, args);
}

}  // namespace

GradientSplit split_for_gradient(const ir::Graph& g) {
  trace::TraceContext ctx(g.name, /*allow_variable_creation=*/false);
  std::vector<Tensor> outputs, cotangents, grads;
  std::vector<std::size_t> sources_at;
  std::size_t forward_nodes = 0;
  {
    SuspendTapes hide_outer_tapes;  // the joint trace is ours alone
    TapeImpl tape(/*persistent=*/false, /*watch_accessed_variables=*/false);
    trace::TraceScope scope(ctx);
    std::vector<GradientSource> sources;
    std::vector<Tensor> inputs;
    for (std::size_t i = 0; i < g.inputs.size(); ++i) {
      const TensorSpec& spec = g.values[static_cast<std::size_t>(g.inputs[i])].spec;
      Tensor t = ctx.add_input(spec);
      inputs.push_back(t);
      if (is_inexact(spec.dtype)) {
        tape.watch(t);
        sources.emplace_back(t);
        sources_at.push_back(i);
      }
    }
    outputs = exec::replay(g, inputs, replay_node);
    forward_nodes = ctx.graph()->nodes.size();
    std::vector<Tensor> targets;
    for (const Tensor& out : outputs) {
      if (!is_inexact(out.dtype())) continue;
      targets.push_back(out);
      cotangents.push_back(ctx.add_input(out.spec()));
    }
    if (!sources.empty() && !targets.empty())
      grads = tape.gradient(targets, cotangents, sources, UnconnectedGradients::zero);
    else
      for (std::size_t s = 0; s < sources.size(); ++s) grads.push_back(zeros_like(sources[s].tensor()));
  }
  const ir::Graph& joint = *ctx.graph();
  GradientSplit split;
  split.gradient_inputs = sources_at;
  for (std::size_t o = 0; o < g.outputs.size(); ++o)
    if (is_inexact(outputs[o].dtype())) split.cotangent_outputs.push_back(o);

  std::vector<int> output_ids, grad_ids, cotangent_ids;
  for (const Tensor& t : outputs) output_ids.push_back(ctx.value_of(t));
  for (const Tensor& t : grads) grad_ids.push_back(ctx.value_of(t));
  for (const Tensor& t : cotangents) cotangent_ids.push_back(ctx.value_of(t));
  // The joint graph's first inputs are the graph's own, in order.
  std::vector<int> graph_inputs(joint.inputs.begin(), joint.inputs.begin() + static_cast<std::ptrdiff_t>(g.inputs.size()));

  // What the backward part reads from the forward part: graph inputs, and residuals.
  std::vector<bool> used(joint.values.size(), false);
  for (std::size_t n = forward_nodes; n < joint.nodes.size(); ++n)
    for (int v : joint.nodes[n].inputs) used[static_cast<std::size_t>(v)] = true;
  for (int v : grad_ids) used[static_cast<std::size_t>(v)] = true;
  std::vector<int> residuals;
  for (std::size_t v = 0; v < joint.values.size(); ++v) {
    const ir::Value& value = joint.values[v];
    if (used[v] && value.kind == ir::ValueKind::node_output && static_cast<std::size_t>(value.index) < forward_nodes)
      residuals.push_back(static_cast<int>(v));
  }
  std::vector<int> backward_inputs;
  for (std::size_t i = 0; i < graph_inputs.size(); ++i)
    if (used[static_cast<std::size_t>(graph_inputs[i])]) {
      split.forward_inputs.push_back(i);
      backward_inputs.push_back(graph_inputs[i]);
    }
  backward_inputs.insert(backward_inputs.end(), residuals.begin(), residuals.end());
  backward_inputs.insert(backward_inputs.end(), cotangent_ids.begin(), cotangent_ids.end());

  std::vector<int> forward_outputs = output_ids;
  forward_outputs.insert(forward_outputs.end(), residuals.begin(), residuals.end());
  split.forward = ir::extract(joint, 0, forward_nodes, graph_inputs, forward_outputs, g.name);
  split.num_residuals = residuals.size();
  split.backward = ir::extract(joint, forward_nodes, joint.nodes.size(), backward_inputs, grad_ids, g.name + "_grad");
  return split;
}

}  // namespace ef::detail
