#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <typeindex>

#include "eagerflow/passes/passes.h"
#include "ops/fused.h"
#include "ops/primitives.h"
#include "passes/pipeline.h"
#include "passes/rebuild.h"
#include "trace/verify.h"

namespace ef::passes {
namespace detail {

// Copies `g` keeping the nodes in `keep`, with value ids renumbered densely. `replace` maps a
// value id to the id that stands for it (CSE); unmapped ids map to themselves.
// `overrides` swaps a node's op and inputs (its outputs stay): how fusion replaces a chain.
std::shared_ptr<ir::Graph> rebuild(const ir::Graph& g, const std::vector<bool>& keep, std::vector<int> replace,
                                   const std::map<std::size_t, ir::Node>& overrides) {
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
    std::vector<int> outs = out->add_node(node.op, std::move(ins), specs, node.scope);
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

}  // namespace detail
using detail::identity_map;
using detail::rebuild;

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
  // Candidates share the op's type and (already canonical) inputs; the op then decides
  // through is_equivalent, which compares typed parameters and defaults to "different".
  // Effects and stateful ops (variable reads, random draws) are never merged.
  std::map<std::pair<std::type_index, std::vector<int>>, std::vector<std::size_t>> seen;
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    if (node.op->has_effect() || node.op->is_stateful() || node.inputs.empty()) continue;
    std::vector<int> ins;
    for (int v : node.inputs) ins.push_back(replace[static_cast<std::size_t>(v)]);
    auto& candidates = seen[{std::type_index(typeid(*node.op)), std::move(ins)}];
    const ir::Node* first = nullptr;
    for (std::size_t c : candidates)
      if (node.op->is_equivalent(*g.nodes[c].op) && g.nodes[c].outputs.size() == node.outputs.size()) {
        first = &g.nodes[c];
        break;
      }
    if (!first) {
      candidates.push_back(n);
      continue;
    }
    keep[n] = false;
    for (std::size_t i = 0; i < node.outputs.size(); ++i)
      replace[static_cast<std::size_t>(node.outputs[i])] = first->outputs[i];
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
    auto* mm_op = dynamic_cast<const MatMul*>(mm.op.get());
    if (!keep[n] || !mm_op || mm_op->transpose_a() || mm_op->transpose_b()) continue;
    const TensorSpec &x = spec(mm.inputs[0]), &w = spec(mm.inputs[1]);
    if (x.dtype != DType::float32 || x.shape.rank() < 2 || w.shape.rank() != 2) continue;
    std::vector<int> inputs = mm.inputs;
    std::vector<std::size_t> chain{n};  // matmul [-> add] [-> activation]
    int value = mm.outputs[0];
    bool has_bias = false;
    int r = sole_reader(value);
    auto* add_op = r >= 0 ? dynamic_cast<const Binary*>(g.nodes[static_cast<std::size_t>(r)].op.get()) : nullptr;
    if (add_op && add_op->kind() == BinaryKind::add) {
      const ir::Node& add = g.nodes[static_cast<std::size_t>(r)];
      int bias = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
      const TensorSpec& b = spec(bias);
      if (add.inputs[0] != add.inputs[1] && b.dtype == DType::float32 && b.shape.rank() == 1 &&
          b.shape[0] == w.shape[1] && b.shape[0] != kDynamic && spec(add.outputs[0]).shape == spec(value).shape) {
        inputs.push_back(bias);
        has_bias = true;
        chain.push_back(static_cast<std::size_t>(r));
        value = add.outputs[0];
      }
    }
    std::optional<UnaryKind> activation;
    r = sole_reader(value);
    auto* act = r >= 0 ? dynamic_cast<const Unary*>(g.nodes[static_cast<std::size_t>(r)].op.get()) : nullptr;
    if (act && fusible_activation(act->kind())) {
      activation = act->kind();
      chain.push_back(static_cast<std::size_t>(r));
    }
    if (chain.size() == 1) continue;  // a bare matmul: nothing to fuse
    // The fused node takes the place of the chain's last node (its inputs all come earlier).
    std::size_t last = chain.back();
    for (std::size_t k : chain)
      if (k != last) keep[k] = false;
    overrides[last] = ir::Node{make_fused_dense(has_bias, activation), inputs, g.nodes[last].outputs, g.nodes[last].scope};
  }
  return rebuild(g, keep, identity_map(g.values.size()), overrides);
}

