#include "io/keras_config.h"
#include "io/keras_weights_layout.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <set>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/optim/keras_optimizers.h"
#include "eagerflow/train/functional.h"
#include "eagerflow/trace/keras_tensor.h"
#include "io/model_file_parts.h"
#include "io/op_codec.h"

namespace ef::io::keras {
namespace {

using nn::ConfigList;
using nn::ConfigMap;
using nn::ConfigValue;
using nn::LayerConfig;

// Functional graphs and nested models deeper than this are refused (a hostile file's recursion).
constexpr int kMaxDepth = 16;

ConfigMap keras_object(const std::string& module, const std::string& class_name, ConfigValue config,
                       ConfigValue registered_name = nullptr) {
  ConfigMap m;
  m.set("module", module);
  m.set("class_name", class_name);
  m.set("config", std::move(config));
  m.set("registered_name", std::move(registered_name));
  return m;
}

const ConfigMap* as_map(const ConfigValue& v) { return std::get_if<ConfigMap>(&v.value); }
const ConfigList* as_list(const ConfigValue& v) { return std::get_if<ConfigList>(&v.value); }
const std::string* as_text(const ConfigValue& v) { return std::get_if<std::string>(&v.value); }

std::string camel_case(const std::string& snake) {
  std::string out;
  bool up = true;
  for (char ch : snake) {
    if (ch == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    up = false;
  }
  return out;
}

ConfigValue shape_value(const Shape& s) {
  ConfigList l;
  for (std::int64_t d : s.dims()) l.push_back(d == kDynamic ? ConfigValue() : ConfigValue(d));
  return l;
}

ConfigMap dtype_policy(const std::string& name) {
  ConfigMap c;
  c.set("name", name);
  return keras_object("keras", "DTypePolicy", c);
}

// ------------------------------------------------------------------ ours -> Keras

// Keras' objects for regularizers and constraints, whose eagerflow configs are {name, ...}.
ConfigValue regularizer_to_keras(const ConfigValue& v) {
  const ConfigMap* m = as_map(v);
  if (!m || !m->has("name")) return v;
  const std::string& name = m->text("name");
  ConfigMap c;
  std::string cls = name == "l1" ? "L1" : name == "l2" ? "L2" : "L1L2";
  if (name != "l2") c.set("l1", m->real("l1"));
  if (name != "l1") c.set("l2", m->real("l2"));
  return keras_object("keras.regularizers", cls, c);
}

ConfigValue constraint_to_keras(const ConfigValue& v) {
  const ConfigMap* m = as_map(v);
  if (!m || !m->has("name")) return v;
  ConfigMap c;
  for (const auto& [k, x] : m->items())
    if (k != "name") c.set(k, x);
  return keras_object("keras.constraints", camel_case(m->text("name")), c);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

ConfigValue layer_config_to_keras(const ConfigValue& v);

// A layer's {class_name, config} as Keras serializes it. Layers written in Python carry their
// registered name ("package>Name"): Keras finds them by it (custom_objects or its registry).
ConfigMap plain_layer_to_keras(const LayerConfig& ours) {
  ConfigMap config;
  for (const auto& [k, x] : ours.config.items()) {
    if (ends_with(k, "_regularizer")) config.set(k, regularizer_to_keras(x));
    else if (ends_with(k, "_constraint")) config.set(k, constraint_to_keras(x));
    else config.set(k, layer_config_to_keras(x));
  }
  const std::string& cls = ours.class_name;
  if (std::size_t cut = cls.find('>'); cut != std::string::npos)
    return keras_object("__main__", cls.substr(cut + 1), config, cls);
  return keras_object("keras.layers", cls, config);
}

// Nested layers inside a layer's config (Bidirectional's layer, TimeDistributed's, RNN cells).
ConfigValue layer_config_to_keras(const ConfigValue& v) {
  const ConfigMap* m = as_map(v);
  if (!m || m->size() != 2 || !m->has("class_name") || !m->has("config") || !as_text(m->at("class_name")) ||
      !as_map(m->at("config")))
    return v;
  return plain_layer_to_keras({m->text("class_name"), m->map("config")});
}

// The attribute-free ops of functional graphs and their Keras operations.
struct KerasOp {
  const char* ours;
  const char* module;
  const char* keras;
};
constexpr KerasOp kOps[] = {
    {"add", "keras.src.ops.numpy", "Add"},          {"sub", "keras.src.ops.numpy", "Subtract"},
    {"mul", "keras.src.ops.numpy", "Multiply"},     {"div", "keras.src.ops.numpy", "TrueDivide"},
    {"pow", "keras.src.ops.numpy", "Power"},        {"neg", "keras.src.ops.numpy", "Negative"},
    {"abs", "keras.src.ops.numpy", "Absolute"},     {"exp", "keras.src.ops.numpy", "Exp"},
    {"log", "keras.src.ops.numpy", "Log"},          {"sqrt", "keras.src.ops.numpy", "Sqrt"},
    {"square", "keras.src.ops.numpy", "Square"},    {"tanh", "keras.src.ops.numpy", "Tanh"},
    {"maximum", "keras.src.ops.numpy", "Maximum"},  {"minimum", "keras.src.ops.numpy", "Minimum"},
    {"matmul", "keras.src.ops.numpy", "Matmul"},    {"relu", "keras.src.ops.nn", "Relu"},
    {"sigmoid", "keras.src.ops.nn", "Sigmoid"},
};
const KerasOp* op_by_ours(const std::string& name) {
  for (const auto& op : kOps)
    if (name == op.ours) return &op;
  return nullptr;
}
const char* op_by_keras(const std::string& cls) {
  if (cls == "Divide") return "div";
  if (cls == "Abs") return "abs";
  for (const auto& op : kOps)
    if (cls == op.keras) return op.ours;
  return nullptr;
}

// A constant input of an op node as Keras writes it: a number, or nested lists.
ConfigValue constant_to_keras(const Tensor& t, const std::string& where) {
  if (t.num_elements() > 4096) throw Error(ErrorCode::unimplemented, where + ": a constant of " + t.spec().str() +
                                                                  " cannot be written inline in config.json; save as .efmodel");
  Tensor f = t.dtype() == DType::float64 ? t : cast(t, DType::float64);
  std::vector<double> v = f.to_vector<double>();
  bool integral = is_integer(t.dtype()) || t.dtype() == DType::bool_;
  auto number = [&](double x) { return integral ? ConfigValue(static_cast<std::int64_t>(x)) : ConfigValue(x); };
  if (t.rank() == 0) return number(v[0]);
  std::size_t at = 0;
  std::function<ConfigValue(int)> nest = [&](int axis) -> ConfigValue {
    ConfigList l;
    for (std::int64_t i = 0; i < t.shape()[axis]; ++i)
      l.push_back(axis + 1 == t.rank() ? number(v[at++]) : nest(axis + 1));
    return l;
  };
  return nest(0);
}

ConfigMap model_to_keras_at(const nn::Layer& model, const LayerConfig& ours, const std::map<std::string, Tensor>& constants,
                            int depth);

ConfigMap functional_to_keras(const train::Model& m, const LayerConfig& ours, const std::map<std::string, Tensor>& constants,
                              int depth) {
  const train::FunctionalGraph& g = *m.functional_graph();
  const std::string where = "save_model: model '" + m.name() + "'";
  const ConfigList& our_layers = ours.config.list("layers");
  const ConfigList& our_nodes = ours.config.list("nodes");
  // A node's outputs as Keras refers to them: (layer name, call index), with their specs.
  struct Made {
    std::string layer;
    std::int64_t call = 0;
    std::vector<TensorSpec> outputs;
  };
  std::vector<Made> made;
  ConfigList layers;
  std::map<std::int64_t, std::size_t> keras_index;  // our layer index -> entry in `layers`
  std::map<std::int64_t, std::int64_t> calls;        // our layer index -> calls so far
  ConfigList input_layers;
  for (const auto& in : g.input_nodes()) {
    const TensorSpec spec{in->outputs[0].dtype, in->outputs[0].shape, {}};
    ConfigMap c;
    c.set("batch_shape", shape_value(spec.shape));
    c.set("dtype", std::string(name_of(spec.dtype)));
    c.set("sparse", false);
    c.set("ragged", false);
    c.set("name", in->name);
    c.set("optional", false);
    ConfigMap entry = keras_object("keras.layers", "InputLayer", c);
    entry.set("name", in->name);
    entry.set("inbound_nodes", ConfigList{});
    layers.push_back(std::move(entry));
    made.push_back({in->name, 0, {spec}});
    input_layers.push_back(ConfigList{ConfigValue(in->name), ConfigValue(0), ConfigValue(0)});
  }
  if (our_nodes.size() != g.steps().size()) throw Error(where + ": its config and graph disagree");
  auto keras_tensor = [&](const ConfigValue& arg, const std::string& node_where) -> ConfigValue {
    if (const ConfigMap* c = as_map(arg)) {
      auto it = constants.find(c->text("constant"));
      if (it == constants.end()) throw Error(node_where + ": a constant is missing");
      return constant_to_keras(it->second, node_where);
    }
    const ConfigList& ref = *as_list(arg);
    const Made& from = made.at(static_cast<std::size_t>(std::get<std::int64_t>(ref[0].value)));
    std::int64_t k = std::get<std::int64_t>(ref[1].value);
    const TensorSpec& spec = from.outputs.at(static_cast<std::size_t>(k));
    ConfigMap c;
    c.set("shape", shape_value(spec.shape));
    c.set("dtype", std::string(name_of(spec.dtype)));
    c.set("keras_history", ConfigList{ConfigValue(from.layer), ConfigValue(from.call), ConfigValue(k)});
    ConfigMap t;
    t.set("class_name", "__keras_tensor__");
    t.set("config", c);
    return t;
  };
  for (std::size_t i = 0; i < our_nodes.size(); ++i) {
    const KerasNode& node = *g.steps()[i].node;
    ConfigMap n = *as_map(our_nodes[i]);
    n.where = where + " node '" + node.name + "'";
    std::vector<TensorSpec> outs;
    for (const auto& o : node.outputs) outs.push_back({o.dtype, o.shape, {}});
    ConfigList args;
    for (const auto& a : n.list("args")) args.push_back(keras_tensor(a, n.where));
    ConfigMap call;
    ConfigMap kwargs;
    if (n.has("layer")) {
      std::int64_t li = n.integer("layer");
      call.set("args", n.flag("list_call") ? ConfigList{ConfigValue(std::move(args))} : std::move(args));
      if (n.has_value("training")) kwargs.set("training", n.flag("training"));
      call.set("kwargs", kwargs);
      auto [it, fresh] = keras_index.emplace(li, layers.size());
      if (fresh) {
        LayerConfig lc{as_map(our_layers.at(static_cast<std::size_t>(li)))->text("class_name"),
                       as_map(our_layers.at(static_cast<std::size_t>(li)))->map("config")};
        ConfigMap entry = model_to_keras_at(*node.layer, lc, constants, depth + 1);
        entry.set("name", node.layer->name());
        entry.set("inbound_nodes", ConfigList{});
        layers.push_back(std::move(entry));
      }
      auto& entry = std::get<ConfigMap>(layers[it->second].value);
      ConfigList inbound = entry.list("inbound_nodes");
      inbound.push_back(call);
      entry.set("inbound_nodes", std::move(inbound));
      made.push_back({node.layer->name(), calls[li]++, std::move(outs)});
    } else {
      const KerasOp* op = op_by_ours(n.text("op"));
      if (!op || !n.text("attrs").empty())
        throw Error(ErrorCode::unimplemented, n.where + ": the op '" + n.text("op") +
                                                  "' has no Keras operation this version writes to .keras files "
                                                  "(save as .efmodel, or use a layer)");
      call.set("args", std::move(args));
      call.set("kwargs", kwargs);
      ConfigMap c;
      c.set("name", node.name);
      ConfigMap entry = keras_object(op->module, op->keras, c, std::string(op->keras));
      entry.set("name", node.name);
      entry.set("inbound_nodes", ConfigList{ConfigValue(call)});
      layers.push_back(std::move(entry));
      made.push_back({node.name, 0, std::move(outs)});
    }
  }
  auto output_ref = [&](const ConfigValue& arg) -> ConfigValue {
    const ConfigList& ref = *as_list(arg);
    const Made& from = made.at(static_cast<std::size_t>(std::get<std::int64_t>(ref[0].value)));
    return ConfigList{ConfigValue(from.layer), ConfigValue(from.call), ref[1]};
  };
  ConfigValue output_layers;
  const ConfigList& outputs = ours.config.list("outputs");
  if (ours.config.flag("named_outputs")) {
    ConfigMap by_name;
    const ConfigList& names = ours.config.list("output_names");
    for (std::size_t i = 0; i < outputs.size(); ++i) by_name.set(*as_text(names.at(i)), output_ref(outputs[i]));
    output_layers = std::move(by_name);
  } else {
    ConfigList l;
    for (const auto& o : outputs) l.push_back(output_ref(o));
    output_layers = std::move(l);
  }
  ConfigMap config;
  config.set("name", m.name());
  config.set("trainable", m.trainable());
  config.set("layers", std::move(layers));
  config.set("input_layers", std::move(input_layers));
  config.set("output_layers", std::move(output_layers));
  ConfigMap out = keras_object("keras.src.models.functional", "Functional", config, std::string("Functional"));
  ConfigList shapes;
  for (const auto& in : g.input_nodes()) shapes.push_back(shape_value(in->outputs[0].shape));
  ConfigMap build;
  build.set("input_shape", shapes.size() == 1 ? shapes[0] : ConfigValue(shapes));
  out.set("build_config", build);
  return out;
}

ConfigMap sequential_to_keras(const train::Sequential& seq, const LayerConfig& ours,
                              const std::map<std::string, Tensor>& constants, int depth) {
  ConfigMap config;
  config.set("name", seq.name());
  config.set("trainable", seq.trainable());
  config.set("dtype", dtype_policy("float32"));
  ConfigList layers;
  ConfigValue build_shape;
  if (ours.config.has_value("build_input")) {
    ConfigMap b = ours.config.map("build_input");
    ConfigMap c;
    c.set("batch_shape", b.at("shape"));
    c.set("dtype", b.at("dtype"));
    c.set("sparse", false);
    c.set("ragged", false);
    c.set("name", seq.name() + "_input");
    c.set("optional", false);
    layers.push_back(keras_object("keras.layers", "InputLayer", c));
    build_shape = b.at("shape");
  }
  const ConfigList& ours_layers = ours.config.list("layers");
  if (ours_layers.size() != seq.stack().size()) throw Error("save_model: Sequential '" + seq.name() + "': config and layers disagree");
  for (std::size_t i = 0; i < ours_layers.size(); ++i) {
    const ConfigMap& l = *as_map(ours_layers[i]);
    layers.push_back(model_to_keras_at(*seq.stack()[i], {l.text("class_name"), l.map("config")}, constants, depth + 1));
  }
  config.set("layers", std::move(layers));
  config.set("build_input_shape", build_shape);
  ConfigMap out = keras_object("keras", "Sequential", config);
  if (!build_shape.is_null()) {
    ConfigMap build;
    build.set("input_shape", build_shape);
    out.set("build_config", build);
  }
  return out;
}

ConfigMap model_to_keras_at(const nn::Layer& layer, const LayerConfig& ours, const std::map<std::string, Tensor>& constants,
                            int depth) {
  if (depth > kMaxDepth) throw Error("save_model: models nested more than " + std::to_string(kMaxDepth) + " deep");
  if (ours.class_name == "Functional") {
    const auto* m = dynamic_cast<const train::Model*>(&layer);
    if (!m || !m->functional_graph()) throw Error("save_model: '" + layer.name() + "' has a functional config but no graph");
    return functional_to_keras(*m, ours, constants, depth);
  }
  if (ours.class_name == "Sequential") {
    const auto* s = dynamic_cast<const train::Sequential*>(&layer);
    if (!s) throw Error("save_model: '" + layer.name() + "' has a Sequential config but is no Sequential");
    return sequential_to_keras(*s, ours, constants, depth);
  }
  ConfigMap out = plain_layer_to_keras(ours);
  if (auto spec = layer.save_spec(); spec && layer.built()) {
    ConfigMap build;
    build.set("input_shape", shape_value(spec->shape));
    out.set("build_config", build);
  }
  return out;
}

// ------------------------------------------------------------------ Keras -> ours

struct Reader {
  std::map<std::string, Tensor>& constants;
  std::string where;
  std::size_t next_constant = 0;
};

// The class a Keras object names: a custom one by its registered name ("package>Name").
std::string class_of(const ConfigMap& obj) {
  const std::string& cls = obj.text("class_name");
  if (const ConfigValue* r = obj.find("registered_name"))
    if (const std::string* name = as_text(*r); name && !name->empty() && *name != cls) return *name;
  return cls;
}

const ConfigMap& config_of(const ConfigMap& obj) {
  static const ConfigMap empty;
  const ConfigValue* c = obj.find("config");
  return c && as_map(*c) ? *as_map(*c) : empty;
}

Shape shape_of(const ConfigValue& v, const std::string& where) {
  const ConfigList* l = as_list(v);
  if (!l || l->size() > 64) throw Error(where + ": a shape must be a list of at most 64 dims");
  std::vector<std::int64_t> dims;
  for (const auto& d : *l) {
    if (d.is_null()) {
      dims.push_back(kDynamic);
      continue;
    }
    const auto* i = std::get_if<std::int64_t>(&d.value);
    if (!i || *i < 0 || *i > (std::int64_t{1} << 40)) throw Error(where + ": a shape's dims must be integers >= 0 or null");
    dims.push_back(*i);
  }
  return Shape(dims);
}

std::string dtype_name_of(const ConfigMap& config) {
  const ConfigValue* d = config.find("dtype");
  if (!d || d->is_null()) return "float32";
  if (const std::string* s = as_text(*d)) return *s;
  if (const ConfigMap* m = as_map(*d)) {  // a DTypePolicy object
    const ConfigMap& c = config_of(*m);
    if (const ConfigValue* n = c.find("name"); n && as_text(*n)) return *as_text(*n);
  }
  return "float32";
}

// An InputLayer's input: (name, batch shape, dtype), Keras 3's batch_shape or Keras 2's batch_input_shape.
struct InputOf {
  std::string name;
  Shape shape;
  std::string dtype;
};
InputOf input_of(const ConfigMap& obj, const std::string& where) {
  ConfigMap c = config_of(obj);
  c.where = where;
  const ConfigValue* s = c.find("batch_shape");
  if (!s || s->is_null()) s = c.find("batch_input_shape");
  if (!s || s->is_null()) {
    if (const ConfigValue* shape = c.find("shape"); shape && !shape->is_null()) {
      Shape inner = shape_of(*shape, where);
      std::vector<std::int64_t> dims{kDynamic};
      for (auto d : inner.dims()) dims.push_back(d);
      return {c.has_value("name") ? c.text("name") : "input", Shape(dims), dtype_name_of(c)};
    }
    throw Error(where + ": an InputLayer needs batch_shape");
  }
  return {c.has_value("name") ? c.text("name") : "input", shape_of(*s, where), dtype_name_of(c)};
}

LayerConfig layer_from_keras(const ConfigValue& v, Reader& r, int depth);

ConfigValue build_input_value(const Shape& shape, const std::string& dtype) {
  ConfigMap b;
  b.set("dtype", dtype);
  b.set("shape", shape_value(shape));
  return b;
}

LayerConfig sequential_from_keras(const ConfigMap& obj, Reader& r, int depth) {
  ConfigMap c = config_of(obj);
  c.where = r.where + ": Sequential";
  LayerConfig out{"Sequential", {}};
  out.config.set("name", c.has_value("name") ? c.text("name") : std::string("sequential"));
  out.config.set("trainable", c.has_value("trainable") ? c.flag("trainable") : true);
  ConfigList layers;
  ConfigValue build;
  for (const auto& lv : c.list("layers")) {
    const ConfigMap* l = as_map(lv);
    if (!l) throw Error(c.where + ": layers must be objects");
    if (l->has("class_name") && as_text(l->at("class_name")) && l->text("class_name") == "InputLayer") {
      InputOf in = input_of(*l, c.where + " InputLayer");
      build = build_input_value(in.shape, in.dtype);
      continue;
    }
    // Keras 2: the first layer carries the input as batch_input_shape.
    if (layers.empty() && build.is_null()) {
      const ConfigMap& lc = config_of(*l);
      if (const ConfigValue* s = lc.find("batch_input_shape"); s && !s->is_null())
        build = build_input_value(shape_of(*s, c.where), dtype_name_of(lc));
    }
    LayerConfig lc = layer_from_keras(lv, r, depth + 1);
    ConfigMap entry;
    entry.set("class_name", lc.class_name);
    entry.set("config", lc.config);
    layers.push_back(std::move(entry));
  }
  if (build.is_null()) {
    const ConfigValue* s = c.find("build_input_shape");
    if ((!s || s->is_null()) && obj.has_value("build_config")) s = obj.map("build_config").find("input_shape");
    if (s && !s->is_null() && as_list(*s) && !as_list(*s)->empty() && !as_list(as_list(*s)->front()))
      build = build_input_value(shape_of(*s, c.where), "float32");
  }
  out.config.set("layers", std::move(layers));
  out.config.set("build_input", build);
  return out;
}

// A node's inputs in Keras 3's form ({args, kwargs}) or Keras 2's ([[name, node, tensor, kwargs], ...]).
struct CallOf {
  std::vector<std::tuple<std::string, std::int64_t, std::int64_t>> refs;  // in argument order
  std::vector<ConfigValue> args;                                          // our node's args, refs as placeholders
  bool list_call = false;
  std::optional<bool> training;
  std::string first_dtype = "float32";
};

bool is_keras_tensor(const ConfigValue& v) {
  const ConfigMap* m = as_map(v);
  return m && m->has("class_name") && as_text(m->at("class_name")) && m->text("class_name") == "__keras_tensor__";
}

std::tuple<std::string, std::int64_t, std::int64_t> history_of(const ConfigValue& v, const std::string& where) {
  const ConfigMap& c = config_of(*as_map(v));
  const ConfigValue* h = c.find("keras_history");
  const ConfigList* l = h ? as_list(*h) : nullptr;
  if (!l || l->size() != 3 || !as_text((*l)[0]) || !std::get_if<std::int64_t>(&(*l)[1].value) ||
      !std::get_if<std::int64_t>(&(*l)[2].value))
    throw Error(where + ": a Keras tensor's keras_history must be [layer, node, tensor]");
  return {*as_text((*l)[0]), std::get<std::int64_t>((*l)[1].value), std::get<std::int64_t>((*l)[2].value)};
}

CallOf call_of(const ConfigValue& node, Reader& r, const std::string& where) {
  CallOf call;
  auto tensor_ref = [&](const ConfigValue& t) {
    call.refs.push_back(history_of(t, where));
    if (call.refs.size() == 1) {
      const ConfigMap& c = config_of(*as_map(t));
      if (const ConfigValue* d = c.find("dtype"); d && as_text(*d)) call.first_dtype = *as_text(*d);
    }
    call.args.push_back(ConfigValue(static_cast<std::int64_t>(call.refs.size() - 1)));
  };
  auto constant = [&](const ConfigValue& v) {
    std::string key = "keras_constants/" + std::to_string(r.next_constant++);
    // Made later, in the dtype of the node's first tensor input (Keras' weak typing of numbers).
    ConfigMap c;
    c.set("constant", key);
    c.set("value", v);
    call.args.push_back(c);
  };
  if (const ConfigList* legacy = as_list(node)) {  // Keras 2
    for (const auto& e : *legacy) {
      const ConfigList* ref = as_list(e);
      if (!ref || ref->size() < 3 || !as_text((*ref)[0]) || !std::get_if<std::int64_t>(&(*ref)[1].value) ||
          !std::get_if<std::int64_t>(&(*ref)[2].value))
        throw Error(where + ": a Keras 2 node input must be [layer, node, tensor, kwargs]");
      call.refs.emplace_back(*as_text((*ref)[0]), std::get<std::int64_t>((*ref)[1].value), std::get<std::int64_t>((*ref)[2].value));
      call.args.push_back(ConfigValue(static_cast<std::int64_t>(call.refs.size() - 1)));
      if (ref->size() > 3)
        if (const ConfigMap* kw = as_map((*ref)[3]); kw && kw->has_value("training")) call.training = kw->flag("training");
    }
    call.list_call = call.refs.size() > 1;
    return call;
  }
  const ConfigMap* m = as_map(node);
  if (!m) throw Error(where + ": a node must be {args, kwargs}");
  const ConfigValue* args = m->find("args");
  const ConfigList* list = args ? as_list(*args) : nullptr;
  if (!list) throw Error(where + ": a node's args must be a list");
  for (const auto& a : *list) {
    if (is_keras_tensor(a)) {
      tensor_ref(a);
    } else if (const ConfigList* inner = as_list(a); inner && !inner->empty() && is_keras_tensor(inner->front())) {
      if (list->size() != 1) throw Error(ErrorCode::unimplemented, where + ": a list of tensors beside other arguments");
      for (const auto& t : *inner) {
        if (!is_keras_tensor(t)) throw Error(ErrorCode::unimplemented, where + ": a list mixing tensors and values");
        tensor_ref(t);
      }
      call.list_call = true;
    } else {
      constant(a);
    }
  }
  if (const ConfigValue* kw = m->find("kwargs"); kw && as_map(*kw)) {
    for (const auto& [k, v] : as_map(*kw)->items()) {
      if (k == "training" && std::get_if<bool>(&v.value)) call.training = std::get<bool>(v.value);
      else if (k == "mask" && v.is_null()) continue;
      else if (is_keras_tensor(v)) {  // MultiHeadAttention(query, value=...): a second input
        tensor_ref(v);
        call.list_call = true;
      } else if (!v.is_null()) {
        throw Error(ErrorCode::unimplemented, where + ": the call argument '" + k + "' is not supported when loading");
      }
    }
  }
  if (call.refs.size() > 1) call.list_call = true;
  return call;
}

Tensor constant_tensor(const ConfigValue& v, DType dtype, const std::string& where) {
  std::vector<double> values;
  std::vector<std::int64_t> dims;
  std::function<void(const ConfigValue&, std::size_t)> walk = [&](const ConfigValue& x, std::size_t axis) {
    if (const ConfigList* l = as_list(x)) {
      if (axis > 16) throw Error(where + ": a constant nested too deep");
      if (dims.size() == axis) dims.push_back(static_cast<std::int64_t>(l->size()));
      else if (dims[axis] != static_cast<std::int64_t>(l->size())) throw Error(where + ": a ragged constant");
      for (const auto& e : *l) walk(e, axis + 1);
      return;
    }
    if (axis != dims.size()) throw Error(where + ": a ragged constant");
    if (const auto* d = std::get_if<double>(&x.value)) values.push_back(*d);
    else if (const auto* i = std::get_if<std::int64_t>(&x.value)) values.push_back(static_cast<double>(*i));
    else if (const auto* b = std::get_if<bool>(&x.value)) values.push_back(*b ? 1.0 : 0.0);
    else throw Error(ErrorCode::unimplemented, where + ": an argument that is neither a tensor nor a number");
    if (values.size() > (1u << 20)) throw Error(where + ": a constant too large");
  };
  walk(v, 0);
  return cast(tensor(std::move(values), Shape(dims)), dtype);
}

DType dtype_by_name(const std::string& name, const std::string& where) {
  for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bool_, DType::uint8, DType::int8,
                  DType::int16, DType::bfloat16, DType::float16})
    if (name_of(d) == name) return d;
  throw Error(where + ": unsupported dtype '" + name + "'");
}

LayerConfig functional_from_keras(const ConfigMap& obj, Reader& r, int depth) {
  ConfigMap c = config_of(obj);
  const std::string name = c.has_value("name") ? c.text("name") : std::string("functional");
  c.where = r.where + ": Functional '" + name + "'";
  const std::string& w = c.where;
  ConfigList inputs, layers, nodes;
  // (layer name, call index) -> our slot (input index or node index).
  std::map<std::pair<std::string, std::int64_t>, std::int64_t> slot_of;
  std::int64_t slots = 0;
  struct Pending {
    std::string layer;
    std::int64_t call;
    std::int64_t our_layer;  // -1: an op
    std::string op;
    CallOf args;
  };
  std::vector<Pending> pending;
  std::set<std::string> names;
  for (const auto& lv : c.list("layers")) {
    const ConfigMap* l = as_map(lv);
    if (!l || !l->has("class_name") || !as_text(l->at("class_name"))) throw Error(w + ": layers must be Keras objects");
    std::string lname = l->has_value("name") ? l->text("name") : config_of(*l).has_value("name") ? config_of(*l).text("name") : "";
    if (lname.empty()) throw Error(w + ": a layer without a name");
    if (!names.insert(lname).second) throw Error(w + ": two layers are named '" + lname + "'");
    const std::string& cls = l->text("class_name");
    if (cls == "InputLayer") {
      InputOf in = input_of(*l, w + " InputLayer '" + lname + "'");
      ConfigMap i;
      i.set("name", lname);
      i.set("dtype", in.dtype);
      i.set("shape", shape_value(in.shape));
      inputs.push_back(std::move(i));
      slot_of[{lname, 0}] = slots++;
      continue;
    }
    const ConfigValue* inbound = l->find("inbound_nodes");
    const ConfigList* calls = inbound ? as_list(*inbound) : nullptr;
    if (!calls) throw Error(w + ": layer '" + lname + "' has no inbound_nodes");
    std::int64_t our_layer = -1;
    std::string op;
    // A Keras operation: its module says so; legacy .h5 files drop the module, and then only its
    // config tells it from the merge layer of the same name (an operation's config is its name).
    const ConfigMap& lconfig = config_of(*l);
    bool legacy_op = !l->find("module") && lconfig.size() == 1 && lconfig.has("name");
    if (const char* o = op_by_keras(cls); o && (legacy_op || (l->find("module") && as_text(l->at("module")) &&
                                                               l->text("module").rfind("keras.src.ops", 0) == 0))) {
      op = o;
    } else if (l->find("module") && as_text(l->at("module")) && l->text("module").rfind("keras.src.ops", 0) == 0) {
      throw Error(ErrorCode::unimplemented, w + ": the Keras operation '" + cls + "' (layer '" + lname +
                                                "') has no eagerflow counterpart in .keras files yet");
    } else {
      LayerConfig lc = layer_from_keras(lv, r, depth + 1);
      ConfigMap entry;
      entry.set("class_name", lc.class_name);
      entry.set("config", lc.config);
      our_layer = static_cast<std::int64_t>(layers.size());
      layers.push_back(std::move(entry));
    }
    for (std::size_t k = 0; k < calls->size(); ++k)
      pending.push_back({lname, static_cast<std::int64_t>(k), our_layer, op,
                         call_of((*calls)[k], r, w + " layer '" + lname + "' call " + std::to_string(k))});
  }
  // Nodes in an order where every input is made before it is used (Keras lists layers in
  // creation order, which need not be the order of their calls).
  std::vector<bool> done(pending.size(), false);
  for (std::size_t made = 0; made < pending.size();) {
    bool progress = false;
    for (std::size_t i = 0; i < pending.size(); ++i) {
      if (done[i]) continue;
      Pending& p = pending[i];
      bool ready = true;
      for (const auto& [ln, call, t] : p.args.refs)
        if (!slot_of.count({ln, call})) ready = false;
      if (!ready) continue;
      ConfigList args;
      for (const auto& a : p.args.args) {
        if (const auto* ref = std::get_if<std::int64_t>(&a.value)) {
          const auto& [ln, call, t] = p.args.refs[static_cast<std::size_t>(*ref)];
          args.push_back(ConfigList{ConfigValue(slot_of.at({ln, call})), ConfigValue(t)});
        } else {
          const ConfigMap& k = *as_map(a);
          const std::string& key = k.text("constant");
          r.constants.emplace(key, constant_tensor(k.at("value"), dtype_by_name(p.args.first_dtype, w), w + " layer '" + p.layer + "'"));
          ConfigMap cref;
          cref.set("constant", key);
          args.push_back(cref);
        }
      }
      ConfigMap n;
      n.set("name", p.layer);
      if (p.our_layer >= 0) {
        n.set("layer", p.our_layer);
        n.set("list_call", p.args.list_call);
        n.set("multi_output", false);
        n.set("training", p.args.training ? ConfigValue(*p.args.training) : ConfigValue());
      } else {
        n.set("op", p.op);
        n.set("attrs", "");
      }
      n.set("args", std::move(args));
      nodes.push_back(std::move(n));
      slot_of[{p.layer, p.call}] = slots++;
      done[i] = true;
      ++made;
      progress = true;
    }
    if (!progress) throw Error(w + ": the layer graph refers to nodes that are never made (or forms a cycle)");
  }
  // Layers whose outputs are read at an index > 0 give several outputs.
  auto ref_of = [&](const ConfigValue& v) -> ConfigValue {
    const ConfigList* l = as_list(v);
    if (!l || l->size() < 3 || !as_text((*l)[0]) || !std::get_if<std::int64_t>(&(*l)[1].value) ||
        !std::get_if<std::int64_t>(&(*l)[2].value))
      throw Error(w + ": an input or output layer must be [layer, node, tensor]");
    auto it = slot_of.find({*as_text((*l)[0]), std::get<std::int64_t>((*l)[1].value)});
    if (it == slot_of.end()) throw Error(w + ": output layer '" + *as_text((*l)[0]) + "' is not in the graph");
    return ConfigList{ConfigValue(it->second), (*l)[2]};
  };
  ConfigList outputs, output_names;
  bool named = false;
  const ConfigValue& out_v = c.at("output_layers");
  if (const ConfigMap* by_name = as_map(out_v)) {
    named = true;
    for (const auto& [k, v] : by_name->items()) {
      outputs.push_back(ref_of(v));
      output_names.push_back(k);
    }
  } else if (const ConfigList* l = as_list(out_v); l && !l->empty() && as_text(l->front())) {
    outputs.push_back(ref_of(out_v));  // one output written as [layer, node, tensor]
  } else if (l) {
    for (const auto& v : *l) outputs.push_back(ref_of(v));
  } else {
    throw Error(w + ": output_layers must be a list or a map");
  }
  // Keras' own output names: the layers'. eagerflow's defaults are the same, deduplicated.
  if (!named) {
    std::map<std::string, int> seen;
    for (const auto& o : outputs) {
      std::int64_t slot = std::get<std::int64_t>(as_list(o)->front().value);
      std::string base;
      for (const auto& [key, s] : slot_of)
        if (s == slot) base = key.first;
      int n = seen[base]++;
      output_names.push_back(n == 0 ? base : base + "_" + std::to_string(n));
    }
  }
  // Multi-output layer calls: any reference with tensor index > 0.
  auto mark_multi = [&](const ConfigValue& ref) {
    std::int64_t slot = std::get<std::int64_t>(as_list(ref)->front().value);
    std::int64_t t = std::get<std::int64_t>((*as_list(ref))[1].value);
    std::int64_t first_node = static_cast<std::int64_t>(inputs.size());
    if (t > 0 && slot >= first_node) {
      auto& n = std::get<ConfigMap>(nodes[static_cast<std::size_t>(slot - first_node)].value);
      if (n.has("layer")) n.set("multi_output", true);
    }
  };
  for (const auto& nv : nodes)
    for (const auto& a : as_map(nv)->list("args"))
      if (as_list(a)) mark_multi(a);
  for (const auto& o : outputs) mark_multi(o);
  // The input order is input_layers' (Keras lists InputLayers among the layers in any order).
  if (const ConfigValue* il = c.find("input_layers"); il && as_list(*il)) {
    std::vector<std::string> order;
    const ConfigList& l = *as_list(*il);
    if (!l.empty() && as_text(l.front())) order.push_back(*as_text(l.front()));
    else
      for (const auto& e : l)
        if (const ConfigList* ref = as_list(e); ref && !ref->empty() && as_text(ref->front())) order.push_back(*as_text(ref->front()));
    if (order.size() == inputs.size()) {
      ConfigList sorted;
      for (const auto& n : order)
        for (const auto& in : inputs)
          if (as_map(in)->text("name") == n) sorted.push_back(in);
      if (sorted.size() == inputs.size() && sorted != inputs) {
        // Our node references count inputs by position: renumber them.
        std::map<std::int64_t, std::int64_t> moved;
        for (std::size_t i = 0; i < inputs.size(); ++i)
          for (std::size_t j = 0; j < sorted.size(); ++j)
            if (as_map(inputs[i])->text("name") == as_map(sorted[j])->text("name")) moved[static_cast<std::int64_t>(i)] = static_cast<std::int64_t>(j);
        auto renumber = [&](ConfigValue& ref) {
          if (ConfigList* rl = std::get_if<ConfigList>(&ref.value)) {
            std::int64_t s = std::get<std::int64_t>(rl->front().value);
            if (auto it = moved.find(s); it != moved.end()) rl->front() = ConfigValue(it->second);
          }
        };
        for (auto& nv : nodes) {
          ConfigMap& n = std::get<ConfigMap>(nv.value);
          ConfigList args = n.list("args");
          for (auto& a : args) renumber(a);
          n.set("args", std::move(args));
        }
        for (auto& o : outputs) renumber(o);
        inputs = std::move(sorted);
      }
    }
  }
  LayerConfig out{"Functional", {}};
  out.config.set("name", name);
  out.config.set("trainable", c.has_value("trainable") ? c.flag("trainable") : true);
  out.config.set("inputs", std::move(inputs));
  out.config.set("layers", std::move(layers));
  out.config.set("nodes", std::move(nodes));
  out.config.set("outputs", std::move(outputs));
  out.config.set("output_names", std::move(output_names));
  out.config.set("named_outputs", named);
  return out;
}

// A Keras initializer object without parameters ({class_name: "GlorotUniform", config: {seed:
// null}}) by its name, the form every eagerflow layer takes; one with parameters stays an object.
ConfigMap plain_config_from_keras(const ConfigMap& config) {
  ConfigMap out = config;
  for (const auto& [k, v] : config.items()) {
    if (!ends_with(k, "_initializer")) continue;
    const ConfigMap* m = as_map(v);
    if (!m || !m->has("class_name") || !as_text(m->at("class_name"))) continue;
    bool plain = true;
    for (const auto& [ck, cv] : config_of(*m).items())
      if (!cv.is_null()) plain = false;
    if (plain) out.set(k, snake_case(m->text("class_name")));
  }
  return out;
}

LayerConfig layer_from_keras(const ConfigValue& v, Reader& r, int depth) {
  if (depth > kMaxDepth) throw Error(r.where + ": layers nested more than " + std::to_string(kMaxDepth) + " deep");
  const ConfigMap* obj = as_map(v);
  if (!obj || !obj->has("class_name") || !as_text(obj->at("class_name")))
    throw Error(r.where + ": a layer must be a Keras object {class_name, config}");
  const std::string cls = class_of(*obj);
  if (cls == "Sequential") return sequential_from_keras(*obj, r, depth);
  if (cls == "Functional" || cls == "Model") {
    const ConfigMap& c = config_of(*obj);
    if (c.has("layers") && c.has("output_layers")) return functional_from_keras(*obj, r, depth);
    throw Error(ErrorCode::unimplemented, r.where + ": '" + cls + "' is a subclassed Model without a layer graph; "
                                                    "eagerflow loads Sequential and functional models from .keras files");
  }
  ConfigMap config = plain_config_from_keras(config_of(*obj));
  // custom_objects={"MyLayer": MyLayer} registers the class name; Keras wrote "Custom>MyLayer".
  if (!nn::is_layer_registered(cls) && nn::is_layer_registered(obj->text("class_name"))) return {obj->text("class_name"), config};
  return {cls, config};
}

// ------------------------------------------------------------------ compile settings

const std::set<std::string>& flag_keys() {
  static const std::set<std::string> keys{"nesterov", "amsgrad", "centered", "relative_step", "exclude_embeddings", "use_ema"};
  return keys;
}

ConfigValue schedule_to_keras(const ConfigValue& lr) {
  const ConfigMap* m = as_map(lr);
  if (!m) return lr;
  ConfigMap c = m->map("config");
  return keras_object("keras.optimizers.schedules", m->text("class_name"), c);
}

ConfigMap optimizer_to_keras(const optim::Optimizer& opt) {
  ConfigValue ours = detail::optimizer_config(opt);
  const ConfigMap& m = *as_map(ours);
  const std::string& cls = m.text("class_name");
  ConfigMap c = m.map("config");
  ConfigMap out;
  out.set("name", opt.name());
  if (cls == "LossScaleOptimizer") {
    const auto& lso = dynamic_cast<const optim::LossScaleOptimizer&>(opt);
    out.set("inner_optimizer", optimizer_to_keras(*lso.inner_optimizer()));
    out.set("initial_scale", c.at("initial_scale"));
    out.set("dynamic_growth_steps", c.at("dynamic_growth_steps"));
    return keras_object("keras.optimizers", cls, out);
  }
  for (const auto& [k, v] : c.items()) {
    if (k == "learning_rate") out.set(k, schedule_to_keras(v));
    else if (flag_keys().count(k) && std::get_if<double>(&v.value)) out.set(k, std::get<double>(v.value) != 0.0);
    else out.set(k, v);
  }
  for (const char* k : {"weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "ema_overwrite_frequency"})
    if (!out.has(k)) out.set(k, nullptr);
  if (!out.has("use_ema")) out.set("use_ema", false);
  if (!out.has("ema_momentum")) out.set("ema_momentum", 0.99);
  out.set("loss_scale_factor", nullptr);
  out.set("gradient_accumulation_steps", nullptr);
  return keras_object("keras.optimizers", cls, out);
}

ConfigValue loss_to_keras(const train::Loss& loss, const std::string& where) {
  ConfigValue ours = detail::loss_config(loss, where);
  const ConfigMap& m = *as_map(ours);
  if (m.size() == 1) return m.text("name");  // by name, as compile(loss="mse") leaves it
  ConfigMap c;
  for (const auto& [k, v] : m.items()) c.set(k, v);
  c.set("reduction", "sum_over_batch_size");
  return keras_object("keras.losses", camel_case(m.text("name")), c);
}

ConfigValue metric_to_keras(const train::MetricRef& ref) {
  if (const auto* s = std::get_if<std::string>(&ref.value)) return *s;
  return std::get<std::shared_ptr<train::Metric>>(ref.value)->name();
}

train::Loss loss_from_keras(const ConfigValue& v, const std::string& where) {
  if (const std::string* s = as_text(v)) return train::loss_by_name(*s);
  const ConfigMap* m = as_map(v);
  if (!m || !m->has("class_name")) throw Error(where + ": a loss must be a name or a Keras object");
  const std::string cls = class_of(*m);
  ConfigMap ours;
  std::string name = snake_case(cls);
  ours.set("name", name);
  const ConfigMap& c = config_of(*m);
  for (const char* k : {"from_logits", "delta", "axis"})
    if (const ConfigValue* x = c.find(k); x && !x->is_null()) ours.set(k, *x);
  if ((name == "binary_crossentropy" || name == "categorical_crossentropy" || name == "sparse_categorical_crossentropy") &&
      !ours.has("from_logits"))
    ours.set("from_logits", false);
  for (const char* k : {"label_smoothing"})
    if (const ConfigValue* x = c.find(k); x && std::get_if<double>(&x->value) && std::get<double>(x->value) != 0.0)
      throw Error(ErrorCode::unimplemented, where + ": loss " + cls + " with " + k + " is not restored by this version");
  try {
    return detail::loss_from_config(ours, where);
  } catch (const Error&) {
    throw Error(ErrorCode::unimplemented, where + ": eagerflow has no loss '" + cls + "'");
  }
}

train::MetricRef metric_from_keras(const ConfigValue& v, const std::string& where) {
  if (const std::string* s = as_text(v)) return *s;
  const ConfigMap* m = as_map(v);
  if (!m || !m->has("class_name")) throw Error(where + ": a metric must be a name or a Keras object");
  return snake_case(class_of(*m));
}

double real_of(const ConfigValue& v, const std::string& where) {
  if (const auto* d = std::get_if<double>(&v.value)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return static_cast<double>(*i);
  throw Error(where + ": expected a number");
}

std::shared_ptr<optim::Optimizer> optimizer_from_keras(const ConfigValue& v, const std::string& where, int depth) {
  if (depth > 4) throw Error(where + ": optimizers nested too deep");
  if (const std::string* s = as_text(v)) return optim::optimizer_by_name(*s);
  const ConfigMap* m = as_map(v);
  if (!m || !m->has("class_name")) throw Error(where + ": the optimizer must be a name or a Keras object");
  const std::string cls = class_of(*m);
  ConfigMap c = config_of(*m);
  c.where = where + " optimizer (" + cls + ")";
  ConfigMap ours_config;
  if (cls == "LossScaleOptimizer") {
    // Our loader takes the inner optimizer as our config: translate it first.
    auto inner = optimizer_from_keras(c.at("inner_optimizer"), c.where, depth + 1);
    double growth = c.has_value("dynamic_growth_steps") ? real_of(c.at("dynamic_growth_steps"), c.where) : 2000;
    double scale = c.has_value("initial_scale") ? real_of(c.at("initial_scale"), c.where) : 32768.0;
    if (!(growth >= 1 && growth <= 9.0e18)) throw Error(c.where + ": dynamic_growth_steps must be >= 1");
    return std::make_shared<optim::LossScaleOptimizer>(inner, scale, static_cast<std::int64_t>(growth));
  }
  for (const auto& [k, x] : c.items()) {
    // Keras 2's and TF 2.11's optimizer configs carry settings with no effect on the update.
    if (k == "name" || x.is_null() || k == "jit_compile" || k == "is_legacy_optimizer") continue;
    if (k == "decay" && real_of(x, c.where) == 0.0) continue;
    if (k == "decay") throw Error(ErrorCode::unimplemented, c.where + ": Keras 2's learning-rate decay is not supported");
    if (k == "loss_scale_factor" || k == "gradient_accumulation_steps")
      throw Error(ErrorCode::unimplemented, c.where + ": " + k + " is not supported by eagerflow's optimizers");
    if (k == "learning_rate" || k == "lr") {
      if (const ConfigMap* s = as_map(x)) {
        ConfigMap sched;
        sched.set("class_name", class_of(*s));
        sched.set("config", config_of(*s));
        ours_config.set("learning_rate", sched);
      } else {
        ours_config.set("learning_rate", real_of(x, c.where));
      }
      continue;
    }
    if (k == "use_ema" && std::get_if<bool>(&x.value) && !std::get<bool>(x.value)) continue;
    // Keras' variants that are off by default and that eagerflow's optimizers do not have.
    if ((k == "amsgrad" || k == "centered") && std::get_if<bool>(&x.value)) {
      if (!std::get<bool>(x.value)) continue;
      throw Error(ErrorCode::unimplemented, c.where + ": " + k + "=True is not supported by eagerflow's " + cls);
    }
    if ((k == "ema_momentum" || k == "ema_overwrite_frequency") && !(c.has_value("use_ema") && c.flag("use_ema"))) continue;
    // eagerflow's optimizer configs hold flags as booleans only where its loader reads them so.
    static const std::set<std::string> bool_keys{"nesterov", "relative_step", "exclude_embeddings", "use_ema"};
    if (const bool* b = std::get_if<bool>(&x.value)) {
      if (bool_keys.count(k)) ours_config.set(k, *b);
      else ours_config.set(k, *b ? 1.0 : 0.0);
    }
    else ours_config.set(k, real_of(x, c.where + " " + k));
  }
  ConfigMap ours;
  ours.set("class_name", cls);
  ours.set("config", ours_config);
  return detail::optimizer_from_config(ours, where);
}

}  // namespace

nn::ConfigMap model_to_keras(const nn::Layer& model, const nn::LayerConfig& ours, const std::vector<io::NamedTensor>& constants) {
  std::map<std::string, Tensor> by_key;
  for (const auto& t : constants) by_key.emplace(t.name, t.value);
  return model_to_keras_at(model, ours, by_key, 0);
}

FromKeras model_from_keras(const nn::ConfigValue& keras, const std::string& where) {
  FromKeras out;
  Reader r{out.constants, where};
  out.config = layer_from_keras(keras, r, 0);
  if (const ConfigMap* obj = as_map(keras)) {
    if (out.config.class_name == "Sequential" && out.config.config.has_value("build_input")) {
      ConfigMap b = out.config.config.map("build_input");
      out.build_input = TensorSpec{dtype_by_name(b.text("dtype"), where), shape_of(b.at("shape"), where), {}};
    } else if (out.config.class_name != "Functional" && obj->has_value("build_config")) {
      const ConfigMap& b = obj->map("build_config");
      if (const ConfigValue* s = b.find("input_shape"); s && as_list(*s) && !as_list(*s)->empty() &&
                                                          !as_list(as_list(*s)->front()))
        out.build_input = TensorSpec{DType::float32, shape_of(*s, where), {}};
    }
  }
  return out;
}

nn::ConfigMap compile_to_keras(const train::CompileOptions& o, const optim::Optimizer& optimizer) {
  const std::string where = "save_model: compile settings";
  ConfigMap c;
  c.set("optimizer", optimizer_to_keras(optimizer));
  if (!o.loss_by_output.empty()) {
    ConfigMap by;
    for (const auto& [k, l] : o.loss_by_output) by.set(k, loss_to_keras(l.loss, where));
    c.set("loss", by);
  } else if (o.loss.size() == 1) {
    c.set("loss", loss_to_keras(o.loss.front().loss, where));
  } else if (!o.loss.empty()) {
    ConfigList l;
    for (const auto& x : o.loss) l.push_back(loss_to_keras(x.loss, where));
    c.set("loss", l);
  } else {
    c.set("loss", nullptr);
  }
  if (!o.loss_weights_by_output.empty()) {
    ConfigMap by;
    for (const auto& [k, w] : o.loss_weights_by_output) by.set(k, w);
    c.set("loss_weights", by);
  } else if (!o.loss_weights.empty()) {
    ConfigList l;
    for (double w : o.loss_weights) l.emplace_back(w);
    c.set("loss_weights", l);
  } else {
    c.set("loss_weights", nullptr);
  }
  auto metrics = [&](const std::vector<train::MetricRef>& flat, const std::map<std::string, std::vector<train::MetricRef>>& by) -> ConfigValue {
    if (!by.empty()) {
      ConfigMap m;
      for (const auto& [k, ms] : by) {
        ConfigList l;
        for (const auto& x : ms) l.push_back(metric_to_keras(x));
        m.set(k, l);
      }
      return m;
    }
    if (flat.empty()) return nullptr;
    ConfigList l;
    for (const auto& x : flat) l.push_back(metric_to_keras(x));
    return l;
  };
  c.set("metrics", metrics(o.metrics, o.metrics_by_output));
  c.set("weighted_metrics", metrics(o.weighted_metrics, o.weighted_metrics_by_output));
  c.set("run_eagerly", o.run_eagerly);
  c.set("steps_per_execution", 1);
  c.set("jit_compile", false);
  return c;
}

train::CompileOptions compile_from_keras(const nn::ConfigMap& c_in, const std::string& where_in) {
  ConfigMap c = c_in;
  c.where = where_in + " compile_config";
  const std::string& w = c.where;
  train::CompileOptions o;
  if (!c.has_value("optimizer")) throw Error(w + ": no optimizer");
  o.optimizer = optimizer_from_keras(c.at("optimizer"), w, 0);
  if (c.has_value("loss")) {
    const ConfigValue& l = c.at("loss");
    if (const ConfigMap* m = as_map(l); m && !m->has("class_name")) {
      for (const auto& [k, x] : m->items())
        if (!x.is_null()) o.loss_by_output.emplace(k, loss_from_keras(x, w + " loss '" + k + "'"));
    } else if (const ConfigList* list = as_list(l)) {
      for (const auto& x : *list) o.loss.emplace_back(loss_from_keras(x, w + " loss"));
    } else {
      o.loss.emplace_back(loss_from_keras(l, w + " loss"));
    }
  }
  if (c.has_value("loss_weights")) {
    const ConfigValue& lw = c.at("loss_weights");
    if (const ConfigMap* m = as_map(lw))
      for (const auto& [k, x] : m->items()) o.loss_weights_by_output[k] = real_of(x, w);
    else if (const ConfigList* l = as_list(lw))
      for (const auto& x : *l) o.loss_weights.push_back(real_of(x, w));
  }
  auto metrics = [&](const char* key, std::vector<train::MetricRef>& flat, std::map<std::string, std::vector<train::MetricRef>>& by) {
    if (!c.has_value(key)) return;
    const ConfigValue& v = c.at(key);
    auto list_into = [&](const ConfigValue& x, std::vector<train::MetricRef>& dst) {
      if (const ConfigList* l = as_list(x))
        for (const auto& e : *l) {
          if (e.is_null()) continue;
          if (as_list(e)) throw Error(ErrorCode::unimplemented, w + ": " + key + " as a list per output (use a dict by output name)");
          dst.push_back(metric_from_keras(e, w));
        }
      else if (!x.is_null())
        dst.push_back(metric_from_keras(x, w));
    };
    if (const ConfigMap* m = as_map(v); m && !m->has("class_name"))
      for (const auto& [k, x] : m->items()) list_into(x, by[k]);
    else
      list_into(v, flat);
  };
  metrics("metrics", o.metrics, o.metrics_by_output);
  metrics("weighted_metrics", o.weighted_metrics, o.weighted_metrics_by_output);
  if (c.has_value("run_eagerly")) o.run_eagerly = c.flag("run_eagerly");
  return o;
}

}  // namespace ef::io::keras
