// ef::save and ef::load. The graph saved is the traced one (before the passes); loading
// replays its nodes through dispatch inside a fresh trace, which runs every op's shape rule:
// a file cannot make an op compute shapes other than the ones it declares.
#include "eagerflow/saving/saved_model.h"

#include <sys/stat.h>
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "eagerflow/core/error.h"
#include "eagerflow/function/control_flow.h"
#include "eagerflow/function/function.h"
#include "eagerflow/function/scan.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/passes/passes.h"
#include "eagerflow/trace/context.h"
#include "function/control_flow_ops.h"
#include "function/scan_op.h"
#include "core/errno_kind.h"
#include "io/atomic_file.h"
#include "io/json.h"
#include "io/op_codec.h"
#include "ops/primitives.h"
#include "ops/print_op.h"

namespace ef {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "eagerflow-saved-model";
constexpr std::size_t kMaxValues = 10'000'000;

std::string shape_json(const Shape& s) {
  std::string out = "[";
  for (int d = 0; d < s.rank(); ++d) out += (d ? "," : "") + std::to_string(s[d]);  // kDynamic is -1
  return out + "]";
}

std::string spec_json(const TensorSpec& s) {
  return "{\"dtype\":\"" + std::string(name_of(s.dtype)) + "\",\"shape\":" + shape_json(s.shape) + "}";
}

std::string ids_json(const std::vector<int>& ids) {
  std::string out = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  return out + "]";
}

// Variables in the order the graphs first use them, with unique keys.
struct VariableTable {
  std::string strip_prefix;
  std::vector<std::shared_ptr<VariableState>> states;
  std::vector<std::string> keys;
  std::map<const VariableState*, int> index;
  std::set<std::string> used;
  std::map<std::string, int> next_suffix;  // per key: where the search for a free "#n" resumes

  int id(const std::shared_ptr<VariableState>& v) {
    auto it = index.find(v.get());
    if (it != index.end()) return it->second;
    std::string key = !strip_prefix.empty() && v->name.rfind(strip_prefix, 0) == 0 ? v->name.substr(strip_prefix.size()) : v->name;
    if (key.empty()) key = "variable";
    std::string unique = key;
    int& n = next_suffix[key];
    while (used.count(unique) || unique.rfind("constants/", 0) == 0) unique = key + "#" + std::to_string(++n);
    used.insert(unique);
    states.push_back(v);
    keys.push_back(unique);
    return index[v.get()] = static_cast<int>(states.size() - 1);
  }
};

// A cond or loop differentiated inside the function keeps its gradient's values (its variant
// with residuals), which the format does not hold.
std::string cannot_save_differentiated(const std::string& fn, const char* flow) {
  return "function '" + fn + "' differentiates an " + flow + " inside it (a GradientTape around it in the function): " +
         "such a function cannot be saved yet; save the function without the gradient, or save_weights";
}

std::string encode_graph(const ir::Graph& g, const std::string& fn, VariableTable& vars, std::vector<io::NamedTensor>& tensors) {
  std::string out = "{\"values\":[";
  for (std::size_t v = 0; v < g.values.size(); ++v) out += (v ? "," : "") + spec_json(g.values[v].spec);
  out += "],\"inputs\":" + ids_json(g.inputs) + ",\"outputs\":" + ids_json(g.outputs) + ",\"constants\":[";
  bool first = true;
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].kind != ir::ValueKind::constant) continue;
    std::string key = "constants/" + fn + "/" + std::to_string(v);
    tensors.push_back({key, g.constants[static_cast<std::size_t>(g.values[v].index)]});
    out += std::string(first ? "" : ",") + "{\"value\":" + std::to_string(v) + ",\"tensor\":" + io::json_quote(key) + "}";
    first = false;
  }
  out += "],\"nodes\":[";
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    const Primitive& op = *node.op;
    std::string name = op.name();
    out += std::string(n ? "," : "") + "{\"op\":" + io::json_quote(name);
    if (auto* r = dynamic_cast<const ReadVariable*>(&op)) {
      out += ",\"variable\":" + std::to_string(vars.id(r->variable()));
    } else if (auto* a = dynamic_cast<const AssignVariable*>(&op)) {
      out += ",\"variable\":" + std::to_string(vars.id(a->variable()));
    } else if (auto* scan = dynamic_cast<const ScanOp*>(&op)) {
      // ef::scan: its body as a nested graph (calls inlined, as at the top level), with the
      // same variable table and constants named under this node.
      std::shared_ptr<ir::Graph> body = passes::inline_calls(*scan->body().traced);
      out += ",\"scan\":{\"carries\":" + std::to_string(scan->num_carries()) + ",\"xs\":" + std::to_string(scan->num_xs()) +
             ",\"length\":" + std::to_string(scan->length()) + ",\"reverse\":" + (scan->reverse() ? "true" : "false") +
             ",\"body\":" + encode_graph(*body, fn + "/scan" + std::to_string(n), vars, tensors) + "}";
    } else if (auto* c = dynamic_cast<const CondOp*>(&op)) {
      // ef::cond: both branches as nested graphs (calls inlined); loading traces ef::cond again.
      if (c->has_residuals()) fail("save", cannot_save_differentiated(fn, "ef::cond"));
      std::string at = fn + "/cond" + std::to_string(n);
      out += ",\"cond\":{\"then\":" +
             encode_graph(*passes::inline_calls(*c->then_branch().traced), at + "/then", vars, tensors) +
             ",\"else\":" + encode_graph(*passes::inline_calls(*c->else_branch().traced), at + "/else", vars, tensors) +
             "}";
    } else if (auto* w = dynamic_cast<const WhileOp*>(&op)) {
      // ef::while_loop: its condition and body as nested graphs, and the input counts.
      if (w->has_residuals()) fail("save", cannot_save_differentiated(fn, "ef::while_loop"));
      if (w->has_shape_invariants())
        fail(ErrorCode::unimplemented, "save",
             "'" + fn + "' holds an ef::while_loop with shape_invariants, which saved models do not record yet");
      std::string at = fn + "/while" + std::to_string(n);
      out += ",\"while\":{\"vars\":" + std::to_string(w->num_vars()) +
             ",\"cond_captures\":" + std::to_string(w->num_cond_captures()) +
             ",\"maximum_iterations\":" + std::to_string(w->max_iterations()) +
             ",\"cond\":" + encode_graph(*passes::inline_calls(*w->condition().traced), at + "/cond", vars, tensors) +
             ",\"body\":" + encode_graph(*passes::inline_calls(*w->body().traced), at + "/body", vars, tensors) + "}";
    } else if (auto* pieces = print_pieces(op)) {
      out += ",\"pieces\":[";
      for (std::size_t i = 0; i < pieces->size(); ++i)
        out += std::string(i ? "," : "") + ((*pieces)[i].is_tensor ? "null" : io::json_quote((*pieces)[i].text));
      out += "]";
    } else {
      if (!io::can_decode(name))
        fail(ErrorCode::unimplemented, "save",
             "function '" + fn + "' uses op '" + name + "', which the saved-model format cannot hold: if it is " +
                 "your own op, register it with ef::register_op<YourOp>(\"" + name + "\", factory)");
      out += ",\"attrs\":" + io::json_quote(op.attrs());
    }
    out += ",\"inputs\":" + ids_json(node.inputs) + ",\"outputs\":" + ids_json(node.outputs);
    if (!node.scope.empty()) out += ",\"scope\":" + io::json_quote(node.scope);
    out += "}";
  }
  return out + "]}";
}

