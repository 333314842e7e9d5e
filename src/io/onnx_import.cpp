// ONNX ModelProto -> a checked Program (src/io/onnx_import_program.h) -> an ef::function whose
// body interprets the program with ef ops. Everything read from the file is checked here
// (sizes, dims, names, attribute types, the graph's order), so the interpreter sees only
// well-formed programs; op-specific checks happen as the first trace runs, at load time.
#include "eagerflow/saving/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <unordered_map>

#include "eagerflow/core/error.h"
#include "eagerflow/function/function.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/trace/context.h"
#include "io/onnx_import_program.h"

namespace ef::onnx {
namespace detail {
namespace {

namespace pb = ::onnx;

constexpr std::int64_t kMaxElements = std::int64_t{1} << 31;
constexpr std::size_t kMaxNodes = 1'000'000;

[[noreturn]] void damaged(const std::string& what, const std::string& message) {
  throw Error(ErrorCode::invalid_argument, "[onnx] " + what + ": " + message);
}

std::size_t element_size(DType t) { return size_of(t); }

// Checked dims: each >= 0, the element count bounded.
Shape read_dims(const google::protobuf::RepeatedField<std::int64_t>& dims, const std::string& where) {
  if (dims.size() > 32) damaged(where, "rank " + std::to_string(dims.size()) + " is beyond what eagerflow handles (32)");
  std::vector<std::int64_t> out;
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0) damaged(where, "negative dim " + std::to_string(d));
    if (d > 0 && n > kMaxElements / d) damaged(where, "more than 2^31 elements");
    n *= d;
    out.push_back(d);
  }
  return Shape(out);
}

template <class T, class Field>
Tensor typed(const Field& field, const Shape& shape, std::int64_t n, const std::string& where) {
  if (static_cast<std::int64_t>(field.size()) != n)
    damaged(where, "holds " + std::to_string(field.size()) + " values for " + std::to_string(n) + " elements");
  std::vector<T> v;
  v.reserve(static_cast<std::size_t>(n));
  for (auto x : field) v.push_back(static_cast<T>(x));
  return tensor(v, shape);
}

}  // namespace

DType dtype_from_code(std::int64_t code, const std::string& where) {
  switch (code) {
    case pb::TensorProto_DataType_FLOAT: return DType::float32;
    case pb::TensorProto_DataType_DOUBLE: return DType::float64;
    case pb::TensorProto_DataType_INT64: return DType::int64;
    case pb::TensorProto_DataType_INT32: return DType::int32;
    case pb::TensorProto_DataType_BOOL: return DType::bool_;
    case pb::TensorProto_DataType_UINT8: return DType::uint8;
    case pb::TensorProto_DataType_INT8: return DType::int8;
    default: break;
  }
  throw Error(ErrorCode::unimplemented, "[onnx] " + where + ": tensor data type " + std::to_string(code) +
                                            " is not supported (float, double, int64, int32, int8, uint8 and bool are)");
}

