#include "summary/graph_def.h"

#include "ef_tensorboard.pb.h"

namespace ef::summary::detail {
namespace {

ef_tensorboard::DataType tf_dtype(DType t) {
  switch (t) {
    case DType::float32: return ef_tensorboard::DT_FLOAT;
    case DType::float64: return ef_tensorboard::DT_DOUBLE;
    case DType::int32: return ef_tensorboard::DT_INT32;
    case DType::int64: return ef_tensorboard::DT_INT64;
    case DType::bool_: return ef_tensorboard::DT_BOOL;
    case DType::bfloat16: return ef_tensorboard::DT_BFLOAT16;
    case DType::float16: return ef_tensorboard::DT_HALF;
    case DType::string: return ef_tensorboard::DT_STRING;
    case DType::uint8: return ef_tensorboard::DT_UINT8;
    case DType::int8: return ef_tensorboard::DT_INT8;
    case DType::int16: return ef_tensorboard::DT_INT16;
    case DType::uint16: return ef_tensorboard::DT_UINT16;
    case DType::uint32: return ef_tensorboard::DT_UINT32;
    case DType::uint64: return ef_tensorboard::DT_UINT64;
    case DType::complex64: return ef_tensorboard::DT_COMPLEX64;
    case DType::complex128: return ef_tensorboard::DT_COMPLEX128;
  }
  return ef_tensorboard::DT_INVALID;
}

void fill_shape(const Shape& s, ef_tensorboard::TensorShapeProto& p) {
  for (int i = 0; i < s.rank(); ++i) p.add_dim()->set_size(s[i]);  // kDynamic is -1, TF's unknown dim too
}

// TensorBoard splits names at '/' into scopes; keep each part to characters it expects.
std::string clean(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/') ? c : '_';
  while (!out.empty() && out.back() == '/') out.pop_back();
  return out.empty() ? "_" : out;
}

}  // namespace

std::string graph_def_bytes(const ir::Graph& g) {
  ef_tensorboard::GraphDef def;
  def.mutable_versions()->set_producer(1);
  std::vector<std::string> value_name(g.values.size());
  auto out_attrs = [&](ef_tensorboard::NodeDef& n, const std::vector<int>& outputs) {
    auto& shapes = *(*n.mutable_attr())["_output_shapes"].mutable_list();
    for (int v : outputs) fill_shape(g.values[static_cast<std::size_t>(v)].spec.shape, *shapes.add_shape());
    if (!outputs.empty()) (*n.mutable_attr())["T"].set_type(tf_dtype(g.values[static_cast<std::size_t>(outputs[0])].spec.dtype));
  };
  for (std::size_t k = 0; k < g.inputs.size(); ++k) {
    const int v = g.inputs[k];
    const auto& spec = g.values[static_cast<std::size_t>(v)].spec;
    auto* n = def.add_node();
    n->set_name("inputs/" + (spec.name.empty() ? "input_" + std::to_string(k) : clean(spec.name) + "_" + std::to_string(k)));
    n->set_op("Placeholder");
    (*n->mutable_attr())["dtype"].set_type(tf_dtype(spec.dtype));
    fill_shape(spec.shape, *(*n->mutable_attr())["shape"].mutable_shape());
    out_attrs(*n, {v});
    value_name[static_cast<std::size_t>(v)] = n->name();
  }
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].kind != ir::ValueKind::constant) continue;
    auto* n = def.add_node();
    n->set_name("constants/const_" + std::to_string(g.values[v].index));
    n->set_op("Const");
    (*n->mutable_attr())["dtype"].set_type(tf_dtype(g.values[v].spec.dtype));
    out_attrs(*n, {static_cast<int>(v)});
    value_name[v] = n->name();
  }
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::Node& node = g.nodes[i];
    auto* n = def.add_node();
    std::string op = node.op->name();
    std::string attrs = node.op->attrs();
    // The layer scope is the name scope (TensorBoard folds each layer into a box). Reads and
    // updates of variables outside any layer (the optimizer's, the metrics') go under
    // variables/<variable path>, so they fold too instead of crowding the top level.
    std::string scope = node.scope;
    if (scope.empty() && attrs.rfind("var=", 0) == 0) scope = "variables/" + attrs.substr(4, attrs.find(' ') == std::string::npos ? std::string::npos : attrs.find(' ') - 4);
    n->set_name((scope.empty() ? "" : clean(scope) + "/") + clean(op) + "_" + std::to_string(i));
    n->set_op(op);
    for (int v : node.inputs) {
      const auto& val = g.values[static_cast<std::size_t>(v)];
      std::string src = value_name[static_cast<std::size_t>(v)];
      if (src.empty()) continue;  // a value made later (never, in a valid graph)
      if (val.kind == ir::ValueKind::node_output) {
        const auto& producer = g.nodes[static_cast<std::size_t>(val.index)].outputs;
        auto at = std::find(producer.begin(), producer.end(), v) - producer.begin();
        if (at > 0) src += ":" + std::to_string(at);
      }
      n->add_input(src);
    }
    if (!attrs.empty()) (*n->mutable_attr())["attrs"].set_s(attrs.size() > 4096 ? attrs.substr(0, 4096) + "..." : attrs);
    if (!node.scope.empty()) (*n->mutable_attr())["scope"].set_s(node.scope);
    if (node.op->has_effect()) (*n->mutable_attr())["effect"].set_b(true);
    out_attrs(*n, node.outputs);
    for (int v : node.outputs) value_name[static_cast<std::size_t>(v)] = n->name();
  }
  for (std::size_t k = 0; k < g.outputs.size(); ++k) {
    const int v = g.outputs[k];
    auto* n = def.add_node();
    n->set_name("outputs/output_" + std::to_string(k));
    n->set_op("Identity");
    const auto& val = g.values[static_cast<std::size_t>(v)];
    std::string src = value_name[static_cast<std::size_t>(v)];
    if (val.kind == ir::ValueKind::node_output) {
      const auto& producer = g.nodes[static_cast<std::size_t>(val.index)].outputs;
      auto at = std::find(producer.begin(), producer.end(), v) - producer.begin();
      if (at > 0) src += ":" + std::to_string(at);
    }
    if (!src.empty()) n->add_input(src);
    out_attrs(*n, {v});
  }
  std::string out;
  def.SerializeToString(&out);
  return out;
}

}  // namespace ef::summary::detail