// ---------------------------------------------------------------- the folder, atomically
// A save writes a new sibling folder and swaps it in whole, so that a reader (or a writer
// killed at any point) sees the old model or the new one, never the JSON of one with the
// variables of the other. Temporary siblings are named by io::detail::temp_name.

constexpr const char* kJsonFile = "saved_model.json";
constexpr const char* kVariablesFile = "variables.safetensors";

std::string os_error(const std::string& what, const fs::path& path) {
  return what + " '" + path.string() + "': " + std::strerror(errno);
}

// `dir` as a folder path without trailing slashes; symbolic links and "." resolved when it
// exists (the folder they lead to is the one replaced). Checks it is a folder, or absent.
fs::path folder_target(const std::string& dir) {
  if (dir.empty()) fail("save", "the folder path is empty");
  std::string trimmed = dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  fs::path target(trimmed);
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0) {
    std::error_code ec;
    fs::path real = fs::canonical(target, ec);
    if (ec) fail(ef::detail::errno_kind(ec.value()), "save", "cannot resolve '" + dir + "': " + ec.message());
    if (::stat(real.c_str(), &st) != 0) fail(ef::detail::errno_kind(errno), "save", os_error("cannot use", real));
    if (!S_ISDIR(st.st_mode))
      fail("save", "'" + dir + "' exists and is not a folder: a saved model is a folder (choose another path)");
    target = real;
  } else if (errno != ENOENT) {
    fail(ef::detail::errno_kind(errno), "save", os_error("cannot use", target));
  }
  if (target.filename().empty() || target.filename() == "." || target.filename() == "..")
    fail("save", "cannot replace the folder '" + dir + "' (save into a folder below it)");
  return target;
}