namespace {

Tensor read_tensor(const pb::TensorProto& t, const std::string& where) {
  if (t.data_location() == pb::TensorProto_DataLocation_EXTERNAL || t.external_data_size() > 0)
    throw Error(ErrorCode::unimplemented,
                "[onnx] " + where + ": the tensor's data is stored in an external file, which the importer does "
                                    "not read (save the model with its data inside, e.g. onnx.save_model(m, path, "
                                    "save_as_external_data=False))");
  if (t.has_segment()) damaged(where, "segmented tensors are not supported");
  DType dtype = dtype_from_code(t.data_type(), where);
  Shape shape = read_dims(t.dims(), where);
  std::int64_t n = shape.num_elements();
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    std::size_t want = static_cast<std::size_t>(n) * element_size(dtype);
    if (raw.size() != want)
      damaged(where, "raw_data holds " + std::to_string(raw.size()) + " bytes where " + shape.str() + " " +
                         std::string(name_of(dtype)) + " needs " + std::to_string(want));
    Tensor out = Tensor::empty(dtype, shape);
    if (want) std::memcpy(out.raw_mutable_data(), raw.data(), want);  // ONNX's raw data is little-endian, as we are
    if (dtype == DType::bool_)
      for (auto& b : out.mutable_data<bool>()) b = reinterpret_cast<const unsigned char&>(b) != 0;
    return out;
  }
  switch (dtype) {
    case DType::float32: return typed<float>(t.float_data(), shape, n, where);
    case DType::float64: return typed<double>(t.double_data(), shape, n, where);
    case DType::int64: return typed<std::int64_t>(t.int64_data(), shape, n, where);
    case DType::int32: return typed<std::int32_t>(t.int32_data(), shape, n, where);
    case DType::int8: return typed<std::int8_t>(t.int32_data(), shape, n, where);
    case DType::uint8: return typed<std::uint8_t>(t.int32_data(), shape, n, where);
    case DType::bool_: {
      if (static_cast<std::int64_t>(t.int32_data_size()) != n) damaged(where, "holds the wrong number of values");
      std::vector<bool> v;
      for (auto x : t.int32_data()) v.push_back(x != 0);
      Tensor out = Tensor::empty(DType::bool_, shape);
      auto d = out.mutable_data<bool>();
      for (std::size_t i = 0; i < v.size(); ++i) d[i] = v[i];
      return out;
    }
    default: break;
  }
  damaged(where, "unsupported data");
}

Attr read_attr(const pb::AttributeProto& a, const std::string& where) {
  Attr out;
  std::string at = where + " attribute '" + a.name() + "'";
  if (!a.ref_attr_name().empty()) throw Error(ErrorCode::unimplemented, "[onnx] " + at + ": attribute references (functions) are not supported");
  switch (a.type()) {
    case pb::AttributeProto_AttributeType_FLOAT: out.type = Attr::Type::f; out.f = a.f(); break;
    case pb::AttributeProto_AttributeType_INT: out.type = Attr::Type::i; out.i = a.i(); break;
    case pb::AttributeProto_AttributeType_STRING: out.type = Attr::Type::s; out.s = a.s(); break;
    case pb::AttributeProto_AttributeType_TENSOR: out.type = Attr::Type::t; out.t = read_tensor(a.t(), at); break;
    case pb::AttributeProto_AttributeType_FLOATS: out.type = Attr::Type::floats; out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case pb::AttributeProto_AttributeType_INTS: out.type = Attr::Type::ints; out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case pb::AttributeProto_AttributeType_STRINGS: out.type = Attr::Type::strings; out.strings.assign(a.strings().begin(), a.strings().end()); break;
    default: out.type = Attr::Type::other; break;  // graphs, sparse tensors, type protos: no supported op takes them
  }
  return out;
}

// A graph input's spec: elem_type and dims; dim_param or absent dims are dynamic.
TensorSpec read_input_spec(const pb::ValueInfoProto& vi, const std::string& where) {
  if (!vi.has_type() || !vi.type().has_tensor_type()) damaged(where, "is not a tensor");
  const auto& tt = vi.type().tensor_type();
  DType dtype = dtype_from_code(tt.elem_type(), where);
  if (!tt.has_shape()) damaged(where, "has no shape (its rank must be known)");
  std::vector<std::int64_t> dims;
  if (tt.shape().dim_size() > 32) damaged(where, "rank above 32");
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0 || d.dim_value() > kMaxElements) damaged(where, "bad dim " + std::to_string(d.dim_value()));
      dims.push_back(d.dim_value());
    } else {
      dims.push_back(kDynamic);
    }
  }
  return TensorSpec{dtype, Shape(dims), {}};
}

