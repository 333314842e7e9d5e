#pragma once
// Runs a graph node by node through ef::dispatch, so that the interpreters active on this
// thread see every op: a GradientTape records a function called under it, and gradient
// rules re-run sub-graphs (cond branches) op by op.
#include <span>
#include <vector>

#include "eagerflow/trace/graph.h"

namespace ef::exec {

enum class Effects { run, skip_prints };
std::vector<Tensor> interpret(const ir::Graph& graph, std::span<const Tensor> inputs, Effects effects = Effects::run);

}  // namespace ef::exec