// What a folder a save replaces may hold: the files of a saved model and their temporaries.
// Anything else is the user's, and a save refuses to delete it with the old model.
void check_replaceable(const fs::path& target, const std::string& dir) {
  DIR* d = ::opendir(target.c_str());
  if (!d) fail(ef::detail::errno_kind(errno), "save", os_error("cannot read the folder", target));
  std::vector<std::string> foreign;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == ".." || n == kJsonFile || n == kVariablesFile) continue;
    if (io::detail::parse_temp_name(n, kJsonFile) || io::detail::parse_temp_name(n, kVariablesFile)) continue;
    foreign.push_back(n);
  }
  ::closedir(d);
  if (!foreign.empty())
    fail("save", "'" + dir + "' holds '" + foreign.front() + "'" +
                     (foreign.size() > 1 ? " and " + std::to_string(foreign.size() - 1) + " more entries" : std::string()) +
                     ", which are not part of a saved model: a save replaces the whole folder, so it refuses to "
                     "(save to a new or empty folder, or remove them)");
}

// The newest folder that a save moved aside ("old") before it was killed, when `target` is
// missing; empty when there is none.
fs::path find_aside(const fs::path& target, bool* writer_gone) {
  fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string name = target.filename().string();
  DIR* d = ::opendir(parent.c_str());
  if (!d) return {};
  fs::path best;
  timespec best_time{};
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') continue;
    auto t = io::detail::parse_temp_name(e->d_name, name);
    if (!t || t->kind != "old") continue;
    fs::path p = parent / e->d_name;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    if (best.empty() || st.st_mtim.tv_sec > best_time.tv_sec ||
        (st.st_mtim.tv_sec == best_time.tv_sec && st.st_mtim.tv_nsec > best_time.tv_nsec)) {
      best = p;
      best_time = st.st_mtim;
      *writer_gone = io::detail::writer_is_gone(*t);
    }
  }
  ::closedir(d);
  return best;
}

// A save killed between its two renames (old aside, new in) leaves no `target` but the old
// model aside: it is renamed back when its writer is gone (restore), or read where it is.
fs::path recover(const fs::path& target, bool restore) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0 || errno != ENOENT) return target;
  bool gone = false;
  fs::path aside = find_aside(target, &gone);
  if (aside.empty()) return target;
  if (restore && gone && ::rename(aside.c_str(), target.c_str()) == 0) {
    io::detail::sync_folder(target.has_parent_path() ? target.parent_path() : fs::path("."));
    return target;
  }
  return aside;
}