std::shared_ptr<Program> read_program(const pb::ModelProto& model, const std::string& what, std::vector<Variable>& vars) {
  auto p = std::make_shared<Program>();
  p->what = what;
  int opset = -1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(std::min<std::int64_t>(o.version(), 1 << 20));
  }
  if (opset < 0) {
    if (model.opset_import_size() == 0 && model.ir_version() > 0 && model.ir_version() < 3) opset = 1;
    else damaged(what, "imports no opset of the default ONNX domain");
  }
  if (opset < kMinImportOpset || opset > kMaxImportOpset)
    throw Error(ErrorCode::unimplemented, "[onnx] " + what + ": opset " + std::to_string(opset) + " of the default domain; the importer reads opsets " +
                                              std::to_string(kMinImportOpset) + " to " + std::to_string(kMaxImportOpset) +
                                              " (convert the model, e.g. onnx.version_converter)");
  p->opset = opset;
  if (!model.has_graph()) damaged(what, "has no graph");
  const pb::GraphProto& g = model.graph();
  if (static_cast<std::size_t>(g.node_size()) > kMaxNodes) damaged(what, "more than a million nodes");
  if (g.sparse_initializer_size() > 0) throw Error(ErrorCode::unimplemented, "[onnx] " + what + ": sparse initializers are not supported");

  std::unordered_map<std::string, int> ids;
  auto define = [&](const std::string& name, const std::string& where) {
    if (name.empty()) damaged(what, where + " has an empty name");
    if (ids.count(name)) damaged(what, "value '" + name + "' is defined twice (" + where + ")");
    int id = static_cast<int>(p->value_names.size());
    p->value_names.push_back(name);
    ids.emplace(name, id);
    return id;
  };

  {
    trace::EagerScope eager;  // initializers are concrete values, even when loaded inside a trace
    std::set<std::string> initializer_names;
    for (const auto& t : g.initializer()) initializer_names.insert(t.name());
    // Floating initializers that ops read as parameters (Resize's roi and scales) stay
    // constants: their values are needed when the graph is traced, and they are not weights.
    std::set<std::string> parameters;
    for (const auto& n : g.node())
      if (n.op_type() == "Resize")
        for (int i = 1; i < n.input_size() && i < 3; ++i) parameters.insert(n.input(i));
    for (const auto& t : g.initializer()) {
      std::string where = "initializer '" + t.name() + "'";
      Tensor value = read_tensor(t, what + " " + where);
      int id = define(t.name(), where);
      if (is_floating(value.dtype()) && value.rank() >= 1 && !parameters.count(t.name())) {
        p->variables.emplace_back(id, static_cast<int>(vars.size()));
        vars.emplace_back(value, t.name(), true);
      } else {
        p->constants.emplace_back(id, value);
      }
    }
    for (const auto& in : g.input()) {
      if (initializer_names.count(in.name())) continue;  // an input with a default: the initializer (old exporters list weights as inputs)
      std::string where = what + " input '" + in.name() + "'";
      TensorSpec spec = read_input_spec(in, where);
      p->inputs.push_back(define(in.name(), "graph input"));
      p->input_names.push_back(in.name());
      p->input_specs.push_back(spec);
    }
  }

  // Nodes, ordered so that every input is made before it is read (ONNX requires a sorted
  // graph; exporters comply, but a damaged file cannot make the interpreter read a value
  // before it exists, and a cycle is an error).
  std::vector<const pb::NodeProto*> pending;
  for (const auto& n : g.node()) pending.push_back(&n);
  std::unordered_map<std::string, std::size_t> producer;
  for (std::size_t k = 0; k < pending.size(); ++k)
    for (const auto& o : pending[k]->output()) {
      if (o.empty()) continue;
      if (ids.count(o) || !producer.emplace(o, k).second)
        damaged(what, "value '" + o + "' is defined twice (node '" + pending[k]->name() + "')");
    }
  std::vector<int> state(pending.size(), 0);  // 0 unvisited, 1 on the stack, 2 done
  std::vector<std::size_t> order;
  for (std::size_t root = 0; root < pending.size(); ++root) {
    if (state[root]) continue;
    std::vector<std::pair<std::size_t, int>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto& [k, next] = stack.back();
      const pb::NodeProto& n = *pending[k];
      if (next < n.input_size()) {
        const std::string& in = n.input(next++);
        if (in.empty() || ids.count(in)) continue;
        auto it = producer.find(in);
        if (it == producer.end())
          damaged(what, "node '" + n.name() + "' (" + n.op_type() + ") reads '" + in + "', which no node, input or initializer makes");
        if (state[it->second] == 1) damaged(what, "the graph has a cycle through node '" + n.name() + "' (" + n.op_type() + ")");
        if (state[it->second] == 0) {
          state[it->second] = 1;
          stack.emplace_back(it->second, 0);
        }
        continue;
      }
      state[k] = 2;
      order.push_back(k);
      stack.pop_back();
    }
  }

  std::map<std::string, std::vector<std::string>> unsupported;  // op -> node names
  const auto& table = op_table();
  for (std::size_t k : order) {
    const pb::NodeProto& n = *pending[k];
    Node node;
    node.op = n.op_type();
    node.name = n.name().empty() ? "<unnamed " + n.op_type() + ">" : n.name();
    std::string where = what + " node '" + node.name + "' (" + node.op + ")";
    bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    if (!default_domain || !table.count(node.op)) {
      unsupported[(default_domain ? "" : n.domain() + "::") + node.op].push_back(node.name);
      continue;
    }
    bool reads_skipped = false;
    for (const auto& in : n.input()) {
      auto it = in.empty() ? ids.end() : ids.find(in);
      if (!in.empty() && it == ids.end()) reads_skipped = true;  // made by an unsupported node, reported below
      node.inputs.push_back(it == ids.end() ? -1 : it->second);
    }
    if (reads_skipped) {
      if (unsupported.empty()) damaged(where, "reads a value no earlier node makes");
      continue;
    }
    for (const auto& o : n.output()) node.outputs.push_back(o.empty() ? -1 : define(o, where));
    for (const auto& a : n.attribute()) {
      if (node.attrs.count(a.name())) damaged(where, "attribute '" + a.name() + "' appears twice");
      node.attrs.emplace(a.name(), read_attr(a, where));
    }
    p->nodes.push_back(std::move(node));
  }
  if (!unsupported.empty()) {
    std::string list;
    for (const auto& [op, names] : unsupported) {
      list += (list.empty() ? "" : "; ") + op + " (node" + (names.size() > 1 ? "s " : " ");
      for (std::size_t i = 0; i < names.size() && i < 5; ++i) list += (i ? ", '" : "'") + names[i] + "'";
      if (names.size() > 5) list += " and " + std::to_string(names.size() - 5) + " more";
      list += ")";
    }
    throw Error(ErrorCode::unimplemented, "[onnx] " + what + ": unsupported ONNX op" + (unsupported.size() > 1 ? "s: " : ": ") + list);
  }
  for (const auto& o : g.output()) {
    auto it = ids.find(o.name());
    if (it == ids.end()) damaged(what, "graph output '" + o.name() + "' is never made");
    p->outputs.push_back(it->second);
    p->output_names.push_back(o.name());
  }
  if (p->outputs.empty()) damaged(what, "the graph has no outputs");
  return p;
}

}  // namespace

