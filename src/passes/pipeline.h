#pragma once
// optimize's pass manager: the passes in order, each named, with the IR verifier between them.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/trace/graph.h"

namespace ef::passes::detail {

struct Pass {
  std::string name;  // as the verifier's errors name it: "dead_code"
  // The rewritten graph, or nullptr when the pass has nothing to do (the graph stays).
  std::function<std::shared_ptr<ir::Graph>(const ir::Graph&)> run;
};

// Runs `passes` in order on a copy of `g`. With verify_passes() on, the verifier checks `g`
// first and then each pass's result, throwing an ef::Error that names the pass.
std::shared_ptr<ir::Graph> run_passes(const ir::Graph& g, const std::vector<Pass>& passes);

}  // namespace ef::passes::detail
