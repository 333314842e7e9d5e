// ef graphs -> ONNX ModelProto. Each op writes itself through the ONNX lowering its record brings
// (eagerflow/ops/op_rules.h: one ONNX op or a short fixed pattern, beside the op's class); this
// file names values, builds the protobuf and runs the official checker on the result.
#include "eagerflow/saving/onnx.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <functional>
#include <map>
#include <type_traits>
#include <variant>

#include "eagerflow/core/error.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/saving/saved_model.h"
#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/passes/passes.h"

namespace ef::onnx {
namespace {

namespace pb = ::onnx;

int onnx_dtype(DType t) { return dtype_code(t); }

class NodeLowering;

class Exporter {
 public:
  Exporter(const ir::Graph& g, pb::GraphProto& out) : g_(g), out_(out) {}
  // A sub-graph (ef::scan's body): its names start with `prefix`, unique in the model.
  Exporter(const ir::Graph& g, pb::GraphProto& out, std::string prefix) : g_(g), out_(out), prefix_(std::move(prefix)) {}

  // The body of an ONNX Scan: its first `n_inputs` inputs are the sub-graph's (state, then
  // scan input elements); the rest are captures, read by name from the enclosing graph.
  void run_subgraph(std::size_t n_inputs, const std::vector<std::string>& outer) {
    for (std::size_t i = 0; i < g_.inputs.size(); ++i) {
      int v = g_.inputs[i];
      if (i >= n_inputs) {
        names_[v] = outer.at(i - n_inputs);
        continue;
      }
      names_[v] = fresh("in");
      value_info(*out_.add_input(), names_[v], g_.values[static_cast<std::size_t>(v)].spec);
    }
    for (std::size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].kind == ir::ValueKind::constant)
        names_[static_cast<int>(v)] = initializer(fresh("const"), g_.constants[static_cast<std::size_t>(g_.values[v].index)]);
    for (const ir::Node& node : g_.nodes) emit(node);
    for (int o : g_.outputs) {
      std::string name = fresh("out");
      node("Identity", {name_of_value(o)}, {name});
      value_info(*out_.add_output(), name, g_.values[static_cast<std::size_t>(o)].spec);
    }
  }

  void run() {
    for (std::size_t i = 0; i < g_.inputs.size(); ++i) {
      int v = g_.inputs[i];
      std::string name = g_.inputs.size() == 1 ? "inputs" : "input_" + std::to_string(i);
      names_[v] = name;
      value_info(*out_.add_input(), name, g_.values[static_cast<std::size_t>(v)].spec);
    }
    for (std::size_t v = 0; v < g_.values.size(); ++v)
      if (g_.values[v].kind == ir::ValueKind::constant)
        names_[static_cast<int>(v)] = initializer("const_" + std::to_string(v), g_.constants[static_cast<std::size_t>(g_.values[v].index)]);
    for (const ir::Node& node : g_.nodes) emit(node);
    for (std::size_t i = 0; i < g_.outputs.size(); ++i) {
      std::string name = "output_" + std::to_string(i);
      node("Identity", {name_of_value(g_.outputs[i])}, {name});
      value_info(*out_.add_output(), name, g_.values[static_cast<std::size_t>(g_.outputs[i])].spec);
    }
  }

 private:
  void value_info(pb::ValueInfoProto& vi, const std::string& name, const TensorSpec& spec) {
    vi.set_name(name);
    auto* t = vi.mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx_dtype(spec.dtype));
    auto* shape = t->mutable_shape();
    for (int d = 0; d < spec.shape.rank(); ++d) {
      auto* dim = shape->add_dim();
      if (spec.shape[d] == kDynamic) dim->set_dim_param(d == 0 ? "batch" : "dim_" + std::to_string(d));
      else dim->set_dim_value(spec.shape[d]);
    }
  }

  std::string fresh(const std::string& hint) { return prefix_ + hint + "_" + std::to_string(counter_++); }

  std::string initializer(const std::string& name, const Tensor& value) {
    Tensor t = value.clone();
    auto* init = out_.add_initializer();
    init->set_name(name);
    init->set_data_type(onnx_dtype(t.dtype()));
    for (int d = 0; d < t.rank(); ++d) init->add_dims(t.shape()[d]);
    if (t.dtype() == DType::string) {  // ONNX keeps strings in string_data, never in raw bytes
      for (std::string_view v : t.data<std::string_view>()) init->add_string_data(std::string(v));
      return name;
    }
    init->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
    return name;
  }