// ---------------------------------------------------------------- NodeContext

const Tensor& NodeContext::in(std::size_t i) const {
  if (!has(i)) bad("input " + std::to_string(i) + " is required");
  return in_[i];
}

namespace {
const Attr* find_attr(const Node& n, const std::string& name) {
  auto it = n.attrs.find(name);
  return it == n.attrs.end() ? nullptr : &it->second;
}
}  // namespace

std::int64_t NodeContext::attr_int(const std::string& name, std::int64_t fallback) const {
  const Attr* a = find_attr(node, name);
  if (!a) return fallback;
  if (a->type != Attr::Type::i) bad("attribute '" + name + "' must be an INT");
  return a->i;
}
std::int64_t NodeContext::attr_int(const std::string& name) const {
  if (!find_attr(node, name)) bad("attribute '" + name + "' is required");
  return attr_int(name, 0);
}
float NodeContext::attr_float(const std::string& name, float fallback) const {
  const Attr* a = find_attr(node, name);
  if (!a) return fallback;
  if (a->type != Attr::Type::f) bad("attribute '" + name + "' must be a FLOAT");
  return a->f;
}
std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) const {
  const Attr* a = find_attr(node, name);
  if (!a) return fallback;
  if (a->type != Attr::Type::s) bad("attribute '" + name + "' must be a STRING");
  return a->s;
}
std::vector<std::int64_t> NodeContext::attr_ints(const std::string& name, std::vector<std::int64_t> fallback) const {
  const Attr* a = find_attr(node, name);
  if (!a) return fallback;
  if (a->type != Attr::Type::ints) bad("attribute '" + name + "' must be INTS");
  return a->ints;
}
std::vector<float> NodeContext::attr_floats(const std::string& name) const {
  const Attr* a = find_attr(node, name);
  if (!a) return {};
  if (a->type != Attr::Type::floats) bad("attribute '" + name + "' must be FLOATS");
  return a->floats;
}
std::vector<std::string> NodeContext::attr_strings(const std::string& name) const {
  const Attr* a = find_attr(node, name);
  if (!a) return {};
  if (a->type != Attr::Type::strings) bad("attribute '" + name + "' must be STRINGS");
  return a->strings;
}
const Tensor& NodeContext::attr_tensor(const std::string& name) const {
  const Attr* a = find_attr(node, name);
  if (!a) bad("attribute '" + name + "' is required");
  if (a->type != Attr::Type::t) bad("attribute '" + name + "' must be a TENSOR");
  return a->t;
}

