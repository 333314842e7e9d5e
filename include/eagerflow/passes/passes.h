#pragma once
// Graph rewrites run after tracing. Each can be switched off through PassOptions.
#include "eagerflow/trace/graph.h"

namespace ef::passes {

struct PassOptions {
  bool dead_code = true;       // drop nodes whose results are unused (effects are kept)
  bool common_subexpr = true;  // merge identical pure nodes on identical inputs
};

// Returns a new graph; the input graph is left as traced.
std::shared_ptr<ir::Graph> optimize(const ir::Graph& g, const PassOptions& options = {});
std::shared_ptr<ir::Graph> eliminate_dead_code(const ir::Graph& g);
std::shared_ptr<ir::Graph> eliminate_common_subexpressions(const ir::Graph& g);

}  // namespace ef::passes
