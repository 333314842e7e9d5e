#include "autodiff/tape_impl.h"
#include "exec/interpret.h"
#include "ops/optimizer_update_op.h"
#include "ops/primitives.h"

namespace ef::detail {

std::vector<Tensor> graph_vjp(const ir::Graph& graph, std::span<const Tensor> inputs, std::span<const Tensor> cotangents,
                              const std::vector<bool>& needed) {
  for (const auto& node : graph.nodes)
    if (!variables_written(*node.op).empty())  // assignments and fused optimizer updates
      fail(ErrorCode::unimplemented, "gradient",
           "cannot differentiate through a sub-graph of '" + graph.name +
               "' that assigns variables (its forward pass would run again)");
  // The forward values of the sub-graph were not kept: run it again under a tape.
  TapeImpl tape(/*persistent=*/false, /*watch_accessed_variables=*/false);
  std::vector<GradientSource> sources;
  std::vector<std::size_t> which;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (needed[i] && is_inexact(inputs[i].dtype())) {
      tape.watch(inputs[i]);
      sources.emplace_back(inputs[i]);
      which.push_back(i);
    }
  std::vector<Tensor> outputs = exec::interpret(graph, inputs, exec::Effects::skip_prints);
  std::vector<Tensor> targets, cots;
  for (std::size_t o = 0; o < outputs.size(); ++o)
    if (is_inexact(outputs[o].dtype())) {
      targets.push_back(outputs[o]);
      cots.push_back(cotangents[o]);
    }
  std::vector<Tensor> result(inputs.size());
  if (sources.empty()) return result;
  std::vector<Tensor> grads = tape.gradient(targets, cots, sources, UnconnectedGradients::zero);
  for (std::size_t k = 0; k < which.size(); ++k) result[which[k]] = grads[k];
  return result;
}

}  // namespace ef::detail