std::vector<std::int64_t> NodeContext::ints(std::size_t i) const {
  const Tensor& t = in(i);
  if (t.is_symbolic()) {
    auto k = known(i);
    if (k && std::none_of(k->begin(), k->end(), [](std::int64_t v) { return v == kDynamic; })) return *k;
    unsupported("input " + std::to_string(i) + " must be known when the graph is traced, but it is computed from a "
                "runtime value (a dynamic dim or a data input): call the model with static shapes");
  }
  if (t.dtype() == DType::int64) return t.to_vector<std::int64_t>();
  if (t.dtype() == DType::int32) {
    std::vector<std::int64_t> out;
    for (auto v : t.to_vector<std::int32_t>()) out.push_back(v);
    return out;
  }
  bad("input " + std::to_string(i) + " must be int64 or int32, not " + std::string(name_of(t.dtype())));
}

std::optional<KnownDims> NodeContext::known_dims(std::size_t i) const {
  if (i < partial_.size() && partial_[i]) return partial_[i];
  if (!has(i)) return std::nullopt;
  const Tensor& t = in_[i];
  if (t.is_symbolic() || t.rank() > 1 || (t.dtype() != DType::int64 && t.dtype() != DType::int32)) return std::nullopt;
  return KnownDims::of(ints(i));
}

std::optional<std::vector<std::int64_t>> NodeContext::known(std::size_t i) const {
  auto k = known_dims(i);
  if (!k) return std::nullopt;
  return k->values;
}

double NodeContext::number(std::size_t i) const {
  const Tensor& t = in(i);
  if (t.is_symbolic()) unsupported("input " + std::to_string(i) + " must be known when the graph is traced");
  if (t.num_elements() != 1) bad("input " + std::to_string(i) + " must hold one value");
  return cast(t, DType::float64).to_vector<double>()[0];
}

