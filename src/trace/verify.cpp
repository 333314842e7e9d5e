#include "trace/verify.h"

#include <algorithm>
#include <set>
#include <vector>

namespace ef::ir {
namespace {

// A graph waiting to be checked, and how the message names it ("graph 'f', node 2 (cond),
// then branch (optimized): graph 'f'").
struct Pending {
  const Graph* graph;
  std::string where;
};

// Same dtype and rank, and equal dims where both are known.
bool agree(const TensorSpec& recorded, const TensorSpec& inferred) {
  if (recorded.dtype != inferred.dtype || recorded.shape.rank() != inferred.shape.rank()) return false;
  for (int d = 0; d < recorded.shape.rank(); ++d)
    if (recorded.shape[d] != inferred.shape[d] && recorded.shape[d] != kDynamic && inferred.shape[d] != kDynamic)
      return false;
  return true;
}

class Checker {
 public:
  Checker(const Graph& g, std::string where, const std::string& when, std::vector<Pending>& pending)
      : g_(g), where_(std::move(where)), when_(when), pending_(pending), defined_(g.values.size(), false) {}

  void run() {
    check_values();
    check_inputs();
    // A placeholder graph for the symbolic stand-ins infer() gets: their value ids are this
    // graph's, and no op reads the graph they point to.
    auto placeholder = std::make_shared<Graph>();
    for (std::size_t n = 0; n < g_.nodes.size(); ++n) check_node(n, placeholder);
    for (std::size_t i = 0; i < g_.outputs.size(); ++i) {
      int v = g_.outputs[i];
      if (!exists(v))
        broken("",
               "output " + std::to_string(i) + " is value " + std::to_string(v) + ", which does not exist" + count());
    }
  }

 private:
  [[noreturn]] void broken(const std::string& node, const std::string& what) const {
    throw Error("[verify] " + when_ + ": " + where_ + (node.empty() ? "" : ", " + node) + ": " + what);
  }
  std::string node_name(std::size_t n) const {
    const Node& node = g_.nodes[n];
    std::string s = "node " + std::to_string(n) + " (" + (node.op ? node.op->name() : "no op") + ")";
    if (!node.scope.empty()) s += " in layer " + node.scope;
    return s;
  }
  std::string count() const { return " (the graph has " + std::to_string(g_.values.size()) + " values)"; }
  bool exists(int v) const { return v >= 0 && static_cast<std::size_t>(v) < g_.values.size(); }
  const Value& value(int v) const { return g_.values[static_cast<std::size_t>(v)]; }

  void check_values() {
    for (std::size_t v = 0; v < g_.values.size(); ++v) {
      const Value& val = g_.values[v];
      std::string name = "value " + std::to_string(v);
      auto index = static_cast<std::size_t>(val.index);
      switch (val.kind) {
        case ValueKind::input:
          if (val.index < 0 || index >= g_.inputs.size() || g_.inputs[index] != static_cast<int>(v))
            broken("",
                   name + " says it is input " + std::to_string(val.index) + ", but it is not that input of the graph");
          defined_[v] = true;
          break;
        case ValueKind::constant: {
          if (val.index < 0 || index >= g_.constants.size())
            broken("", name + " says it is constant " + std::to_string(val.index) + " of " +
                           std::to_string(g_.constants.size()));
          const Tensor& c = g_.constants[index];
          if (!c.defined() || c.is_symbolic())
            broken("", name + ": constant " + std::to_string(val.index) + " is " +
                           (c.defined() ? "symbolic" : "undefined"));
          if (!(c.spec() == val.spec))
            broken("", name + " is typed " + val.spec.str() + " but its constant is " + c.spec().str());
          defined_[v] = true;
          break;
        }
        case ValueKind::node_output: {
          bool listed = val.index >= 0 && index < g_.nodes.size();
          if (listed) {
            const auto& outs = g_.nodes[index].outputs;
            listed = std::find(outs.begin(), outs.end(), static_cast<int>(v)) != outs.end();
          }
          if (!listed)
            broken("",
                   name + " says it is an output of node " + std::to_string(val.index) + ", which does not list it");
          break;
        }
        default: broken("", name + " has an unknown kind " + std::to_string(static_cast<int>(val.kind)));
      }
    }
  }

