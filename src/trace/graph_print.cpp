// Printing graphs: a jaxpr-like text form for people and golden tests, and Graphviz DOT.
#include <charconv>
#include <map>
#include <set>
#include <sstream>

#include "eagerflow/trace/graph.h"
#include "eagerflow/variable.h"
#include "ops/optimizer_update_op.h"
#include "ops/primitives.h"

namespace ef::ir {
namespace {

std::string type_of(const TensorSpec& s) {
  std::string t = std::string(short_name_of(s.dtype)) + "[";
  for (int i = 0; i < s.shape.rank(); ++i) t += (i ? "," : "") + (s.shape[i] < 0 ? std::string("?") : std::to_string(s.shape[i]));
  return t + "]";
}

// a, b, ..., z, ba, bb, ...: JAX's stable value names.
std::string letters(std::size_t i) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + i % 26));
    i /= 26;
  } while (i > 0);
  return s;
}

std::string literal(const Tensor& t) {
  return dispatch_storage_dtype(t.dtype(), [&](auto tag) -> std::string {
    using T = decltype(tag);
    auto v = t.data<T>()[0];
    if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) return literal(Tensor(scalar<float>(v)));
    else if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
    else if constexpr (std::is_floating_point_v<T>) {
      // The shortest text that reads back to the same value (0.1000001f stays 0.1000001).
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
      std::string s(buf, end);
      if (s.find_first_of(".eEna") == std::string::npos) s += ".0";
      return s;
    } else return std::to_string(v);
  });
}

const VariableState* read_of(const Node& n) {
  auto* r = dynamic_cast<const ReadVariable*>(n.op.get());
  return r ? r->variable().get() : nullptr;
}

struct Names {
  std::vector<std::string> name;  // per value
  std::vector<bool> hidden_node;  // read_variable nodes shown as the variable's name
  std::vector<int> constvars;     // non-scalar constants, named like values
};

Names name_values(const Graph& g) {
  Names n;
  n.name.resize(g.values.size());
  n.hidden_node.assign(g.nodes.size(), false);
  std::size_t next = 0;
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ValueKind::constant) {
      const Tensor& c = g.constants[static_cast<std::size_t>(g.values[v].index)];
      if (c.num_elements() == 1 && c.rank() == 0) n.name[v] = literal(c) + ":" + type_of(c.spec());
      else { n.name[v] = letters(next++); n.constvars.push_back(static_cast<int>(v)); }
    }
  for (int v : g.inputs) n.name[static_cast<std::size_t>(v)] = letters(next++);
  std::set<const VariableState*> assigned;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& node = g.nodes[i];
    if (const VariableState* var = read_of(node); var && !assigned.count(var)) {
      n.hidden_node[i] = true;
      n.name[static_cast<std::size_t>(node.outputs[0])] = var->name;
      continue;
    }
    for (const VariableState* var : variables_written(*node.op)) assigned.insert(var);  // assignments, fused updates
    for (int o : node.outputs) n.name[static_cast<std::size_t>(o)] = letters(next++);
  }
  return n;
}

// Text inside a DOT "..." string: quotes and backslashes escaped, newlines as \n.
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

}  // namespace

std::string to_text(const Graph& g) {
  Names n = name_values(g);
  std::ostringstream os;
  auto decl = [&](int v) { return n.name[static_cast<std::size_t>(v)] + ":" + type_of(g.values[static_cast<std::size_t>(v)].spec); };
  os << "{ lambda ";
  for (int v : n.constvars) os << decl(v) << " ";
  os << "; ";
  for (std::size_t i = 0; i < g.inputs.size(); ++i) os << (i ? " " : "") << decl(g.inputs[i]);
  os << ". let\n";
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (n.hidden_node[i]) continue;
    const Node& node = g.nodes[i];
    os << "    ";
    for (std::size_t o = 0; o < node.outputs.size(); ++o) os << (o ? " " : "") << decl(node.outputs[o]);
    if (!node.outputs.empty()) os << " = ";
    os << node.op->name();
    std::string attrs = node.op->attrs();
    if (!attrs.empty()) os << "[" << attrs << "]";
    for (int v : node.inputs) os << " " << n.name[static_cast<std::size_t>(v)];
    os << "\n";
  }
  os << "  in (";
  for (std::size_t i = 0; i < g.outputs.size(); ++i) os << (i ? ", " : "") << n.name[static_cast<std::size_t>(g.outputs[i])];
  if (g.outputs.size() == 1) os << ",";
  os << ") }";
  return os.str();
}

std::string to_dot(const Graph& g) {
  Names n = name_values(g);
  std::ostringstream os;
  os << "digraph \"" << dot_escape(g.name) << "\" {\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n";
  // Values without a visible producing node (inputs, constants, variables) are boxes.
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    const Value& val = g.values[v];
    bool source = val.kind != ValueKind::node_output || n.hidden_node[static_cast<std::size_t>(val.index)];
    if (source)
      os << "  v" << v << " [shape=box, label=\"" << dot_escape(n.name[v]) << "\\n" << type_of(val.spec) << "\"];\n";
  }
  auto source_of = [&](int v) {
    const Value& val = g.values[static_cast<std::size_t>(v)];
    if (val.kind == ValueKind::node_output && !n.hidden_node[static_cast<std::size_t>(val.index)]) return "n" + std::to_string(val.index);
    return "v" + std::to_string(v);
  };
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    if (n.hidden_node[i]) continue;
    const Node& node = g.nodes[i];
    std::string attrs = node.op->attrs();
    os << "  n" << i << " [shape=ellipse, label=\"" << dot_escape(node.op->name())
       << (attrs.empty() ? "" : "\\n" + dot_escape(attrs)) << "\"];\n";
    for (int v : node.inputs)
      os << "  " << source_of(v) << " -> n" << i << " [label=\"" << type_of(g.values[static_cast<std::size_t>(v)].spec) << "\"];\n";
  }
  for (std::size_t i = 0; i < g.outputs.size(); ++i) {
    os << "  out" << i << " [shape=doublecircle, label=\"out " << i << "\"];\n";
    os << "  " << source_of(g.outputs[i]) << " -> out" << i << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace ef::ir