int NodeContext::axis(std::int64_t a, int rank) const {
  if (a < -rank || a >= rank) bad("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
  return static_cast<int>(a < 0 ? a + rank : a);
}

void NodeContext::check_size(const Shape& result) const {
  std::int64_t n = 1;
  for (std::int64_t d : result) {
    if (d == kDynamic) continue;
    if (d < 0) bad("a negative dim in " + result.str());
    if (d > 0 && n > (std::int64_t{1} << 28) / d) bad("the result " + result.str() + " has more than 2^28 elements");
    n *= d;
  }
}

void NodeContext::bad(const std::string& message) const {
  throw MalformedNode(ErrorCode::invalid_argument, "[onnx] " + program.what + " node '" + node.name + "' (" + node.op + "): " + message);
}
void NodeContext::unsupported(const std::string& message) const {
  throw Error(ErrorCode::unimplemented, "[onnx] " + program.what + " node '" + node.name + "' (" + node.op + "): " + message);
}

const std::map<std::string, OpFn>& op_table() {
  static const std::map<std::string, OpFn> table = [] {
    std::map<std::string, OpFn> t;
    add_math_ops(t);
    add_shape_ops(t);
    add_nn_ops(t);
    add_rnn_ops(t);
    return t;
  }();
  return table;
}

// ---------------------------------------------------------------- interpretation

std::vector<Tensor> run_program(const Program& p, const std::vector<Variable>& vars, const std::vector<Tensor>& args) {
  std::vector<Tensor> env(p.value_names.size());
  std::vector<std::optional<KnownDims>> partial(p.value_names.size());
  if (args.size() != p.inputs.size())
    throw Error("[onnx] " + p.what + ": the model takes " + std::to_string(p.inputs.size()) + " inputs, got " + std::to_string(args.size()));
  for (std::size_t i = 0; i < args.size(); ++i) env[static_cast<std::size_t>(p.inputs[i])] = args[i];
  for (const auto& [id, t] : p.constants) env[static_cast<std::size_t>(id)] = t;
  for (const auto& [id, v] : p.variables) env[static_cast<std::size_t>(id)] = vars[static_cast<std::size_t>(v)].value();
  const auto& table = op_table();
  for (const Node& n : p.nodes) {
    std::vector<Tensor> in;
    std::vector<std::optional<KnownDims>> in_partial;
    for (int id : n.inputs) {
      in.push_back(id < 0 ? Tensor() : env[static_cast<std::size_t>(id)]);
      in_partial.push_back(id < 0 ? std::nullopt : partial[static_cast<std::size_t>(id)]);
      if (id >= 0 && !in.back().defined())
        throw Error("[onnx] " + p.what + " node '" + n.name + "' (" + n.op + "): its input '" +
                    p.value_names[static_cast<std::size_t>(id)] + "' is an output the op producing it does not make");
    }
    NodeContext ctx(p, n, std::move(in), std::move(in_partial));
    std::vector<Tensor> out;
    try {
      out = table.at(n.op)(ctx);
    } catch (const Error& e) {
      std::string m = e.what();
      if (m.find("[onnx]") != std::string::npos) throw;
      throw Error(e.kind(), "[onnx] " + p.what + " node '" + n.name + "' (" + n.op + "): " + m);
    }
    if (out.size() < n.outputs.size()) out.resize(n.outputs.size());
    for (std::size_t i = 0; i < n.outputs.size(); ++i) {
      int id = n.outputs[i];
      if (id < 0) continue;
      env[static_cast<std::size_t>(id)] = out[i];
      if (i < ctx.partial_out.size()) partial[static_cast<std::size_t>(id)] = ctx.partial_out[i];
    }
  }
  std::vector<Tensor> results;
  for (std::size_t i = 0; i < p.outputs.size(); ++i) {
    const Tensor& t = env[static_cast<std::size_t>(p.outputs[i])];
    if (!t.defined()) throw Error("[onnx] " + p.what + ": output '" + p.output_names[i] + "' is never made");
    // A graph output that is an input or weight itself still is a value of its own.
    results.push_back(identity(t));
  }
  return results;
}

struct ImportedState {
  std::shared_ptr<const Program> program;
  std::vector<Variable> variables;
  using Body = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  std::optional<Function<Body>> function;
};

}  // namespace detail

namespace {
const detail::ImportedState& need(const std::shared_ptr<detail::ImportedState>& s) {
  if (!s) fail(ErrorCode::failed_precondition, "onnx", "use of an empty ImportedModel");
  return *s;
}
}  // namespace

const std::vector<std::string>& ImportedModel::input_names() const { return need(state_).program->input_names; }
const std::vector<TensorSpec>& ImportedModel::input_specs() const { return need(state_).program->input_specs; }
const std::vector<std::string>& ImportedModel::output_names() const { return need(state_).program->output_names; }
int ImportedModel::opset() const { return need(state_).program->opset; }
const std::vector<Variable>& ImportedModel::variables() const { return need(state_).variables; }
std::vector<Variable> ImportedModel::trainable_variables() const {
  std::vector<Variable> out;
  for (const auto& v : variables())
    if (v.trainable()) out.push_back(v);
  return out;
}

