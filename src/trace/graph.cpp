#include "eagerflow/trace/graph.h"

#include <sstream>

namespace ef::ir {

int Graph::add_input(const TensorSpec& spec) {
  int id = static_cast<int>(values.size());
  values.push_back({spec, ValueKind::input, static_cast<int>(inputs.size())});
  inputs.push_back(id);
  return id;
}

int Graph::add_constant(const Tensor& t) {
  int id = static_cast<int>(values.size());
  values.push_back({t.spec(), ValueKind::constant, static_cast<int>(constants.size())});
  constants.push_back(t);
  return id;
}

std::vector<int> Graph::add_node(std::shared_ptr<const Primitive> op, std::vector<int> in,
                                 const std::vector<TensorSpec>& output_specs, std::string scope) {
  int node = static_cast<int>(nodes.size());
  std::vector<int> outs;
  for (const auto& s : output_specs) {
    outs.push_back(static_cast<int>(values.size()));
    values.push_back({s, ValueKind::node_output, node});
  }
  nodes.push_back({std::move(op), std::move(in), outs, std::move(scope)});
  return outs;
}

}  // namespace ef::ir
