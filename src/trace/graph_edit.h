#pragma once
// Graph surgery shared by the gradient split and the call op: copying a run of nodes into a
// graph of its own, and turning variable reads into inputs.
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/trace/graph.h"

namespace ef {
struct VariableState;
}

namespace ef::ir {

// A new graph holding nodes [first, last) of `g`, whose inputs are the values `inputs` and
// whose outputs are the values `outputs` (value ids of `g`). Every value the copied nodes or
// the outputs use must be one of `inputs`, a constant, or made by a copied node.
std::shared_ptr<Graph> extract(const Graph& g, std::size_t first, std::size_t last, const std::vector<int>& inputs,
                               const std::vector<int>& outputs, const std::string& name);

// `g` with each read of a variable that `g` never assigns turned into a trailing input, and
// those variables in input order: the caller reads them, so that its tapes see the reads and
// the variables get gradients.
struct HoistedReads {
  std::shared_ptr<Graph> graph;
  std::vector<std::shared_ptr<VariableState>> variables;
};
HoistedReads hoist_variable_reads(const Graph& g);

}  // namespace ef::ir
