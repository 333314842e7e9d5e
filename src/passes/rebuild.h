#pragma once
// The graph copy every pass ends with (src/passes/passes.cpp), for passes in other files.
#include <map>
#include <memory>
#include <vector>

#include "eagerflow/trace/graph.h"

namespace ef::passes::detail {

// Copies `g` keeping the nodes in `keep`, with value ids renumbered densely. `replace` maps a
// value id to the id that stands for it; `overrides` swaps a node's op, inputs and outputs.
std::shared_ptr<ir::Graph> rebuild(const ir::Graph& g, const std::vector<bool>& keep, std::vector<int> replace,
                                   const std::map<std::size_t, ir::Node>& overrides = {});
std::vector<int> identity_map(std::size_t n);

// Whether `g` holds a node fuse_conv rewrites from (a convolution, its filter gradient or a
// relu gradient): without one the pass would only copy the graph, which tracing pays for.
bool has_conv_fusion_candidates(const ir::Graph& g);

}  // namespace ef::passes::detail
