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

}  // namespace ef::passes::detail
