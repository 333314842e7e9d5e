#pragma once
// Runs a graph node by node through ef::dispatch, so that the interpreters active on this
// thread see every op: a trace records them (inlining a call, splitting a gradient), a tape
// records them, a vmap batches them.
#include <functional>
#include <span>
#include <vector>

#include "eagerflow/trace/graph.h"

namespace ef::exec {

// Runs one node on its arguments; returns at least as many tensors as the node has outputs.
using NodeRunner = std::function<std::vector<Tensor>(const ir::Node& node, std::span<const Tensor> args)>;

// The graph's outputs, each node run by `run_node` (default: dispatch of the node's op). The
// outputs are the graph's values themselves (a constant output is the graph's constant).
std::vector<Tensor> replay(const ir::Graph& graph, std::span<const Tensor> inputs, const NodeRunner& run_node = {});

// skip_prints: skip the ops whose skip_on_gradient_rerun() is true (print, summary writes), for
// a sub-graph run again to differentiate it; every other effect runs.
enum class Effects { run, skip_prints };
// replay, telling tapes of the variable reads, optionally skipping prints; outputs that are
// constants are copies of their own.
std::vector<Tensor> interpret(const ir::Graph& graph, std::span<const Tensor> inputs, Effects effects = Effects::run);

}  // namespace ef::exec