std::shared_ptr<ir::Graph> fuse_elementwise(const ir::Graph& g) {
  constexpr std::size_t kMaxRun = 24, kMaxInputs = 16;
  std::vector<std::vector<int>> readers(g.values.size());
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs) readers[static_cast<std::size_t>(v)].push_back(static_cast<int>(n));
  std::vector<bool> is_output(g.values.size(), false);
  for (int v : g.outputs) is_output[static_cast<std::size_t>(v)] = true;
  auto spec = [&](int v) -> const TensorSpec& { return g.values[static_cast<std::size_t>(v)].spec; };
  // A node the fused kernel can run, computing `out` (float, non-scalar shape; dims may be dynamic).
  auto fusible = [&](const ir::Node& node, const TensorSpec& out) {
    bool known = fusible_code(*node.op) >= 0;
    if (!known || node.outputs.size() != 1) return false;
    const TensorSpec& o = spec(node.outputs[0]);
    if (!is_floating(o.dtype) || is_storage_dtype(o.dtype) || o.shape.rank() == 0 || o.dtype != out.dtype ||
        o.shape != out.shape)
      return false;
    for (int v : node.inputs)
      if (spec(v).dtype != o.dtype || (spec(v).shape != o.shape && spec(v).shape.rank() != 0)) return false;
    return true;
  };

  std::vector<bool> keep(g.nodes.size(), true);
  std::map<std::size_t, ir::Node> overrides;
  std::size_t n = 0;
  while (n < g.nodes.size()) {
    const ir::Node& first = g.nodes[n];
    if (first.outputs.size() != 1 || !fusible(first, spec(first.outputs[0]))) { ++n; continue; }
    TensorSpec out = spec(first.outputs[0]);
    // The longest run of consecutive nodes computing this shape, within the register budget.
    std::size_t end = n;
    std::vector<int> inputs;  // values the run reads but does not make, in first-use order
    std::set<int> made;
    std::map<int, int> reg;
    std::vector<FusedInstruction> program;
    while (end < g.nodes.size() && end - n < kMaxRun && fusible(g.nodes[end], out)) {
      const ir::Node& node = g.nodes[end];
      std::vector<int> fresh;
      for (int v : node.inputs)
        if (!made.count(v) && std::find(inputs.begin(), inputs.end(), v) == inputs.end() &&
            std::find(fresh.begin(), fresh.end(), v) == fresh.end())
          fresh.push_back(v);
      if (inputs.size() + fresh.size() > kMaxInputs) break;
      inputs.insert(inputs.end(), fresh.begin(), fresh.end());
      made.insert(node.outputs[0]);
      program.push_back({node.inputs.size() == 2, 0, 0, 0});
      ++end;
    }
    if (end - n < 2) { ++n; continue; }
    // Registers: inputs first, then one per instruction.
    for (std::size_t i = 0; i < inputs.size(); ++i) reg[inputs[i]] = static_cast<int>(i);
    std::vector<int> output_values, output_registers;
    for (std::size_t k = n; k < end; ++k) {
      const ir::Node& node = g.nodes[k];
      FusedInstruction& ins = program[k - n];
      ins.code = fusible_code(*node.op);
      ins.a = reg.at(node.inputs[0]);
      if (ins.binary) ins.b = reg.at(node.inputs[1]);
      int v = node.outputs[0];
      reg[v] = static_cast<int>(inputs.size() + (k - n));
      bool read_later = is_output[static_cast<std::size_t>(v)];
      for (int r : readers[static_cast<std::size_t>(v)]) read_later |= r >= static_cast<int>(end);
      if (read_later) {
        output_values.push_back(v);
        output_registers.push_back(reg[v]);
      }
    }
    for (std::size_t k = n; k + 1 < end; ++k) keep[k] = false;
    if (output_values.empty()) keep[end - 1] = false;
    else
      overrides[end - 1] = ir::Node{make_fused_elementwise(std::move(program), static_cast<int>(inputs.size()),
                                                           std::move(output_registers), out),
                                    inputs, output_values, g.nodes[end - 1].scope};
    n = end;
  }
  return rebuild(g, keep, identity_map(g.values.size()), overrides);
}

namespace {

std::atomic<bool>& verify_flag() {
  static std::atomic<bool> on = [] {
    if (const char* env = std::getenv("EF_VERIFY_IR"); env && *env) return std::string_view(env) != "0";
#ifdef NDEBUG
    return false;
#else
    return true;
#endif
  }();
  return on;
}

}  // namespace

void set_verify_passes(bool on) { verify_flag().store(on); }
bool verify_passes() { return verify_flag().load(std::memory_order_relaxed); }

namespace detail {

std::shared_ptr<ir::Graph> run_passes(const ir::Graph& g, const std::vector<Pass>& passes) {
  bool verify = verify_passes();
  // Sub-graphs (branches, bodies, called graphs) are shared by the passes' results: each is
  // checked once. The intermediate graphs stay alive meanwhile, so that no address in
  // `verified` is reused by a new graph.
  std::set<const ir::Graph*> verified;
  std::vector<std::shared_ptr<ir::Graph>> kept;
  if (verify) ir::verify(g, "before the passes", &verified);  // a broken graph would crash the copy
  std::shared_ptr<ir::Graph> out = rebuild(g, std::vector<bool>(g.nodes.size(), true), identity_map(g.values.size()));
  if (verify) ir::verify(*out, "after pass 'copy'", &verified);
  for (const Pass& pass : passes) {
    std::shared_ptr<ir::Graph> next = pass.run(*out);
    if (!next) continue;
    if (verify) kept.push_back(out);
    out = std::move(next);
    if (verify) ir::verify(*out, "after pass '" + pass.name + "'", &verified);
  }
  return out;
}

}  // namespace detail

std::shared_ptr<ir::Graph> optimize(const ir::Graph& g, const PassOptions& options) {
  std::vector<detail::Pass> pipeline;
  if (options.inline_calls) pipeline.push_back({"inline_calls", inline_calls});
  if (options.common_subexpr) pipeline.push_back({"common_subexpr", eliminate_common_subexpressions});
  if (options.dead_code) pipeline.push_back({"dead_code", eliminate_dead_code});
  if (options.fuse_dense) pipeline.push_back({"fuse_dense", fuse_dense});
  if (options.fuse_conv)
    pipeline.push_back({"fuse_conv", [](const ir::Graph& in) {
                          return detail::has_conv_fusion_candidates(in) ? fuse_conv(in) : nullptr;
                        }});
  if (options.fuse_elementwise) pipeline.push_back({"fuse_elementwise", fuse_elementwise});
  return detail::run_passes(g, pipeline);
}

}  // namespace ef::passes