  pb::NodeProto& node(const std::string& type, const std::vector<std::string>& in, const std::vector<std::string>& out) {
    pb::NodeProto& n = *out_.add_node();
    n.set_op_type(type);
    n.set_name(fresh(type));
    for (const auto& s : in) n.add_input(s);
    for (const auto& s : out) n.add_output(s);
    return n;
  }
  static void attr_int(pb::NodeProto& n, const std::string& name, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  static void attr_ints(pb::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr_string(pb::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_STRING);
    a->set_s(v);
  }
  static void attr_tensor(pb::NodeProto& n, const std::string& name, const Tensor& t) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_TENSOR);
    auto* tp = a->mutable_t();
    tp->set_data_type(onnx_dtype(t.dtype()));
    for (int d = 0; d < t.rank(); ++d) tp->add_dims(t.shape()[d]);
    tp->set_raw_data(std::string(static_cast<const char*>(t.raw_data()), t.nbytes()));
  }

  const std::string& name_of_value(int v) {
    auto it = names_.find(v);
    if (it == names_.end())
      fail(ErrorCode::internal, "onnx", "value " + std::to_string(v) + " is used before it is made");
    return it->second;
  }
  const TensorSpec& spec(int v) const { return g_.values[static_cast<std::size_t>(v)].spec; }

  [[noreturn]] void unsupported(const ir::Node& n, const std::string& why = "") {
    fail(ErrorCode::unimplemented, "onnx",
         std::string("op '") + n.op->name() + "' has no ONNX form" + (why.empty() ? "" : " (" + why + ")") +
             (n.scope.empty() ? "" : " [in layer " + n.scope + "]"));
  }

  void attribute(pb::NodeProto& n, const Attribute& a) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::int64_t>) {
            attr_int(n, a.name, v);
          } else if constexpr (std::is_same_v<V, float>) {
            auto* p = n.add_attribute();
            p->set_name(a.name);
            p->set_type(pb::AttributeProto_AttributeType_FLOAT);
            p->set_f(v);
          } else if constexpr (std::is_same_v<V, std::string>) {
            attr_string(n, a.name, v);
          } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
            attr_ints(n, a.name, v);
          } else if constexpr (std::is_same_v<V, Tensor>) {
            attr_tensor(n, a.name, v);
          } else {
            subgraph(n, a.name, v);
          }
        },
        a.value);
  }

  // A graph attribute: the sub-graph exported with names of its own, its captures read from
  // this graph by name.
  void subgraph(pb::NodeProto& n, const std::string& name, const SubGraphAttribute& sub) {
    if (!sub.graph) fail(ErrorCode::internal, "onnx", "graph attribute '" + name + "' has no graph");
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(pb::AttributeProto_AttributeType_GRAPH);
    pb::GraphProto& body = *a->mutable_g();
    std::string prefix = fresh(name) + "/";
    body.set_name(prefix);
    std::shared_ptr<ir::Graph> flat = passes::inline_calls(*sub.graph);
    Exporter(*flat, body, prefix).run_subgraph(sub.num_inputs, sub.captures);
  }

  void emit(const ir::Node& n);
  friend class NodeLowering;

  const ir::Graph& g_;
  pb::GraphProto& out_;
  std::string prefix_;
  std::map<int, std::string> names_;
  int counter_ = 0;
};

// One node's view of the exporter, handed to the op's lowering.
class NodeLowering final : public Lowering {
 public:
  NodeLowering(Exporter& e, const ir::Node& n) : e_(e), n_(n) {
    for (int v : n.inputs) inputs_.push_back(e.name_of_value(v));
    for (int v : n.outputs) outputs_.push_back(e.names_[v] = e.fresh(n.op->name()));
  }
  std::size_t num_inputs() const override { return inputs_.size(); }
  const std::string& input(std::size_t i) const override { return inputs_.at(i); }
  const TensorSpec& input_spec(std::size_t i) const override { return e_.spec(n_.inputs.at(i)); }
  std::size_t num_outputs() const override { return outputs_.size(); }
  const std::string& output(std::size_t i) const override { return outputs_.at(i); }
  const TensorSpec& output_spec(std::size_t i) const override { return e_.spec(n_.outputs.at(i)); }
  void rename_output(std::size_t i, const std::string& name) override { e_.names_[n_.outputs.at(i)] = outputs_.at(i) = name; }
  std::string fresh(const std::string& hint) override { return e_.fresh(hint); }
  std::string constant(const Tensor& value, const std::string& name) override {
    if (!value.defined()) fail(ErrorCode::internal, "onnx", std::string("op '") + n_.op->name() + "': an undefined constant");
    return e_.initializer(name.empty() ? e_.fresh("c") : name, value);  // "const_<value>" are the graph's own
  }
  std::string scalar_constant(double v, DType t) override { return constant(cast(scalar(v), t), ""); }
  void node(const std::string& type, const std::vector<std::string>& in, const std::vector<std::string>& out,
            std::vector<Attribute> attributes) override {
    pb::NodeProto& nd = e_.node(type, in, out);
    for (const Attribute& a : attributes) e_.attribute(nd, a);
  }
  [[noreturn]] void unsupported(const std::string& why) override { e_.unsupported(n_, why); }

 private:
  Exporter& e_;
  const ir::Node& n_;
  std::vector<std::string> inputs_, outputs_;
};

void Exporter::emit(const ir::Node& n) {
  const OpRules* rules = op_rules(*n.op);
  if (!rules || !rules->onnx) unsupported(n, rules ? rules->onnx_unsupported : "");
  NodeLowering to(*this, n);
  rules->onnx(*n.op, to);
}

}  // namespace

void export_model(const ConcreteFunction& function, const std::string& path) {
  pb::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("eagerflow");
  model.set_producer_version("0.1.0");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  pb::GraphProto* graph = model.mutable_graph();
  graph->set_name(function.name().empty() ? "eagerflow" : function.name());
  // Calls (a loaded model inside the layer exported) are exported as the ops they call.
  std::shared_ptr<ir::Graph> flat = passes::inline_calls(function.traced_graph());
  Exporter(*flat, *graph).run();
  try {
    pb::checker::check_model(model);
  } catch (const std::exception& e) {
    fail(ErrorCode::internal, "onnx", std::string("the exported model fails the ONNX checker: ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) fail(ErrorCode::internal, "onnx", "cannot serialize the model");
  std::vector<std::byte> data(bytes.size());
  std::memcpy(data.data(), bytes.data(), bytes.size());
  io::write_file_atomically(path, data);
}

void export_model(nn::Layer& layer, const std::string& path, std::optional<TensorSpec> input_spec) {
  export_model(*inference_function(layer, input_spec), path);
}

}  // namespace ef::onnx