std::vector<Tensor> ImportedModel::operator()(const std::vector<Tensor>& inputs) const {
  const auto& s = need(state_);
  const auto& p = *s.program;
  if (inputs.size() != p.inputs.size())
    fail("onnx", p.what + " takes " + std::to_string(p.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& want = p.input_specs[i];
    if (!inputs[i].defined()) fail("onnx", "input '" + p.input_names[i] + "' is undefined");
    if (inputs[i].dtype() != want.dtype || inputs[i].rank() != want.shape.rank() || !want.shape.accepts(inputs[i].shape()))
      fail(inputs[i].dtype() != want.dtype ? kWrongType : ErrorKind{}, "onnx", p.what + " input '" + p.input_names[i] + "' must be " + want.str() + ", got " + inputs[i].spec().str());
  }
  return (*s.function)(inputs);
}

std::vector<Tensor> ImportedModel::operator()(const std::map<std::string, Tensor>& inputs) const {
  const auto& p = *need(state_).program;
  std::vector<Tensor> flat;
  for (const auto& name : p.input_names) {
    auto it = inputs.find(name);
    if (it == inputs.end()) fail("onnx", p.what + ": input '" + name + "' is missing");
    flat.push_back(it->second);
  }
  for (const auto& [k, v] : inputs)
    if (std::find(p.input_names.begin(), p.input_names.end(), k) == p.input_names.end())
      fail("onnx", p.what + " has no input '" + k + "'");
  return (*this)(flat);
}

std::shared_ptr<const ConcreteFunction> ImportedModel::concrete_function(std::vector<TensorSpec> specs) const {
  const auto& s = need(state_);
  if (specs.empty()) specs = s.program->input_specs;
  return s.function->get_concrete_function(specs);
}

ImportedModel load_model_from_bytes(std::span<const std::byte> bytes, const std::string& what) {
  if (bytes.size() > kMaxImportBytes)
    throw Error(ErrorCode::resource_exhausted, "[onnx] " + what + ": " + std::to_string(bytes.size()) +
                                                   " bytes is above the importer's limit of 2 GiB");
  ::onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw Error(ErrorCode::invalid_argument, "[onnx] " + what + " is not a valid ONNX model (the protobuf does not parse: truncated or damaged)");
  auto state = std::make_shared<detail::ImportedState>();
  state->program = detail::read_program(model, what, state->variables);
  FunctionOptions options;
  options.name = model.graph().name().empty() ? "onnx_model" : model.graph().name();
  options.arg_names = {"inputs"};
  std::shared_ptr<const detail::Program> program = state->program;
  std::vector<Variable> vars = state->variables;
  state->function.emplace(detail::ImportedState::Body([program, vars](const std::vector<Tensor>& args) {
                            return detail::run_program(*program, vars, args);
                          }),
                          options);
  ImportedModel m;
  m.state_ = state;
  // The first trace, at the file's specs: a malformed node (an attribute of the wrong type,
  // inconsistent inputs) fails at load, not at the first call. With dynamic dims, a graph
  // that needs their values traces at each call's static shapes instead: only malformed
  // nodes are errors here.
  try {
    state->function->get_concrete_function(state->program->input_specs);
  } catch (const detail::MalformedNode&) {
    throw;
  } catch (const Error&) {
    const auto& specs = state->program->input_specs;
    bool dynamic = std::any_of(specs.begin(), specs.end(), [](const TensorSpec& s) {
      return std::any_of(s.shape.begin(), s.shape.end(), [](std::int64_t d) { return d == kDynamic; });
    });
    if (!dynamic) throw;
  }
  return m;
}

ImportedModel load_model(const std::string& path) {
  std::vector<std::byte> bytes = io::read_file(path, kMaxImportBytes);
  return load_model_from_bytes(bytes, "'" + path + "'");
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> out;
  for (const auto& [k, v] : detail::op_table()) out.push_back(k);
  return out;
}

}  // namespace ef::onnx
