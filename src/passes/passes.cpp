#include <map>
#include <tuple>

#include "eagerflow/passes/passes.h"
#include "ops/fused.h"

namespace ef::passes {
namespace {

// Copies `g` keeping the nodes in `keep`, with value ids renumbered densely. `replace` maps a
// value id to the id that stands for it (CSE); unmapped ids map to themselves.
// `overrides` swaps a node's op and inputs (its outputs stay): how fusion replaces a chain.
std::shared_ptr<ir::Graph> rebuild(const ir::Graph& g, const std::vector<bool>& keep, std::vector<int> replace,
                                   const std::map<std::size_t, ir::Node>& overrides = {}) {
  auto out = std::make_shared<ir::Graph>();
  out->name = g.name;
  std::vector<int> remap(g.values.size(), -1);
  auto resolve = [&](int v) {
    while (replace[static_cast<std::size_t>(v)] != v) v = replace[static_cast<std::size_t>(v)];
    return remap[static_cast<std::size_t>(v)];
  };
  for (int v : g.inputs) remap[static_cast<std::size_t>(v)] = out->add_input(g.values[static_cast<std::size_t>(v)].spec);
  std::vector<bool> used(g.values.size(), false);
  auto node_at = [&](std::size_t n) -> const ir::Node& {
    auto it = overrides.find(n);
    return it != overrides.end() ? it->second : g.nodes[n];
  };
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    if (keep[n])
      for (int v : node_at(n).inputs) used[static_cast<std::size_t>(v)] = true;
  for (int v : g.outputs) used[static_cast<std::size_t>(v)] = true;
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ir::ValueKind::constant && used[v])
      remap[v] = out->add_constant(g.constants[static_cast<std::size_t>(g.values[v].index)]);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    if (!keep[n]) continue;
    const ir::Node& node = node_at(n);
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

std::shared_ptr<ir::Graph> fuse_dense(const ir::Graph& g) {
  // Who reads each value, when exactly one node does (and no graph output).
  std::vector<int> uses(g.values.size(), 0), reader(g.values.size(), -1);
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs) {
      ++uses[static_cast<std::size_t>(v)];
      reader[static_cast<std::size_t>(v)] = static_cast<int>(n);
    }
  for (int v : g.outputs) uses[static_cast<std::size_t>(v)] += 2;
  auto sole_reader = [&](int v) { return uses[static_cast<std::size_t>(v)] == 1 ? reader[static_cast<std::size_t>(v)] : -1; };
  auto spec = [&](int v) -> const TensorSpec& { return g.values[static_cast<std::size_t>(v)].spec; };

  std::vector<bool> keep(g.nodes.size(), true);
  std::map<std::size_t, ir::Node> overrides;
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& mm = g.nodes[n];
    if (!keep[n] || std::string(mm.op->name()) != "matmul") continue;
    const TensorSpec &x = spec(mm.inputs[0]), &w = spec(mm.inputs[1]);
    if (x.dtype != DType::float32 || x.shape.rank() < 2 || w.shape.rank() != 2) continue;
    std::vector<int> inputs = mm.inputs;
    std::size_t last = n;
    int value = mm.outputs[0];
    bool has_bias = false;
    int r = sole_reader(value);
    if (r >= 0 && std::string(g.nodes[static_cast<std::size_t>(r)].op->name()) == "add") {
      const ir::Node& add = g.nodes[static_cast<std::size_t>(r)];
      int bias = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
      const TensorSpec& b = spec(bias);
      if (add.inputs[0] != add.inputs[1] && b.dtype == DType::float32 && b.shape.rank() == 1 &&
          b.shape[0] == w.shape[1] && b.shape[0] != kDynamic && spec(add.outputs[0]).shape == spec(value).shape) {
        inputs.push_back(bias);
        has_bias = true;
        last = static_cast<std::size_t>(r);
        value = add.outputs[0];
      }
    }
    std::string activation;
    r = sole_reader(value);
    if (r >= 0 && fusible_activation(g.nodes[static_cast<std::size_t>(r)].op->name())) {
      activation = g.nodes[static_cast<std::size_t>(r)].op->name();
      last = static_cast<std::size_t>(r);
    }
    if (last == n) continue;  // a bare matmul: nothing to fuse
    for (std::size_t k = n; k < last; ++k)
      if (k == n || (has_bias && k == static_cast<std::size_t>(sole_reader(mm.outputs[0])))) keep[k] = false;
    overrides[last] = ir::Node{make_fused_dense(has_bias, activation), inputs, g.nodes[last].outputs};
  }
  return rebuild(g, keep, identity_map(g.values.size()), overrides);
}

std::shared_ptr<ir::Graph> optimize(const ir::Graph& g, const PassOptions& options) {
  std::shared_ptr<ir::Graph> out = rebuild(g, std::vector<bool>(g.nodes.size(), true), identity_map(g.values.size()));
  if (options.common_subexpr) out = eliminate_common_subexpressions(*out);
  if (options.dead_code) out = eliminate_dead_code(*out);
  if (options.fuse_dense) out = fuse_dense(*out);
  return out;
}

}  // namespace ef::passes
