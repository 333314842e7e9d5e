#include <map>
#include <tuple>

#include "eagerflow/passes/passes.h"

namespace ef::passes {
namespace {

// Copies `g` keeping the nodes in `keep`, with value ids renumbered densely. `replace` maps a
// value id to the id that stands for it (CSE); unmapped ids map to themselves.
std::shared_ptr<ir::Graph> rebuild(const ir::Graph& g, const std::vector<bool>& keep, std::vector<int> replace) {
  auto out = std::make_shared<ir::Graph>();
  out->name = g.name;
  std::vector<int> remap(g.values.size(), -1);
  auto resolve = [&](int v) {
    while (replace[static_cast<std::size_t>(v)] != v) v = replace[static_cast<std::size_t>(v)];
    return remap[static_cast<std::size_t>(v)];
  };
  for (int v : g.inputs) remap[static_cast<std::size_t>(v)] = out->add_input(g.values[static_cast<std::size_t>(v)].spec);
  std::vector<bool> used(g.values.size(), false);
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    if (keep[n])
      for (int v : g.nodes[n].inputs) used[static_cast<std::size_t>(v)] = true;
  for (int v : g.outputs) used[static_cast<std::size_t>(v)] = true;
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ir::ValueKind::constant && used[v])
      remap[v] = out->add_constant(g.constants[static_cast<std::size_t>(g.values[v].index)]);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    if (!keep[n]) continue;
    const ir::Node& node = g.nodes[n];
    std::vector<int> ins;
    for (int v : node.inputs) ins.push_back(resolve(v));
    std::vector<TensorSpec> specs;
    for (int v : node.outputs) specs.push_back(g.values[static_cast<std::size_t>(v)].spec);
    std::vector<int> outs = out->add_node(node.op, std::move(ins), specs);
    for (std::size_t i = 0; i < outs.size(); ++i) remap[static_cast<std::size_t>(node.outputs[i])] = outs[i];
  }
  for (int v : g.outputs) out->outputs.push_back(resolve(v));
  return out;
}

std::vector<int> identity_map(std::size_t n) {
  std::vector<int> m(n);
  for (std::size_t i = 0; i < n; ++i) m[i] = static_cast<int>(i);
  return m;
}

}  // namespace

std::shared_ptr<ir::Graph> eliminate_dead_code(const ir::Graph& g) {
  std::vector<bool> live_value(g.values.size(), false), keep(g.nodes.size(), false);
  for (int v : g.outputs) live_value[static_cast<std::size_t>(v)] = true;
  for (std::size_t n = g.nodes.size(); n-- > 0;) {
    const ir::Node& node = g.nodes[n];
    bool live = node.op->has_effect();
    for (int v : node.outputs) live |= live_value[static_cast<std::size_t>(v)];
    if (!live) continue;
    keep[n] = true;
    for (int v : node.inputs) live_value[static_cast<std::size_t>(v)] = true;
  }
  return rebuild(g, keep, identity_map(g.values.size()));
}

std::shared_ptr<ir::Graph> eliminate_common_subexpressions(const ir::Graph& g) {
  std::vector<int> replace = identity_map(g.values.size());
  std::vector<bool> keep(g.nodes.size(), true);
  // Identity of a pure node: op name, attributes, and (already canonical) inputs. Variable
  // reads are excluded: two reads of one variable may straddle an assignment.
  std::map<std::tuple<std::string, std::string, std::vector<int>>, std::size_t> seen;
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (node.op->has_effect() || node.inputs.empty()) continue;
    std::vector<int> ins;
    for (int v : node.inputs) ins.push_back(replace[static_cast<std::size_t>(v)]);
    auto key = std::make_tuple(std::string(node.op->name()), node.op->attrs(), ins);
    auto [it, inserted] = seen.emplace(key, n);
    if (inserted) continue;
    const ir::Node& first = g.nodes[it->second];
    keep[n] = false;
    for (std::size_t i = 0; i < node.outputs.size(); ++i)
      replace[static_cast<std::size_t>(node.outputs[i])] = first.outputs[i];
  }
  return rebuild(g, keep, replace);
}

std::shared_ptr<ir::Graph> optimize(const ir::Graph& g, const PassOptions& options) {
  std::shared_ptr<ir::Graph> out = rebuild(g, std::vector<bool>(g.nodes.size(), true), identity_map(g.values.size()));
  if (options.common_subexpr) out = eliminate_common_subexpressions(*out);
  if (options.dead_code) out = eliminate_dead_code(*out);
  return out;
}

}  // namespace ef::passes
