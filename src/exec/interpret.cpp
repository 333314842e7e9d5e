#include "exec/interpret.h"

#include "ops/interpreters.h"
#include "ops/primitives.h"

namespace ef::exec {

std::vector<Tensor> replay(const ir::Graph& g, std::span<const Tensor> inputs, const NodeRunner& run_node) {
  if (inputs.size() != g.inputs.size())
    fail("exec", "graph '" + g.name + "' expects " + std::to_string(g.inputs.size()) + " inputs, got " +
                     std::to_string(inputs.size()));
  std::vector<Tensor> slots(g.values.size());
  for (std::size_t i = 0; i < g.inputs.size(); ++i) slots[static_cast<std::size_t>(g.inputs[i])] = inputs[i];
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ir::ValueKind::constant) slots[v] = g.constants[static_cast<std::size_t>(g.values[v].index)];
  std::vector<Tensor> args;
  for (const ir::Node& node : g.nodes) {
    args.clear();
    for (int v : node.inputs) args.push_back(slots[static_cast<std::size_t>(v)]);
    std::vector<Tensor> outs = run_node ? run_node(node, args) : dispatch(*node.op, args);
    for (std::size_t i = 0; i < node.outputs.size(); ++i) slots[static_cast<std::size_t>(node.outputs[i])] = std::move(outs[i]);
  }
  std::vector<Tensor> out;
  for (int v : g.outputs) out.push_back(slots[static_cast<std::size_t>(v)]);
  return out;
}

std::vector<Tensor> interpret(const ir::Graph& g, std::span<const Tensor> inputs, Effects effects) {
  std::vector<Tensor> out = replay(
      g, inputs, [&](const ir::Node& node, std::span<const Tensor> args) -> std::vector<Tensor> {
        if (effects == Effects::skip_prints && node.op->skip_on_gradient_rerun() && node.outputs.empty()) return {};
        std::vector<Tensor> outs = dispatch(*node.op, args);
        if (auto* read = dynamic_cast<const ReadVariable*>(node.op.get()))
          detail::note_variable_read(read->variable(), outs[0]);
        return outs;
      });
  for (std::size_t i = 0; i < out.size(); ++i)
    if (g.values[static_cast<std::size_t>(g.outputs[i])].kind == ir::ValueKind::constant) out[i] = out[i].clone();  // the caller's own
  return out;
}

}  // namespace ef::exec