  void check_inputs() {
    for (std::size_t i = 0; i < g_.inputs.size(); ++i) {
      int v = g_.inputs[i];
      if (!exists(v))
        broken("",
               "input " + std::to_string(i) + " is value " + std::to_string(v) + ", which does not exist" + count());
      if (value(v).kind != ValueKind::input || value(v).index != static_cast<int>(i))
        broken("",
               "input " + std::to_string(i) + " is value " + std::to_string(v) + ", which is not marked as that input");
    }
  }

  void check_node(std::size_t n, const std::shared_ptr<Graph>& placeholder) {
    const Node& node = g_.nodes[n];
    std::string name = node_name(n);
    if (!node.op) broken(name, "the node has no op");
    std::vector<Tensor> args;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      int v = node.inputs[i];
      std::string which = "input " + std::to_string(i) + " (value " + std::to_string(v) + ")";
      if (!exists(v)) broken(name, which + " does not exist" + count());
      if (!defined_[static_cast<std::size_t>(v)])
        broken(name, which + " is used before it is defined (by node " + std::to_string(value(v).index) + ")");
      const Value& in = value(v);
      args.push_back(in.kind == ValueKind::constant ? g_.constants[static_cast<std::size_t>(in.index)]
                                                    : Tensor::symbolic(in.spec.dtype, in.spec.shape, placeholder, v));
    }
    for (std::size_t i = 0; i < node.outputs.size(); ++i) {
      int v = node.outputs[i];
      std::string which = "output " + std::to_string(i) + " (value " + std::to_string(v) + ")";
      if (!exists(v)) broken(name, which + " does not exist" + count());
      if (value(v).kind != ValueKind::node_output || value(v).index != static_cast<int>(n))
        broken(name, which + " is not marked as made by this node");
      if (defined_[static_cast<std::size_t>(v)]) broken(name, which + " is defined twice");
      defined_[static_cast<std::size_t>(v)] = true;
    }
    std::vector<TensorSpec> inferred;
    try {
      inferred = node.op->infer(args);
    } catch (const std::exception& e) {
      broken(name, std::string("its shape rule (infer) rejects its inputs: ") + e.what());
    }
    std::string recorded_str, inferred_str;
    for (int v : node.outputs) recorded_str += (recorded_str.empty() ? "" : ", ") + value(v).spec.str();
    for (const auto& s : inferred) inferred_str += (inferred_str.empty() ? "" : ", ") + s.str();
    bool ok = inferred.size() == node.outputs.size();
    for (std::size_t i = 0; ok && i < inferred.size(); ++i) ok = agree(value(node.outputs[i]).spec, inferred[i]);
    if (!ok)
      broken(name, "its outputs are typed (" + recorded_str + ") but its shape rule (infer) gives (" + inferred_str +
                       ") for its inputs (" + describe(args) + ")");
    for (const SubGraphRef& sub : node.op->subgraphs())
      if (sub.graph)
        pending_.push_back({sub.graph, where_ + ", " + name + ", " + sub.role + ": graph '" + sub.graph->name + "'"});
  }

  const Graph& g_;
  std::string where_;
  const std::string& when_;
  std::vector<Pending>& pending_;
  std::vector<bool> defined_;
};

}  // namespace

void verify(const Graph& g, const std::string& when, std::set<const Graph*>* verified) {
  // A work list rather than recursion: conds nest as deep as a program makes them, and a
  // graph shared by several nodes (a branch as traced and inside its optimized form) is
  // checked once.
  std::set<const Graph*> local;
  std::set<const Graph*>& seen = verified ? *verified : local;
  std::vector<Pending> pending;
  seen.insert(&g);
  Checker(g, "graph '" + g.name + "'", when, pending).run();
  while (!pending.empty()) {
    Pending p = std::move(pending.back());
    pending.pop_back();
    if (!seen.insert(p.graph).second) continue;
    Checker(*p.graph, std::move(p.where), when, pending).run();
  }
}

}  // namespace ef::ir