template <class Write>
void write_folder_atomically(const std::string& dir, Write&& write) {
  fs::path target = folder_target(dir);
  fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  if (ec) fail("save", "cannot create folder '" + parent.string() + "': " + ec.message());
  recover(target, /*restore=*/true);
  io::detail::remove_orphans(target);  // folders of saves that were killed
  struct stat st {};
  bool exists = ::lstat(target.c_str(), &st) == 0;
  if (exists) check_replaceable(target, dir);

  fs::path staging = parent / io::detail::temp_name(target.filename().string(), "new");
  if (::mkdir(staging.c_str(), 0755) != 0)
    fail(ef::detail::errno_kind(errno), "save", os_error("cannot create a folder beside", target));
  try {
    write(staging);
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  auto give_up = [&](const std::string& message) {
    fs::remove_all(staging, ec);
    fail("save", message + " (the previous saved model, if any, is unchanged)");
  };
  if (!exists) {
    if (::rename(staging.c_str(), target.c_str()) != 0) give_up(os_error("cannot create", target));
    io::detail::sync_folder(parent);
    return;
  }
  // One atomic exchange where the file system has it; the old model then lives at `staging`.
  if (io::detail::rename_exchange_enabled() &&
      ::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    io::detail::sync_folder(parent);
    fs::remove_all(staging, ec);
    return;
  }
  // Else two renames; a kill between them leaves `aside`, which the next save or load restores.
  fs::path aside = parent / io::detail::temp_name(target.filename().string(), "old");
  if (::rename(target.c_str(), aside.c_str()) != 0) give_up(os_error("cannot move aside", target));
  if (::rename(staging.c_str(), target.c_str()) != 0) {
    std::string message = os_error("cannot replace", target);
    ::rename(aside.c_str(), target.c_str());
    give_up(message);
  }
  io::detail::sync_folder(parent);
  fs::remove_all(aside, ec);
}

void write_model(const std::vector<std::pair<std::string, std::shared_ptr<const ConcreteFunction>>>& functions,
                 const std::string& dir, const std::string& strip_prefix) {
  if (functions.empty()) fail("save", "nothing to save: no functions given");
  VariableTable vars;
  vars.strip_prefix = strip_prefix;
  std::vector<io::NamedTensor> tensors;
  std::set<std::string> names;
  std::string fns;
  for (const auto& [name, cf] : functions) {
    if (!cf) fail("save", "function '" + name + "' is null");
    if (name.empty() || !names.insert(name).second) fail("save", "signature names must be unique and non-empty: '" + name + "'");
    for (const ArgSignature& a : cf->signature())
      if (a.kind != ArgSignature::Kind::tensor && a.kind != ArgSignature::Kind::tensor_list &&
          a.kind != ArgSignature::Kind::static_value)
        fail("save", "function '" + name + "' takes an argument of kind other than tensors (" + a.str() + ")");
    // Calls (a loaded model, a function under a tape) are saved as the ops they call: the
    // format holds flat graphs, and a file needs no other function to be loaded first.
    std::shared_ptr<ir::Graph> flat = passes::inline_calls(cf->traced_graph());
    const ir::Graph& g = *flat;
    std::string inputs = "[";
    for (std::size_t i = 0; i < g.inputs.size(); ++i) {
      std::string arg = i < cf->arg_names().size() && cf->signature().size() == g.inputs.size() ? cf->arg_names()[i]
                                                                                             : "input_" + std::to_string(i);
      inputs += std::string(i ? "," : "") + "{\"name\":" + io::json_quote(arg) + ",\"spec\":" +
                spec_json(g.values[static_cast<std::size_t>(g.inputs[i])].spec) + "}";
    }
    inputs += "]";
    std::string graph = encode_graph(g, name, vars, tensors);
    fns += std::string(fns.empty() ? "" : ",") + "{\"name\":" + io::json_quote(name) + ",\"inputs\":" + inputs +
           ",\"graph\":" + graph + "}";
  }
  std::string var_json;
  for (std::size_t i = 0; i < vars.states.size(); ++i) {
    const VariableState& s = *vars.states[i];
    tensors.push_back({vars.keys[i], s.read()});
    var_json += std::string(i ? "," : "") + "{\"key\":" + io::json_quote(vars.keys[i]) + ",\"name\":" + io::json_quote(s.name) +
                ",\"spec\":" + spec_json(s.spec) + ",\"trainable\":" + (s.trainable ? "true" : "false") + "}";
  }
  std::string json = std::string("{\"format\":\"") + kFormat + "\",\"version\":" + std::to_string(kSavedModelVersion) +
                     ",\"variables\":[" + var_json + "],\"functions\":[" + fns + "]}\n";
  std::vector<std::byte> bytes(json.size());
  std::memcpy(bytes.data(), json.data(), json.size());
  write_folder_atomically(dir, [&](const fs::path& folder) {
    io::save_safetensors((folder / kVariablesFile).string(), tensors, {{"format", kFormat}});
    io::write_file_atomically((folder / kJsonFile).string(), bytes);
  });
}

// ---------------------------------------------------------------- loading
DType dtype_named(const std::string& s, const std::string& where) {
  for (DType t : all_dtypes)
    if (name_of(t) == s) return t;
  throw Error(where + ": unknown dtype '" + s + "'");
}

TensorSpec read_spec(const io::Json& j, const std::string& where) {
  const io::Json* d = j.find("dtype");
  const io::Json* s = j.find("shape");
  if (!d || !s) throw Error(where + ": a spec needs dtype and shape");
  std::vector<std::int64_t> dims;
  const auto& arr = s->array(where + " shape");
  if (arr.size() > 64) throw Error(where + ": rank too large");
  for (const auto& x : arr) {
    std::int64_t v = x.integer(where + " shape");
    if (v < 0 && v != kDynamic) throw Error(where + ": bad dimension " + std::to_string(v));
    dims.push_back(v);
  }
  return TensorSpec{dtype_named(d->string(where + " dtype"), where), Shape(std::move(dims)), {}};
}

const io::Json& member(const io::Json& j, const char* key, const std::string& where) {
  const io::Json* m = j.find(key);
  if (!m) throw Error(where + ": missing \"" + key + "\"");
  return *m;
}

struct GraphDesc;

struct NodeDesc {
  enum class Kind { op, read, assign, print, scan, cond, while_loop } kind = Kind::op;
  // ef::scan: its body, and ScanOp's parameters. ef::cond: body and other are the then and
  // else branches. ef::while_loop: body and other are the body and the condition, carries the
  // loop variables, xs the condition's captures, length the maximum iterations (-1: none).
  std::shared_ptr<const GraphDesc> body, other;
  std::size_t carries = 0, xs = 0;
  std::int64_t length = -1;
  bool reverse = false;
  std::shared_ptr<const Primitive> op;
  AssignMode mode = AssignMode::set;
  int variable = -1;
  std::vector<detail::PrintPiece> pieces;
  std::vector<int> inputs, outputs;
};

struct GraphDesc {
  std::string name;
  std::vector<TensorSpec> values;
  std::vector<int> inputs, outputs;
  std::vector<std::pair<int, Tensor>> constants;
  std::vector<NodeDesc> nodes;
};

std::vector<int> read_ids(const io::Json& j, std::size_t limit, const std::string& where) {
  std::vector<int> out;
  for (const auto& x : j.array(where)) {
    std::int64_t v = x.integer(where);
    if (v < 0 || static_cast<std::size_t>(v) >= limit) throw Error(where + ": value id " + std::to_string(v) + " out of range");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

// The file's tensors by name (a scan per name would make loading N variables O(N^2)).
using TensorIndex = std::unordered_map<std::string, const Tensor*>;

const Tensor* find_tensor(const TensorIndex& index, const std::string& key) {
  auto it = index.find(key);
  return it == index.end() ? nullptr : it->second;
}

GraphDesc read_graph(const io::Json& j, const std::string& fn, const TensorIndex& tensors, std::size_t num_variables,
                     int depth = 0) {
  std::string where = "saved function '" + fn + "'";
  if (depth > 64)
    throw Error(ErrorCode::data_loss, where + ": scans, conds or loops nested more than 64 deep (the file is damaged)");
  GraphDesc g;
  g.name = fn;
  const auto& values = member(j, "values", where).array(where + " values");
  if (values.size() > kMaxValues) throw Error(where + ": too many values");
  for (const auto& v : values) g.values.push_back(read_spec(v, where + " value"));
  std::size_t n = g.values.size();
  g.inputs = read_ids(member(j, "inputs", where), n, where + " inputs");
  g.outputs = read_ids(member(j, "outputs", where), n, where + " outputs");
  for (const auto& c : member(j, "constants", where).array(where + " constants")) {
    int id = read_ids(io::Json{std::make_shared<io::Json::Array>(io::Json::Array{member(c, "value", where)})}, n, where + " constant")[0];
    const std::string& key = member(c, "tensor", where).string(where + " constant");
    const Tensor* t = find_tensor(tensors, key);
    if (!t) throw Error(where + ": constant '" + key + "' is missing from variables.safetensors");
    g.constants.emplace_back(id, *t);
  }
  for (const auto& node : member(j, "nodes", where).array(where + " nodes")) {
    NodeDesc d;
    std::string op = member(node, "op", where).string(where + " op");
    std::string at = where + ", op '" + op + "'";
    d.inputs = read_ids(member(node, "inputs", at), n, at + " inputs");
    d.outputs = read_ids(member(node, "outputs", at), n, at + " outputs");
    if (op == "read_variable" || op == "assign" || op == "assign_add" || op == "assign_sub") {
      std::int64_t v = member(node, "variable", at).integer(at + " variable");
      if (v < 0 || static_cast<std::size_t>(v) >= num_variables) throw Error(at + ": variable " + std::to_string(v) + " out of range");
      d.variable = static_cast<int>(v);
      d.kind = op == "read_variable" ? NodeDesc::Kind::read : NodeDesc::Kind::assign;
      d.mode = op == "assign_add" ? AssignMode::add : op == "assign_sub" ? AssignMode::sub : AssignMode::set;
    } else if (op == "scan") {
      d.kind = NodeDesc::Kind::scan;
      const io::Json& sj = member(node, "scan", at);
      auto count = [&](const char* key) {
        std::int64_t v = member(sj, key, at).integer(at + " " + key);
        if (v < 0 || static_cast<std::size_t>(v) > d.inputs.size()) throw Error(at + ": bad " + key + " count " + std::to_string(v));
        return static_cast<std::size_t>(v);
      };
      d.carries = count("carries");
      d.xs = count("xs");
      d.length = member(sj, "length", at).integer(at + " length");
      const io::Json& reverse = member(sj, "reverse", at);
      if (!std::get_if<bool>(&reverse.value)) throw Error(at + ": reverse must be true or false");
      d.reverse = std::get<bool>(reverse.value);
      if (d.carries + d.xs > d.inputs.size() || d.length < -1 || (d.xs == 0 && d.length < 0))
        throw Error(ErrorCode::data_loss, at + ": inconsistent carries/xs/length (the file is damaged)");
      d.body = std::make_shared<const GraphDesc>(
          read_graph(member(sj, "body", at), fn + "/scan" + std::to_string(g.nodes.size()), tensors, num_variables, depth + 1));
      if (d.body->inputs.size() != d.inputs.size() || d.body->outputs.size() != d.outputs.size() ||
          d.body->outputs.size() < d.carries)
        throw Error(ErrorCode::data_loss, at + ": its body's inputs and outputs disagree with the node's (the file is damaged)");
    } else if (op == "cond") {
      d.kind = NodeDesc::Kind::cond;
      const io::Json& cj = member(node, "cond", at);
      std::string sub = fn + "/cond" + std::to_string(g.nodes.size());
      d.body = std::make_shared<const GraphDesc>(
          read_graph(member(cj, "then", at), sub + "/then", tensors, num_variables, depth + 1));
      d.other = std::make_shared<const GraphDesc>(
          read_graph(member(cj, "else", at), sub + "/else", tensors, num_variables, depth + 1));
      for (const GraphDesc* branch : {d.body.get(), d.other.get()})
        if (d.inputs.empty() || branch->inputs.size() + 1 != d.inputs.size() ||
            branch->outputs.size() != d.outputs.size())
          throw Error(ErrorCode::data_loss, at + ": its branches' inputs and outputs disagree with the node's (the file is damaged)");
    } else if (op == "while") {
      d.kind = NodeDesc::Kind::while_loop;
      const io::Json& wj = member(node, "while", at);
      auto count = [&](const char* key) {
        std::int64_t v = member(wj, key, at).integer(at + " " + key);
        if (v < 0 || static_cast<std::size_t>(v) > d.inputs.size())
          throw Error(ErrorCode::data_loss, at + ": bad " + key + " count " + std::to_string(v));
        return static_cast<std::size_t>(v);
      };
      d.carries = count("vars");
      d.xs = count("cond_captures");
      d.length = member(wj, "maximum_iterations", at).integer(at + " maximum_iterations");
      if (d.carries + d.xs > d.inputs.size() || d.length < -1 || d.outputs.size() != d.carries)
        throw Error(ErrorCode::data_loss, at + ": inconsistent vars/cond_captures/maximum_iterations (the file is damaged)");
      std::string sub = fn + "/while" + std::to_string(g.nodes.size());
      d.other = std::make_shared<const GraphDesc>(
          read_graph(member(wj, "cond", at), sub + "/cond", tensors, num_variables, depth + 1));
      d.body = std::make_shared<const GraphDesc>(
          read_graph(member(wj, "body", at), sub + "/body", tensors, num_variables, depth + 1));
      if (d.other->inputs.size() != d.carries + d.xs || d.other->outputs.size() != 1 ||
          d.body->inputs.size() != d.inputs.size() - d.xs || d.body->outputs.size() != d.carries)
        throw Error(ErrorCode::data_loss, at +
                    ": its condition's or body's inputs and outputs disagree with the node's (the file is damaged)");
    } else if (op == "print") {
      d.kind = NodeDesc::Kind::print;
      std::size_t tensors_named = 0;
      for (const auto& p : member(node, "pieces", at).array(at + " pieces")) {
        if (p.is_string()) d.pieces.push_back({p.string(at), false});
        else {
          d.pieces.push_back({{}, true});
          ++tensors_named;
        }
      }
      if (tensors_named != d.inputs.size()) throw Error(at + ": the pieces name " + std::to_string(tensors_named) + " tensors for " +
                                                      std::to_string(d.inputs.size()) + " inputs");
    } else {
      d.op = io::decode_op(op, member(node, "attrs", at).string(at + " attrs"), at);
    }
    g.nodes.push_back(std::move(d));
  }
  return g;
}

// Replays a saved graph through dispatch (inside the trace ef::function makes).
std::vector<Tensor> replay(const GraphDesc& g, const std::vector<Variable>& vars, const std::vector<Tensor>& args) {
  std::string where = "saved function '" + g.name + "'";
  std::vector<Tensor> env(g.values.size());
  if (args.size() != g.inputs.size()) fail(where, "expects " + std::to_string(g.inputs.size()) + " inputs");
  auto set = [&](int id, Tensor t) {
    Tensor& slot = env[static_cast<std::size_t>(id)];
    if (slot.defined()) fail(where, "value " + std::to_string(id) + " is defined twice");
    const TensorSpec& want = g.values[static_cast<std::size_t>(id)];
    if (t.dtype() != want.dtype || !want.shape.accepts(t.shape()) || t.rank() != want.shape.rank())
      fail(where, "value " + std::to_string(id) + " is " + t.spec().str() + " where the file declares " + want.str() +
                      " (the file is damaged)");
    slot = std::move(t);
  };
  for (std::size_t i = 0; i < args.size(); ++i) set(g.inputs[i], args[i]);
  for (const auto& [id, t] : g.constants) set(id, t);
  for (const NodeDesc& node : g.nodes) {
    std::vector<Tensor> in;
    for (int id : node.inputs) {
      if (!env[static_cast<std::size_t>(id)].defined()) fail(where, "value " + std::to_string(id) + " is used before it is made");
      in.push_back(env[static_cast<std::size_t>(id)]);
    }
    std::vector<Tensor> out;
    switch (node.kind) {
      case NodeDesc::Kind::read: out = {vars[static_cast<std::size_t>(node.variable)].value()}; break;
      case NodeDesc::Kind::assign: {
        if (in.size() != 1) fail(where, "an assignment takes one input");
        const Variable& v = vars[static_cast<std::size_t>(node.variable)];
        if (node.mode == AssignMode::set) v.assign(in[0]);
        else if (node.mode == AssignMode::add) v.assign_add(in[0]);
        else v.assign_sub(in[0]);
        break;
      }
      case NodeDesc::Kind::print: detail::print_op(node.pieces, in); break;
      case NodeDesc::Kind::scan: {
        std::vector<Tensor> init(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(node.carries));
        std::vector<Tensor> xs(in.begin() + static_cast<std::ptrdiff_t>(node.carries),
                               in.begin() + static_cast<std::ptrdiff_t>(node.carries + node.xs));
        ScanBody body = [&](const std::vector<Tensor>& carry, const std::vector<Tensor>& x) {
          std::vector<Tensor> args = carry;
          args.insert(args.end(), x.begin(), x.end());
          args.insert(args.end(), in.begin() + static_cast<std::ptrdiff_t>(node.carries + node.xs), in.end());
          std::vector<Tensor> r = replay(*node.body, vars, args);
          return std::pair{std::vector<Tensor>(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(node.carries)),
                           std::vector<Tensor>(r.begin() + static_cast<std::ptrdiff_t>(node.carries), r.end())};
        };
        ScanOptions options{.reverse = node.reverse, .length = node.length >= 0 ? std::optional(node.length) : std::nullopt};
        auto [carry, ys] = scan(body, init, xs, options);
        out = carry;
        out.insert(out.end(), ys.begin(), ys.end());
        break;
      }
      case NodeDesc::Kind::cond: {
        std::vector<Tensor> captures(in.begin() + 1, in.end());
        out = detail::cond_impl(
            in[0], [&] { return replay(*node.body, vars, captures); },
            [&] { return replay(*node.other, vars, captures); });
        break;
      }
      case NodeDesc::Kind::while_loop: {
        auto at = [&](std::size_t k) { return in.begin() + static_cast<std::ptrdiff_t>(k); };
        std::vector<Tensor> init(in.begin(), at(node.carries));
        std::vector<Tensor> cond_captures(at(node.carries), at(node.carries + node.xs)),
            body_captures(at(node.carries + node.xs), in.end());
        auto with = [](std::vector<Tensor> v, const std::vector<Tensor>& captures) {
          v.insert(v.end(), captures.begin(), captures.end());
          return v;
        };
        out = while_loop(
            [&](const std::vector<Tensor>& v) { return replay(*node.other, vars, with(v, cond_captures)).at(0); },
            [&](const std::vector<Tensor>& v) { return replay(*node.body, vars, with(v, body_captures)); }, init,
            node.length >= 0 ? std::optional<std::int64_t>(node.length) : std::nullopt);
        break;
      }
      case NodeDesc::Kind::op: out = dispatch(*node.op, in); break;
    }
    if (out.size() != node.outputs.size())
      fail(where, std::string("op '") + (node.op ? node.op->name() : "variable/print") + "' makes " +
                      std::to_string(out.size()) + " outputs where the file lists " + std::to_string(node.outputs.size()));
    for (std::size_t i = 0; i < out.size(); ++i) set(node.outputs[i], out[i]);
  }
  std::vector<Tensor> results;
  for (int id : g.outputs) {
    if (!env[static_cast<std::size_t>(id)].defined()) fail(where, "output value " + std::to_string(id) + " is never made");
    results.push_back(env[static_cast<std::size_t>(id)]);
  }
  return results;
}

}  // namespace

std::shared_ptr<const ConcreteFunction> inference_function(nn::Layer& layer, std::optional<TensorSpec> input_spec) {
  std::optional<TensorSpec> spec = input_spec ? input_spec : layer.save_spec();
  if (!spec)
    fail(ErrorCode::failed_precondition, layer.name(),
         "has no remembered input spec: call it once with one input (or pass an input spec; layers "
         "with several inputs save and export as concrete functions)");
  nn::Layer* target = &layer;
  FunctionOptions options;
  options.name = "serving_default";
  options.arg_names = {"inputs"};
  auto f = function([target](const Tensor& x) { return (*target)(x, false); }, options);
  return f.get_concrete_function(*spec);
}

void save(nn::Layer& layer, const std::string& dir, std::optional<TensorSpec> input_spec) {
  write_model({{"serving_default", inference_function(layer, input_spec)}}, dir, layer.name() + "/");
}

void save(const std::vector<std::pair<std::string, std::shared_ptr<const ConcreteFunction>>>& functions,
          const std::string& dir) {
  write_model(functions, dir, "");
}

SavedModel load(const std::string& dir) {
  if (dir.empty()) fail("load", "the folder path is empty");
  fs::path root = recover(fs::path(dir), /*restore=*/true);
  std::string what = "'" + (root / "saved_model.json").string() + "'";
  std::vector<std::byte> bytes = io::read_file((root / "saved_model.json").string(), std::size_t{1} << 28);
  io::Json j = io::parse_json(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), what);
  const io::Json* format = j.find("format");
  if (!format || !format->is_string() || format->string(what) != kFormat) throw Error(what + " is not an eagerflow saved model");
  std::int64_t version = member(j, "version", what).integer(what + " version");
  if (version > kSavedModelVersion)
    throw Error(ErrorCode::unimplemented, what + " has format version " + std::to_string(version) +
                                              "; this eagerflow reads up to version " +
                                              std::to_string(kSavedModelVersion) + " (saved by a newer eagerflow)");
  if (version < 1) throw Error(what + ": bad version " + std::to_string(version));
  io::TensorFile tensors = io::load_safetensors((root / "variables.safetensors").string());
  TensorIndex index;
  for (const auto& t : tensors.tensors) index.emplace(t.name, &t.value);

  SavedModel model;
  std::vector<Variable> vars;
  {
    trace::EagerScope eager;
    for (const auto& v : member(j, "variables", what).array(what + " variables")) {
      std::string key = member(v, "key", what).string(what + " variable key");
      TensorSpec spec = read_spec(member(v, "spec", what), what + " variable '" + key + "'");
      const Tensor* value = find_tensor(index, key);
      if (!value) throw Error(what + ": variable '" + key + "' is missing from variables.safetensors");
      if (value->spec() != spec)
        throw Error(what + ": variable '" + key + "' is " + value->spec().str() + " in variables.safetensors but " +
                    spec.str() + " in saved_model.json");
      const io::Json* trainable = v.find("trainable");
      Variable var(value->clone(), member(v, "name", what).string(what + " variable name"),
                   !trainable || std::get_if<bool>(&trainable->value) == nullptr || std::get<bool>(trainable->value));
      if (model.variables_.count(key)) throw Error(what + ": variable key '" + key + "' appears twice");
      model.variables_.emplace(key, var);
      vars.push_back(var);
    }
  }
  for (const auto& f : member(j, "functions", what).array(what + " functions")) {
    std::string name = member(f, "name", what).string(what + " function name");
    if (model.functions_.count(name)) throw Error(what + ": function '" + name + "' appears twice");
    SavedModel::Signature sig;
    for (const auto& in : member(f, "inputs", what).array(what + " inputs")) {
      sig.input_names.push_back(member(in, "name", what).string(what + " input name"));
      sig.inputs.push_back(read_spec(member(in, "spec", what), what + " input"));
    }
    auto graph = std::make_shared<GraphDesc>(read_graph(member(f, "graph", what), name, index, vars.size()));
    if (graph->inputs.size() != sig.inputs.size()) throw Error(what + ": function '" + name + "' lists inputs that its graph lacks");
    for (std::size_t i = 0; i < sig.inputs.size(); ++i)
      if (graph->values[static_cast<std::size_t>(graph->inputs[i])] != sig.inputs[i])
        throw Error(what + ": function '" + name + "' input " + std::to_string(i) + " disagrees with its graph");
    FunctionOptions options;
    options.name = name;
    options.input_signature = InputSignature{ArgSpec(sig.inputs)};
    auto fn = function([graph, vars](const std::vector<Tensor>& args) { return replay(*graph, vars, args); }, options);
    auto cf = fn.get_concrete_function(sig.inputs);  // traces now: a damaged graph fails here
    for (int id : graph->outputs) sig.outputs.push_back(graph->values[static_cast<std::size_t>(id)]);
    model.functions_.emplace(name, SavedModel::Entry{std::move(sig), cf});
  }
  return model;
}

std::vector<std::string> SavedModel::signature_names() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : functions_) out.push_back(k);
  return out;
}

const SavedModel::Signature& SavedModel::signature(const std::string& name) const {
  auto it = functions_.find(name);
  if (it == functions_.end()) {
    std::string known;
    for (const auto& [k, v] : functions_) known += (known.empty() ? "" : ", ") + k;
    fail("SavedModel", "no signature '" + name + "' (it has: " + known + ")");
  }
  return it->second.signature;
}

std::shared_ptr<const ConcreteFunction> SavedModel::concrete_function(const std::string& name) const {
  signature(name);
  return functions_.at(name).function;
}

std::vector<Tensor> SavedModel::operator()(const std::string& name, const std::vector<Tensor>& inputs) const {
  const Signature& sig = signature(name);
  if (inputs.size() != sig.inputs.size())
    fail("SavedModel", "'" + name + "' takes " + std::to_string(sig.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  return functions_.at(name).function->call_flat(inputs);
}

}  // namespace ef
