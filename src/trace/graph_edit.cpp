#include "trace/graph_edit.h"

#include <map>
#include <set>

#include "eagerflow/core/error.h"
#include "ops/primitives.h"

namespace ef::ir {

std::shared_ptr<Graph> extract(const Graph& g, std::size_t first, std::size_t last, const std::vector<int>& inputs,
                               const std::vector<int>& outputs, const std::string& name) {
  auto out = std::make_shared<Graph>();
  out->name = name;
  std::vector<int> map(g.values.size(), -1);
  for (int v : inputs) map[static_cast<std::size_t>(v)] = out->add_input(g.values[static_cast<std::size_t>(v)].spec);
  auto id = [&](int v) {
    int& m = map[static_cast<std::size_t>(v)];
    if (m >= 0) return m;
    const Value& value = g.values[static_cast<std::size_t>(v)];
    if (value.kind != ValueKind::constant)
      fail(ErrorCode::internal, "graph",
           "internal: value %" + std::to_string(v) + " of '" + g.name + "' is used outside the part extracted");
    return m = out->add_constant(g.constants[static_cast<std::size_t>(value.index)]);
  };
  for (std::size_t n = first; n < last; ++n) {
    const Node& node = g.nodes[n];
    std::vector<int> in;
    for (int v : node.inputs) in.push_back(id(v));
    std::vector<TensorSpec> specs;
    for (int v : node.outputs) specs.push_back(g.values[static_cast<std::size_t>(v)].spec);
    std::vector<int> made = out->add_node(node.op, std::move(in), specs, node.scope);
    for (std::size_t i = 0; i < made.size(); ++i) map[static_cast<std::size_t>(node.outputs[i])] = made[i];
  }
  for (int v : outputs) out->outputs.push_back(id(v));
  return out;
}

HoistedReads hoist_variable_reads(const Graph& g) {
  std::set<const VariableState*> assigned;
  for (const Node& n : g.nodes)
    if (auto* a = dynamic_cast<const AssignVariable*>(n.op.get())) assigned.insert(a->variable().get());
  HoistedReads r;
  std::vector<int> hoisted_values;
  std::vector<bool> keep(g.nodes.size(), true);
  std::map<const VariableState*, std::size_t> position;
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    auto* read = dynamic_cast<const ReadVariable*>(g.nodes[n].op.get());
    if (!read || assigned.count(read->variable().get())) continue;
    keep[n] = false;
    hoisted_values.push_back(g.nodes[n].outputs[0]);
    if (!position.count(read->variable().get())) {
      position[read->variable().get()] = r.variables.size();
      r.variables.push_back(read->variable());
    }
  }
  // Rebuilt with the same value ids: inputs first in order, the reads' values as new inputs.
  auto out = std::make_shared<Graph>(g);
  out->nodes.clear();
  std::vector<int> node_of(g.nodes.size(), -1);
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    if (keep[n]) {
      node_of[n] = static_cast<int>(out->nodes.size());
      out->nodes.push_back(g.nodes[n]);
    }
  for (Value& v : out->values)
    if (v.kind == ValueKind::node_output) v.index = node_of[static_cast<std::size_t>(v.index)];
  // Two reads of one variable (a sub-graph's, say) share the variable's one input.
  std::vector<int> input_of_variable(r.variables.size(), -1);
  for (int value : hoisted_values) {
    std::size_t n = static_cast<std::size_t>(g.values[static_cast<std::size_t>(value)].index);
    auto* read = static_cast<const ReadVariable*>(g.nodes[n].op.get());
    std::size_t p = position[read->variable().get()];
    if (input_of_variable[p] < 0) {
      input_of_variable[p] = value;
      out->values[static_cast<std::size_t>(value)].kind = ValueKind::input;
    }
  }
  for (int value : input_of_variable) {
    out->values[static_cast<std::size_t>(value)].index = static_cast<int>(out->inputs.size());
    out->inputs.push_back(value);
  }
  // A second read of the same variable becomes a use of the first one's value.
  std::map<int, int> alias;
  for (int value : hoisted_values) {
    std::size_t n = static_cast<std::size_t>(g.values[static_cast<std::size_t>(value)].index);
    auto* read = static_cast<const ReadVariable*>(g.nodes[n].op.get());
    int first = input_of_variable[position[read->variable().get()]];
    if (first != value) alias[value] = first;
  }
  if (!alias.empty()) {
    auto fix = [&](int& v) {
      auto it = alias.find(v);
      if (it != alias.end()) v = it->second;
    };
    for (Node& n : out->nodes)
      for (int& v : n.inputs) fix(v);
    for (int& v : out->outputs) fix(v);
    // The later reads' values now have no producer: copy the graph without them.
    std::vector<int> ins = out->inputs;
    return {extract(*out, 0, out->nodes.size(), ins, out->outputs, out->name), r.variables};
  }
  r.graph = out;
  return r;
}

}  // namespace ef::ir
