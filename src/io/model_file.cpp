// Whole models in one file (eagerflow/saving/model.h); the format is docs/efmodel_format.md:
//
//   0   8  magic "EFMODEL\0"
//   8   4  format version (uint32, little-endian)
//   12  4  flags (0)
//   16  8  header length H (uint64)
//   24  8  payload length P (uint64)
//   32  8  FNV-1a 64 of the H + P bytes that follow
//   40  H  the header: JSON (architecture, compile settings)
//   40+H P the payload: safetensors (weights, constants of op nodes, optimizer state, random state)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12: a false positive on copies of std::variant
#endif
#include "eagerflow/saving/model.h"
#include "eagerflow/saving/keras_weights.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <typeinfo>

#include "eagerflow/core/error.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/nn/layer_name.h"
#include "eagerflow/optim/keras_optimizers.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/ops/random.h"
#include "eagerflow/trace/context.h"
#include "eagerflow/train/checkpoint.h"
#include "eagerflow/train/distribution.h"
#include "eagerflow/train/functional.h"
#include "io/fnv1a.h"
#include "io/json.h"
#include "io/keras_config.h"
#include "io/keras_file.h"
#include "io/model_file_parts.h"
#include "io/op_codec.h"
#include "io/zip_archive.h"

namespace ef {
namespace {

using nn::ConfigList;
using nn::ConfigMap;
using nn::ConfigValue;
using nn::LayerConfig;

constexpr char kMagic[8] = {'E', 'F', 'M', 'O', 'D', 'E', 'L', '\0'};
constexpr std::size_t kPreamble = 40;
constexpr std::uint64_t kMaxHeader = std::uint64_t{1} << 28;  // 256 MiB of JSON

// Version 1 files were checksummed from a mistyped offset basis (a digit missing): version 2
// uses FNV-1a's own, and version 1 files are still read with theirs.
constexpr std::uint32_t kFirstStandardFnvVersion = 2;
std::uint64_t checksum(const std::byte* p, std::size_t n, std::uint64_t version) {
  return io::fnv1a(p, n, version < kFirstStandardFnvVersion ? io::kLegacyFnvBasis : io::kFnvBasis);
}

void put_u32(std::vector<std::byte>& b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
void put_u64(std::vector<std::byte>& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<std::size_t>(i)] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
std::uint64_t get_u(const std::vector<std::byte>& b, std::size_t at, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

// ---------------------------------------------------------------- config values <-> JSON

void write_json(const ConfigValue& v, std::string& out) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) out += "null";
        else if constexpr (std::is_same_v<T, bool>) out += x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>) out += std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) out += io::json_real(x);
        else if constexpr (std::is_same_v<T, std::string>) out += io::json_quote(x);
        else if constexpr (std::is_same_v<T, ConfigList>) {
          out += '[';
          for (std::size_t i = 0; i < x.size(); ++i) {
            if (i) out += ',';
            write_json(x[i], out);
          }
          out += ']';
        } else {
          out += '{';
          bool first = true;
          for (const auto& [k, e] : x.items()) {
            if (!first) out += ',';
            first = false;
            out += io::json_quote(k);
            out += ':';
            write_json(e, out);
          }
          out += '}';
        }
      },
      v.value);
}

ConfigValue from_json(const io::Json& j) {
  return std::visit(
      [&](const auto& x) -> ConfigValue {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<io::Json::Array>>) {
          ConfigList l;
          l.reserve(x->size());
          for (const auto& e : *x) l.push_back(from_json(e));
          return l;
        } else if constexpr (std::is_same_v<T, std::shared_ptr<io::Json::Object>>) {
          ConfigMap m;
          for (const auto& [k, e] : *x) m.set(k, from_json(e));
          return m;
        } else {
          return ConfigValue(x);
        }
      },
      j.value);
}

ConfigValue layer_value(const LayerConfig& c) {
  ConfigMap m;
  m.set("class_name", c.class_name);
  m.set("config", c.config);
  return m;
}

LayerConfig layer_config_from(const ConfigValue& v, const std::string& where) {
  const auto* m = std::get_if<ConfigMap>(&v.value);
  if (!m) throw Error(where + ": a layer must be a map {class_name, config}");
  ConfigMap c = *m;
  c.where = where;
  return {c.text("class_name"), c.map("config")};
}

ConfigValue shape_value(const Shape& s) {
  ConfigList l;
  for (std::int64_t d : s.dims()) l.push_back(d == kDynamic ? ConfigValue() : ConfigValue(d));
  return l;
}

Shape shape_from(const ConfigMap& c, std::string_view key) {
  std::vector<std::int64_t> dims;
  for (const auto& v : c.list(key)) {
    if (v.is_null()) {
      dims.push_back(kDynamic);
      continue;
    }
    const auto* i = std::get_if<std::int64_t>(&v.value);
    if (!i || *i < 0 || *i > (std::int64_t{1} << 40)) throw Error(c.where + ": '" + std::string(key) + "' must list dims (>= 0) or null");
    dims.push_back(*i);
  }
  if (dims.size() > 64) throw Error(c.where + ": '" + std::string(key) + "' has too many dims");
  return Shape(dims);
}

DType dtype_from(const ConfigMap& c, std::string_view key) {
  const std::string& name = c.text(key);
  for (DType d : {DType::float32, DType::float64, DType::int32, DType::int64, DType::bool_, DType::uint8, DType::int8,
                  DType::int16, DType::uint16, DType::uint32, DType::uint64, DType::string, DType::complex64,
                  DType::complex128, DType::bfloat16, DType::float16})
    if (name_of(d) == name) return d;
  throw Error(c.where + ": unknown dtype '" + name + "'");
}

// ---------------------------------------------------------------- model configs

// Tensors that configs refer to (constant inputs of op nodes), gathered while saving and
// looked up while loading.
struct Tensors {
  std::vector<io::NamedTensor> saved;
  const std::map<std::string, Tensor>* loaded = nullptr;
  const LoadModelOptions* options = nullptr;
};

// A model with a layer graph is saved as a functional model unless its class gives a config of
// its own (a Python Model(inputs, outputs) is one; a C++ subclass's overridden steps are not saved).
bool plain_functional(const train::Model& m) {
  if (!m.functional_graph()) return false;
  if (typeid(m) == typeid(train::Functional) || typeid(m) == typeid(train::Model)) return true;
  return !m.get_config().has_value();
}

LayerConfig config_of(const nn::Layer& layer, Tensors& tensors, int depth);

std::string label(const nn::Layer& l) { return "layer '" + l.name() + "' (" + l.type_name() + ")"; }

// The output names FunctionalGraph gives when none are given.
std::vector<std::string> default_output_names(const train::FunctionalGraph& g,
                                              const std::vector<std::pair<const KerasNode*, int>>& outs) {
  std::vector<std::string> names;
  std::map<std::string, int> seen;
  for (const auto& [node, index] : outs) {
    std::string base = node->name;
    if (node->outputs.size() > 1) base += "_" + std::to_string(index);
    int n = seen[base]++;
    names.push_back(n == 0 ? base : base + "_" + std::to_string(n));
  }
  return names;
}

LayerConfig functional_config(const train::Model& m, Tensors& tensors, int depth) {
  const train::FunctionalGraph& g = *m.functional_graph();
  LayerConfig c{"Functional", {}};
  c.config.set("name", m.name());
  c.config.set("trainable", m.trainable());
  std::map<const KerasNode*, int> node_index;
  std::vector<std::pair<const KerasNode*, int>> slot_node;  // slot -> (node, output)
  ConfigList inputs;
  for (const auto& in : g.input_nodes()) {
    node_index[in.get()] = static_cast<int>(node_index.size());
    slot_node.emplace_back(in.get(), 0);
    ConfigMap i;
    i.set("name", in->name);
    i.set("dtype", std::string(name_of(in->outputs[0].dtype)));
    i.set("shape", shape_value(in->outputs[0].shape));
    inputs.emplace_back(std::move(i));
  }
  std::map<const nn::Layer*, int> layer_index;
  ConfigList layers, nodes;
  for (const auto& step : g.steps()) {
    const KerasNode& node = *step.node;
    int index = static_cast<int>(node_index.size());
    node_index[&node] = index;
    for (std::size_t k = 0; k < node.outputs.size(); ++k) slot_node.emplace_back(&node, static_cast<int>(k));
    ConfigMap n;
    n.set("name", node.name);
    if (node.kind == KerasNode::Kind::layer) {
      auto [it, fresh] = layer_index.emplace(node.layer.get(), static_cast<int>(layer_index.size()));
      if (fresh) layers.push_back(layer_value(config_of(*node.layer, tensors, depth + 1)));
      n.set("layer", it->second);
      n.set("list_call", node.list_call);
      n.set("multi_output", node.multi_output);
      n.set("training", node.training ? ConfigValue(*node.training) : ConfigValue());
    } else {
      const Primitive& op = *node.op;
      if (!io::can_decode(op.name()))
        throw Error(ErrorCode::unimplemented, "model '" + m.name() + "': op '" + op.name() +
                                                  "' cannot be saved: register it with ef::register_op");
      n.set("op", op.name());
      n.set("attrs", op.attrs());
    }
    ConfigList args;
    for (std::size_t j = 0; j < node.inputs.size(); ++j) {
      const Tensor& in = node.inputs[j];
      if (in.is_keras_tensor()) {
        args.push_back(ConfigList{ConfigValue(node_index.at(keras_node_of(in).get())), ConfigValue(keras_output_index(in))});
      } else {
        std::string key = "constants/" + std::to_string(tensors.saved.size());
        tensors.saved.push_back({key, in});
        ConfigMap constant;
        constant.set("constant", key);
        args.push_back(std::move(constant));
      }
    }
    n.set("args", std::move(args));
    nodes.push_back(std::move(n));
  }
  ConfigList outputs;
  std::vector<std::pair<const KerasNode*, int>> outs;
  for (int slot : g.output_slots()) {
    auto [node, k] = slot_node.at(static_cast<std::size_t>(slot));
    outs.emplace_back(node, k);
    outputs.push_back(ConfigList{ConfigValue(node_index.at(node)), ConfigValue(k)});
  }
  c.config.set("inputs", std::move(inputs));
  c.config.set("layers", std::move(layers));
  c.config.set("nodes", std::move(nodes));
  c.config.set("outputs", std::move(outputs));
  ConfigList names;
  for (const auto& n : g.output_names()) names.emplace_back(n);
  c.config.set("output_names", std::move(names));
  c.config.set("named_outputs", g.output_names() != default_output_names(g, outs));
  return c;
}

std::optional<TensorSpec> build_spec(const nn::Layer& layer) {
  if (auto s = layer.save_spec()) return s;
  if (const auto* seq = dynamic_cast<const train::Sequential*>(&layer); seq && !seq->stack().empty())
    return seq->stack().front()->save_spec();
  return std::nullopt;
}

LayerConfig config_of(const nn::Layer& layer, Tensors& tensors, int depth) {
  if (depth > 8) throw Error("save_model: models nested more than 8 deep");
  if (const auto* m = dynamic_cast<const train::Model*>(&layer)) {
    if (plain_functional(*m)) return functional_config(*m, tensors, depth);
    if (const auto* seq = dynamic_cast<const train::Sequential*>(m); seq && typeid(*seq) == typeid(train::Sequential)) {
      LayerConfig c{"Sequential", {}};
      c.config.set("name", seq->name());
      c.config.set("trainable", seq->trainable());
      ConfigList layers;
      for (const auto& l : seq->stack()) layers.push_back(layer_value(config_of(*l, tensors, depth + 1)));
      c.config.set("layers", std::move(layers));
      ConfigValue build;
      if (auto spec = build_spec(*seq); spec && seq->built()) {
        ConfigMap b;
        b.set("dtype", std::string(name_of(spec->dtype)));
        b.set("shape", shape_value(spec->shape));
        build = std::move(b);
      }
      c.config.set("build_input", std::move(build));
      return c;
    }
  }
  std::optional<LayerConfig> c = layer.get_config();  // may throw, naming what cannot be saved
  if (!c) {
    std::string cls = layer.type_name();
    if (dynamic_cast<const train::Model*>(&layer))
      throw Error(ErrorCode::unimplemented,
                  "save_model: model '" + layer.name() + "' is a subclassed Model (" + cls +
                      ") without a config: override get_config() and register the class with ef::register_layer<" +
                      cls + ">(\"" + cls + "\", factory) (or save its weights with save_weights)");
    throw Error(ErrorCode::unimplemented, "save_model: " + label(layer) + " has no config: override get_config() in " +
                                              cls + " and register the class with ef::register_layer<" + cls + ">(\"" +
                                              cls + "\", factory)");
  }
  if (!nn::is_layer_registered(c->class_name))
    throw Error("save_model: " + label(layer) + " gives the config class '" + c->class_name +
                "', which no factory is registered for, so the file could not be loaded: register it with "
                "ef::register_layer<" + layer.type_name() + ">(\"" + c->class_name + "\", factory)");
  return *c;
}

std::shared_ptr<nn::Layer> rebuild(const LayerConfig& c, const Tensors& tensors, int depth, const std::string& where);

std::shared_ptr<nn::Layer> rebuild_functional(const LayerConfig& lc, const Tensors& tensors, int depth, const std::string& where) {
  ConfigMap c = lc.config;
  c.where = where + ": model '" + (c.has_value("name") ? c.text("name") : std::string("?")) + "' (Functional)";
  const std::string w = c.where;
  std::vector<std::shared_ptr<nn::Layer>> layers;
  for (const auto& l : c.list("layers")) layers.push_back(rebuild(layer_config_from(l, w + " layer"), tensors, depth + 1, where));
  std::vector<std::vector<Tensor>> node_outputs;
  std::vector<Tensor> inputs;
  for (const auto& i : c.list("inputs")) {
    const auto* im = std::get_if<ConfigMap>(&i.value);
    if (!im) throw Error(w + ": inputs must be maps");
    ConfigMap in = *im;
    in.where = w + " input";
    Shape s = shape_from(in, "shape");
    if (s.rank() < 1) throw Error(w + ": an input needs its batch axis");
    std::optional<std::int64_t> batch;
    if (s[0] != kDynamic) batch = s[0];
    std::vector<std::int64_t> dims = s.dims();
    dims.erase(dims.begin());
    Tensor t = train::Input(Shape(dims), dtype_from(in, "dtype"), in.text("name"), batch);
    inputs.push_back(t);
    node_outputs.push_back({t});
  }
  auto arg = [&](const ConfigValue& a) -> Tensor {
    if (const auto* m = std::get_if<ConfigMap>(&a.value)) {
      ConfigMap k = *m;
      k.where = w;
      const std::string& key = k.text("constant");
      if (tensors.loaded)
        if (auto it = tensors.loaded->find(key); it != tensors.loaded->end()) return it->second;
      throw Error(w + ": the constant '" + key + "' is not in the file");
    }
    const auto* l = std::get_if<ConfigList>(&a.value);
    const std::int64_t* n = l && l->size() == 2 ? std::get_if<std::int64_t>(&(*l)[0].value) : nullptr;
    const std::int64_t* k = l && l->size() == 2 ? std::get_if<std::int64_t>(&(*l)[1].value) : nullptr;
    if (!n || !k) throw Error(w + ": a node input must be [node, output] or {constant}");
    if (*n < 0 || *n >= static_cast<std::int64_t>(node_outputs.size()))
      throw Error(w + ": a node input refers to node " + std::to_string(*n) + ", not an earlier one");
    const auto& outs = node_outputs[static_cast<std::size_t>(*n)];
    if (*k < 0 || *k >= static_cast<std::int64_t>(outs.size()))
      throw Error(w + ": node " + std::to_string(*n) + " has no output " + std::to_string(*k));
    return outs[static_cast<std::size_t>(*k)];
  };
  for (const auto& nv : c.list("nodes")) {
    const auto* nm = std::get_if<ConfigMap>(&nv.value);
    if (!nm) throw Error(w + ": nodes must be maps");
    ConfigMap node = *nm;
    node.where = w + " node " + std::to_string(node_outputs.size());
    std::vector<Tensor> args;
    for (const auto& a : node.list("args")) args.push_back(arg(a));
    std::vector<Tensor> outs;
    if (node.has("layer")) {
      std::int64_t li = node.integer("layer");
      if (li < 0 || li >= static_cast<std::int64_t>(layers.size())) throw Error(node.where + ": no layer " + std::to_string(li));
      nn::Layer& layer = *layers[static_cast<std::size_t>(li)];
      std::optional<bool> training;
      if (node.has_value("training")) training = node.flag("training");
      if (node.flag("multi_output")) outs = layer.call_outputs(args, training);
      else if (node.flag("list_call")) outs = {layer(args, training)};
      else if (args.size() == 1) outs = {layer(args[0], training)};
      else throw Error(node.where + ": a single-input layer call with " + std::to_string(args.size()) + " inputs");
    } else {
      auto op = io::decode_op(node.text("op"), node.text("attrs"), node.where);
      outs = dispatch(*op, args);
    }
    for (const auto& t : outs)
      if (!t.is_keras_tensor()) throw Error(node.where + ": did not give a Keras tensor");
    node_outputs.push_back(std::move(outs));
  }
  std::vector<Tensor> outputs;
  for (const auto& o : c.list("outputs")) outputs.push_back(arg(o));
  std::vector<std::string> names;
  for (const auto& n : c.list("output_names")) {
    const auto* s = std::get_if<std::string>(&n.value);
    if (!s) throw Error(w + ": output_names must be text");
    names.push_back(*s);
  }
  if (names.size() != outputs.size()) throw Error(w + ": " + std::to_string(names.size()) + " output names for " +
                                                  std::to_string(outputs.size()) + " outputs");
  const std::string& name = c.text("name");
  if (tensors.options && tensors.options->make_model) {
    auto m = tensors.options->make_model("Functional", name);
    if (!m) throw Error(w + ": make_model returned no model");
    m->init_functional(inputs, outputs, c.flag("named_outputs") ? names : std::vector<std::string>{});
    return m;
  }
  if (!c.flag("named_outputs")) return std::make_shared<train::Functional>(inputs, outputs, name);
  if (std::is_sorted(names.begin(), names.end()) && std::set<std::string>(names.begin(), names.end()).size() == names.size()) {
    std::map<std::string, Tensor> by_name;
    for (std::size_t i = 0; i < names.size(); ++i) by_name.emplace(names[i], outputs[i]);
    return std::make_shared<train::Functional>(inputs, by_name, name);
  }
  auto m = std::make_shared<train::Model>(name);
  m->init_functional(inputs, outputs, names);
  return m;
}

// Builds `model` for one input of `spec` as Model::build does (a symbolic call), with its dtype.
void build_for(train::Model& model, const TensorSpec& spec) {
  trace::TraceContext ctx(model.name() + "/build", /*allow_variable_creation=*/true);
  trace::TraceScope scope(ctx);
  Tensor in = ctx.add_input(spec);
  model.call_outputs({in}, false);
}

std::shared_ptr<nn::Layer> rebuild(const LayerConfig& lc, const Tensors& tensors, int depth, const std::string& where) {
  if (depth > 8) throw Error(where + ": models nested more than 8 deep");
  std::shared_ptr<nn::Layer> out;
  if (lc.class_name == "Functional") {
    out = rebuild_functional(lc, tensors, depth, where);
  } else if (lc.class_name == "Sequential") {
    ConfigMap c = lc.config;
    c.where = where + ": model '" + (c.has_value("name") ? c.text("name") : std::string("?")) + "' (Sequential)";
    std::shared_ptr<train::Sequential> seq;
    if (tensors.options && tensors.options->make_model) {
      seq = std::dynamic_pointer_cast<train::Sequential>(tensors.options->make_model("Sequential", c.text("name")));
      if (!seq) throw Error(c.where + ": make_model did not return a Sequential");
    } else {
      seq = std::make_shared<train::Sequential>(c.text("name"));
    }
    for (const auto& l : c.list("layers")) seq->add(rebuild(layer_config_from(l, c.where + " layer"), tensors, depth + 1, where));
    nn::apply_base_config(*seq, lc.config);  // before building: a built layer's dtype policy is fixed
    if (depth == 0 && c.has_value("build_input")) {
      ConfigMap b = c.map("build_input");
      b.where = c.where + " build_input";
      TensorSpec spec{dtype_from(b, "dtype"), shape_from(b, "shape"), {}};
      if (spec.shape.rank() < 1) throw Error(b.where + ": the input needs its batch axis");
      build_for(*seq, spec);
    }
    return seq;
  } else {
    return nn::layer_from_config(lc, where);
  }
  nn::apply_base_config(*out, lc.config);
  return out;
}

// ---------------------------------------------------------------- compile settings

// Keras' schedule configs (keras.optimizers.schedules), for the built-in schedules.
ConfigValue reals(const std::vector<double>& v) {
  ConfigList l;
  for (double x : v) l.emplace_back(x);
  return l;
}

ConfigValue learning_rate_value(const optim::LearningRate& lr, const std::string& where) {
  const auto& s = lr.schedule();
  if (!s) return lr.value();
  ConfigMap c;
  LayerConfig out;
  const std::type_info& t = typeid(*s);
  if (t == typeid(optim::ExponentialDecay)) {
    const auto& e = static_cast<const optim::ExponentialDecay&>(*s);
    out.class_name = "ExponentialDecay";
    c.set("initial_learning_rate", e.initial());
    c.set("decay_steps", e.decay_steps());
    c.set("decay_rate", e.decay_rate());
    c.set("staircase", e.staircase());
  } else if (t == typeid(optim::CosineDecay)) {
    const auto& d = static_cast<const optim::CosineDecay&>(*s);
    out.class_name = "CosineDecay";
    c.set("initial_learning_rate", d.initial());
    c.set("decay_steps", d.decay_steps());
    c.set("alpha", d.alpha());
    if (d.warmup_target()) {
      c.set("warmup_target", *d.warmup_target());
      c.set("warmup_steps", d.warmup_steps());
    }
  } else if (t == typeid(optim::PiecewiseConstantDecay)) {
    const auto& p = static_cast<const optim::PiecewiseConstantDecay&>(*s);
    out.class_name = "PiecewiseConstantDecay";
    c.set("boundaries", reals(p.boundaries()));
    c.set("values", reals(p.values()));
  } else if (t == typeid(optim::PolynomialDecay)) {
    const auto& p = static_cast<const optim::PolynomialDecay&>(*s);
    out.class_name = "PolynomialDecay";
    c.set("initial_learning_rate", p.initial());
    c.set("decay_steps", p.decay_steps());
    c.set("end_learning_rate", p.end_learning_rate());
    c.set("power", p.power());
    c.set("cycle", p.cycle());
  } else if (t == typeid(optim::InverseTimeDecay)) {
    const auto& p = static_cast<const optim::InverseTimeDecay&>(*s);
    out.class_name = "InverseTimeDecay";
    c.set("initial_learning_rate", p.initial());
    c.set("decay_steps", p.decay_steps());
    c.set("decay_rate", p.decay_rate());
    c.set("staircase", p.staircase());
  } else if (t == typeid(optim::CosineDecayRestarts)) {
    const auto& p = static_cast<const optim::CosineDecayRestarts&>(*s);
    out.class_name = "CosineDecayRestarts";
    c.set("initial_learning_rate", p.initial());
    c.set("first_decay_steps", p.first_decay_steps());
    c.set("t_mul", p.t_mul());
    c.set("m_mul", p.m_mul());
    c.set("alpha", p.alpha());
  } else {
    throw Error(ErrorCode::unimplemented,
                where + ": the learning-rate schedule is a user class, which save_model cannot rebuild (Keras' "
                        "schedules can be saved); save with include_optimizer = false");
  }
  out.config = std::move(c);
  return layer_value(out);
}

optim::LearningRate learning_rate_from(const ConfigMap& c) {
  const ConfigValue& v = c.at("learning_rate");
  auto positive_finite = [&](double x, const char* what) {
    if (!std::isfinite(x) || x < 0) throw Error(c.where + ": " + what + " must be a finite number >= 0");
    return x;
  };
  if (!std::holds_alternative<ConfigMap>(v.value)) return positive_finite(c.real("learning_rate"), "learning_rate");
  LayerConfig s = layer_config_from(v, c.where + " learning_rate");
  ConfigMap& k = s.config;
  k.where = c.where + " learning_rate (" + s.class_name + ")";
  auto real_or = [&](const char* key, double fallback) { return k.has_value(key) ? k.real(key) : fallback; };
  auto flag_or = [&](const char* key) { return k.has_value(key) && k.flag(key); };
  auto list_of = [&](const char* key) {
    std::vector<double> out;
    for (const auto& x : k.list(key)) {
      if (const auto* d = std::get_if<double>(&x.value)) out.push_back(*d);
      else if (const auto* i = std::get_if<std::int64_t>(&x.value)) out.push_back(static_cast<double>(*i));
      else throw Error(k.where + ": " + key + " must list numbers");
    }
    if (out.size() > 100000) throw Error(k.where + ": " + key + " is too long");
    return out;
  };
  try {
    if (s.class_name == "PiecewiseConstantDecay") return optim::PiecewiseConstantDecay(list_of("boundaries"), list_of("values"));
    double initial = positive_finite(k.real("initial_learning_rate"), "initial_learning_rate");
    if (s.class_name == "CosineDecayRestarts")
      return optim::CosineDecayRestarts(initial, k.real("first_decay_steps"), real_or("t_mul", 2.0), real_or("m_mul", 1.0),
                                        real_or("alpha", 0.0));
    double steps = k.real("decay_steps");
    if (s.class_name == "ExponentialDecay")
      return optim::ExponentialDecay(initial, steps, k.real("decay_rate"), flag_or("staircase"));
    if (s.class_name == "CosineDecay") {
      std::optional<double> target;
      if (k.has_value("warmup_target")) target = k.real("warmup_target");
      return optim::CosineDecay(initial, steps, real_or("alpha", 0.0), target, real_or("warmup_steps", 0.0));
    }
    if (s.class_name == "PolynomialDecay")
      return optim::PolynomialDecay(initial, steps, real_or("end_learning_rate", 1e-4), real_or("power", 1.0), flag_or("cycle"));
    if (s.class_name == "InverseTimeDecay")
      return optim::InverseTimeDecay(initial, steps, k.real("decay_rate"), flag_or("staircase"));
  } catch (const Error& e) {
    if (std::string(e.what()).find(k.where) != std::string::npos) throw;
    throw Error(e.kind(), k.where + ": " + e.what());
  }
  throw Error(ErrorCode::unimplemented, c.where + ": unknown learning-rate schedule '" + s.class_name + "'");
}

ConfigValue optional_real(const std::optional<double>& v) { return v ? ConfigValue(*v) : ConfigValue(); }

// Flags among the optimizers' hyperparameters, saved as booleans (as Keras' configs).
bool is_flag(const std::string& key) {
  return key == "nesterov" || key == "relative_step" || key == "exclude_embeddings" || key == "use_ema";
}

ConfigValue optimizer_fields(const optim::Optimizer& opt, const std::string& where);

ConfigValue optimizer_value(const optim::Optimizer& opt) {
  const std::string where = "save_model: optimizer '" + opt.name() + "'";
  if (optim::keras_class_name(opt).empty())
    throw Error(ErrorCode::unimplemented,
                where + " is a user class, which save_model cannot rebuild (Keras' optimizers can be saved); save with "
                        "include_optimizer = false and compile the loaded model yourself");
  return optimizer_fields(opt, where);
}

ConfigValue optimizer_fields(const optim::Optimizer& opt, const std::string& where) {
  LayerConfig out;
  ConfigMap& c = out.config;
  out.class_name = optim::keras_class_name(opt);
  if (const auto* lso = dynamic_cast<const optim::LossScaleOptimizer*>(&opt)) {
    c.set("inner_optimizer", optimizer_value(*lso->inner_optimizer()));
    c.set("initial_scale", lso->initial_scale());
    c.set("dynamic_growth_steps", lso->dynamic_growth_steps());
    return layer_value(out);
  }
  c.set("learning_rate", learning_rate_value(opt.learning_rate_setting(), where));
  for (const auto& [key, v] : opt.hyperparameters())
    if (is_flag(key)) c.set(key, v != 0.0);
    else c.set(key, v);
  c.set("clipnorm", optional_real(opt.clip_options().clipnorm));
  c.set("global_clipnorm", optional_real(opt.clip_options().global_clipnorm));
  const optim::ClipOptions& base = opt.clip_options();
  if (base.clipvalue) c.set("clipvalue", *base.clipvalue);
  if (base.weight_decay) c.set("weight_decay", *base.weight_decay);
  if (base.use_ema) {
    c.set("use_ema", true);
    c.set("ema_momentum", base.ema_momentum);
    if (base.ema_overwrite_frequency) c.set("ema_overwrite_frequency", *base.ema_overwrite_frequency);
  }
  return layer_value(out);
}

std::shared_ptr<optim::Optimizer> optimizer_from(const ConfigValue& v, const std::string& where) {
  LayerConfig oc = layer_config_from(v, where + " optimizer");
  ConfigMap& c = oc.config;
  c.where = where + " optimizer (" + oc.class_name + ")";
  if (oc.class_name == "LossScaleOptimizer") {
    double growth = c.real("dynamic_growth_steps");
    if (!(growth >= 1 && growth <= 9.0e18)) throw Error(c.where + ": dynamic_growth_steps must be >= 1");
    return std::make_shared<optim::LossScaleOptimizer>(optimizer_from(c.at("inner_optimizer"), c.where),
                                                       c.real("initial_scale"), static_cast<std::int64_t>(growth));
  }
  optim::ClipOptions clip;
  if (c.has_value("clipnorm")) clip.clipnorm = c.real("clipnorm");
  if (c.has_value("global_clipnorm")) clip.global_clipnorm = c.real("global_clipnorm");
  if (c.has_value("clipvalue")) clip.clipvalue = c.real("clipvalue");
  optim::LearningRate lr = learning_rate_from(c);
  std::map<std::string, double> args;
  for (const auto& [key, value] : c.items()) {
    if (key == "learning_rate" || key == "clipnorm" || key == "global_clipnorm" || key == "clipvalue") continue;
    args[key] = is_flag(key) ? (c.flag(key) ? 1.0 : 0.0) : c.real(key);
  }
  try {
    return optim::make_optimizer(oc.class_name, lr, args, clip);
  } catch (const Error& e) {
    throw Error(c.where + ": " + e.what());
  }
}

// Losses keep their parameters inside a function; the few that have parameters are told apart
// by their values on fixed inputs against each candidate (exact equality, deterministic kernels).
Tensor mat(std::vector<float> v, std::int64_t rows) {
  std::int64_t n = static_cast<std::int64_t>(v.size());
  return tensor(std::move(v), Shape{rows, n / rows});
}

bool same_values(const train::Loss& a, const train::Loss& b, const Tensor& y, const Tensor& p) {
  Tensor va = a.per_example(y, p), vb = b.per_example(y, p);
  auto x = va.to_vector<float>(), z = vb.to_vector<float>();
  return x.size() == z.size() && std::memcmp(x.data(), z.data(), x.size() * sizeof(float)) == 0;
}

ConfigValue loss_value(const train::Loss& loss, const std::string& where) {
  const std::string& name = loss.name();
  ConfigMap c;
  c.set("name", name);
  auto from_logits = [&](auto make, const Tensor& y, const Tensor& p) {
    for (bool logits : {false, true})
      if (same_values(loss, make(logits), y, p)) {
        c.set("from_logits", logits);
        return;
      }
    throw Error(where + ": cannot tell the parameters of loss '" + name + "'");
  };
  if (name == "binary_crossentropy") {
    from_logits([](bool l) { return train::BinaryCrossentropy(l); }, mat({1.0f, 0.0f}, 2), mat({2.0f, -1.5f}, 2));
  } else if (name == "categorical_crossentropy") {
    from_logits([](bool l) { return train::CategoricalCrossentropy(l); }, mat({1.0f, 0.0f, 0.0f}, 1), mat({2.0f, 0.5f, 0.25f}, 1));
  } else if (name == "sparse_categorical_crossentropy") {
    from_logits([](bool l) { return train::SparseCategoricalCrossentropy(l); }, tensor(std::vector<float>{0.0f}, Shape{1}),
                mat({2.0f, 0.5f, 0.25f}, 1));
  } else if (name == "huber") {
    // 0.5 e^2 below delta, delta (|e| - delta / 2) above: the loss at e = 64 gives delta; checked.
    Tensor y = mat({0.0f}, 1), p = mat({64.0f}, 1);
    double l = loss.per_example(y, p).to_vector<float>()[0];
    double delta = 64.0 - std::sqrt(std::max(0.0, 64.0 * 64.0 - 2.0 * l));
    delta = static_cast<double>(static_cast<float>(delta));
    Tensor y2 = mat({0.0f, 0.0f, 0.0f}, 3), p2 = mat({64.0f, 0.37f, -3.5f}, 3);
    if (!(delta > 0) || !same_values(loss, train::Huber(delta), y2, p2))
      throw Error(where + ": cannot tell the delta of loss 'huber'");
    c.set("delta", delta);
  } else if (name == "cosine_similarity") {
    Tensor y = mat({1.0f, 2.0f, -1.0f, 0.5f, -2.0f, 3.0f}, 2), p = mat({0.3f, -1.0f, 2.0f, 1.5f, 0.25f, -0.5f}, 2);
    bool found = false;
    for (int axis : {-1, 0}) {
      bool same = false;
      try {
        same = same_values(loss, train::CosineSimilarity(axis), y, p);
      } catch (const Error&) {
      }
      if (same) {
        c.set("axis", axis);
        found = true;
        break;
      }
    }
    if (!found) throw Error(where + ": cannot tell the axis of loss 'cosine_similarity'");
  } else {
    try {
      (void)train::loss_by_name(name);
    } catch (const Error&) {
      throw Error(
          ErrorCode::unimplemented,
          where + ": loss '" + name +
              "' is a C++ function, which save_model cannot rebuild (Keras' built-in "
              "losses can be saved); save with include_optimizer = false and compile the loaded model yourself");
    }
  }
  return c;
}

train::Loss loss_from(const ConfigValue& v, const std::string& where) {
  const auto* m = std::get_if<ConfigMap>(&v.value);
  if (!m) throw Error(where + ": a loss must be a map {name, ...}");
  ConfigMap c = *m;
  c.where = where;
  const std::string& name = c.text("name");
  if (name == "binary_crossentropy") return train::BinaryCrossentropy(c.flag("from_logits"));
  if (name == "categorical_crossentropy") return train::CategoricalCrossentropy(c.flag("from_logits"));
  if (name == "sparse_categorical_crossentropy") return train::SparseCategoricalCrossentropy(c.flag("from_logits"));
  if (name == "huber") {
    double d = c.real("delta");
    if (!(d > 0) || !std::isfinite(d)) throw Error(where + ": huber's delta must be > 0");
    return train::Huber(d);
  }
  if (name == "cosine_similarity") {
    std::int64_t a = c.integer("axis");
    if (a < -64 || a > 64) throw Error(where + ": cosine_similarity's axis is out of range");
    return train::CosineSimilarity(static_cast<int>(a));
  }
  return train::loss_by_name(name);  // an unknown name is an ef::Error naming it
}

std::string first_loss_name(const train::CompileOptions& o) {
  if (!o.loss.empty()) return o.loss.front().loss.name();
  if (!o.loss_by_output.empty()) return o.loss_by_output.begin()->second.loss.name();
  return "";
}

ConfigValue metric_value(const train::MetricRef& m, const std::string& loss_name, const std::string& where) {
  if (const auto* s = std::get_if<std::string>(&m.value)) return *s;
  const auto& metric = std::get<std::shared_ptr<train::Metric>>(m.value);
  try {
    (void)train::metric_by_name(metric->name(), loss_name);
  } catch (const Error&) {
    throw Error(ErrorCode::unimplemented,
                where + ": metric '" + metric->name() +
                    "' is an object whose name is not a Keras metric name, which "
                    "save_model cannot rebuild; compile with metrics by name, or save with include_optimizer = false");
  }
  return metric->name();  // saved by name (its class's defaults)
}

// The optimizer is the model's (the one in the options is the same object).
ConfigValue compile_value(const train::CompileOptions& o, const optim::Optimizer& optimizer) {
  const std::string where = "save_model: compile settings";
  ConfigMap c;
  c.set("optimizer", optimizer_value(optimizer));
  ConfigList loss;
  for (const auto& l : o.loss) loss.push_back(loss_value(l.loss, where));
  c.set("loss", std::move(loss));
  ConfigMap loss_by_output;
  for (const auto& [k, l] : o.loss_by_output) loss_by_output.set(k, loss_value(l.loss, where + " output '" + k + "'"));
  c.set("loss_by_output", std::move(loss_by_output));
  ConfigList weights;
  for (double w : o.loss_weights) weights.emplace_back(w);
  c.set("loss_weights", std::move(weights));
  ConfigMap weights_by_output;
  for (const auto& [k, w] : o.loss_weights_by_output) weights_by_output.set(k, w);
  c.set("loss_weights_by_output", std::move(weights_by_output));
  std::string loss_name = first_loss_name(o);
  auto list_of = [&](const std::vector<train::MetricRef>& ms) {
    ConfigList l;
    for (const auto& m : ms) l.push_back(metric_value(m, loss_name, where));
    return l;
  };
  auto by_output = [&](const std::map<std::string, std::vector<train::MetricRef>>& ms) {
    ConfigMap out;
    for (const auto& [k, l] : ms) out.set(k, list_of(l));
    return out;
  };
  c.set("metrics", list_of(o.metrics));
  c.set("metrics_by_output", by_output(o.metrics_by_output));
  c.set("weighted_metrics", list_of(o.weighted_metrics));
  c.set("weighted_metrics_by_output", by_output(o.weighted_metrics_by_output));
  c.set("run_eagerly", o.run_eagerly);
  return c;
}

train::CompileOptions compile_from(const ConfigMap& c_in, const std::string& where) {
  ConfigMap c = c_in;
  c.where = where + " compile";
  train::CompileOptions o;
  o.optimizer = optimizer_from(c.at("optimizer"), c.where);
  for (const auto& l : c.list("loss")) o.loss.emplace_back(loss_from(l, c.where + " loss"));
  for (const auto& [k, l] : c.map("loss_by_output").items()) o.loss_by_output.emplace(k, loss_from(l, c.where + " loss '" + k + "'"));
  auto real_of = [&](const ConfigValue& v) {
    if (const auto* d = std::get_if<double>(&v.value)) return *d;
    if (const auto* i = std::get_if<std::int64_t>(&v.value)) return static_cast<double>(*i);
    throw Error(c.where + ": loss weights must be numbers");
  };
  for (const auto& w : c.list("loss_weights")) o.loss_weights.push_back(real_of(w));
  for (const auto& [k, w] : c.map("loss_weights_by_output").items()) o.loss_weights_by_output[k] = real_of(w);
  auto metric_of = [&](const ConfigValue& v) {
    const auto* s = std::get_if<std::string>(&v.value);
    if (!s) throw Error(c.where + ": metrics must be names");
    return train::MetricRef(*s);
  };
  auto by_output = [&](const char* key, std::map<std::string, std::vector<train::MetricRef>>& out) {
    for (const auto& [k, ms] : c.map(key).items()) {
      const auto* l = std::get_if<ConfigList>(&ms.value);
      if (!l) throw Error(c.where + ": " + key + " must map names to lists");
      auto& dst = out[k];
      for (const auto& m : *l) dst.push_back(metric_of(m));
    }
  };
  for (const auto& m : c.list("metrics")) o.metrics.push_back(metric_of(m));
  by_output("metrics_by_output", o.metrics_by_output);
  // Files written before weighted metrics were saved have no such keys: none.
  if (c.has("weighted_metrics"))
    for (const auto& m : c.list("weighted_metrics")) o.weighted_metrics.push_back(metric_of(m));
  if (c.has("weighted_metrics_by_output")) by_output("weighted_metrics_by_output", o.weighted_metrics_by_output);
  o.run_eagerly = c.flag("run_eagerly");
  return o;
}

// ---------------------------------------------------------------- the file

std::vector<std::byte> encode(const std::string& header, const std::vector<std::byte>& payload) {
  std::vector<std::byte> out(kPreamble);
  std::memcpy(out.data(), kMagic, 8);
  put_u32(out, 8, static_cast<std::uint32_t>(kModelFormatVersion));
  put_u32(out, 12, 0);
  put_u64(out, 16, header.size());
  put_u64(out, 24, payload.size());
  out.reserve(kPreamble + header.size() + payload.size());
  for (char ch : header) out.push_back(static_cast<std::byte>(ch));
  out.insert(out.end(), payload.begin(), payload.end());
  put_u64(out, 32, checksum(out.data() + kPreamble, out.size() - kPreamble, kModelFormatVersion));
  return out;
}

struct Decoded {
  ConfigMap header;
  io::TensorFile payload;
};

Decoded decode(const std::vector<std::byte>& b, const std::string& what) {
  // A damaged file is DATA_LOSS (TF's kind for a corrupted checkpoint); another kind of file an
  // invalid argument (Keras' ValueError "File format not supported").
  auto bad = [&](const std::string& why, ErrorKind kind = ErrorCode::data_loss) {
    return Error(kind, "load_model(" + what + "): " + why);
  };
  if (b.size() < 8 || std::memcmp(b.data(), kMagic, 7) != 0)
    throw bad("not an eagerflow model file (no EFMODEL magic)", ErrorCode::invalid_argument);
  if (std::memcmp(b.data(), kMagic, 8) != 0) throw bad("the file is damaged (bad magic)");
  if (b.size() < kPreamble) throw bad("the file is truncated (" + std::to_string(b.size()) + " bytes)");
  std::uint64_t version = get_u(b, 8, 4);
  if (version > static_cast<std::uint64_t>(kModelFormatVersion))
    throw bad("the file has format version " + std::to_string(version) + ", this eagerflow reads up to version " +
                  std::to_string(kModelFormatVersion) + ": it was written by a newer eagerflow",
              ErrorCode::unimplemented);
  if (version == 0) throw bad("the file is damaged (format version 0)");
  if (get_u(b, 12, 4) != 0) throw bad("the file is damaged (unknown flags)");
  std::uint64_t h = get_u(b, 16, 8), p = get_u(b, 24, 8);
  std::uint64_t rest = b.size() - kPreamble;
  if (h > kMaxHeader || h > rest || p != rest - h)
    throw bad("the file is damaged or truncated: its sections (header " + std::to_string(h) + " bytes, payload " +
              std::to_string(p) + " bytes) do not fit its " + std::to_string(b.size()) + " bytes");
  if (get_u(b, 32, 8) != checksum(b.data() + kPreamble, static_cast<std::size_t>(rest), version))
    throw bad("the file is damaged: its contents do not match the checksum it was saved with");
  std::string_view text(reinterpret_cast<const char*>(b.data() + kPreamble), static_cast<std::size_t>(h));
  io::Json j = io::parse_json(text, "load_model(" + what + ") header", /*allow_reals=*/true);
  ConfigValue v = from_json(j);
  auto* m = std::get_if<ConfigMap>(&v.value);
  if (!m) throw bad("the header is not a JSON object");
  Decoded d;
  d.header = std::move(*m);
  d.header.where = "load_model(" + what + ")";
  if (!d.header.has("format") || !std::holds_alternative<std::string>(d.header.at("format").value) ||
      d.header.text("format") != "eagerflow-model")
    throw bad("the header does not say format \"eagerflow-model\"");
  d.payload = io::parse_safetensors(std::span<const std::byte>(b.data() + kPreamble + h, static_cast<std::size_t>(p)),
                                    "load_model(" + what + ") payload");
  return d;
}

std::string spec_text(const Tensor& t) { return t.spec().str(); }

}  // namespace

namespace detail {

nn::ConfigValue config_from_json(const io::Json& j) { return from_json(j); }
std::string config_to_json(const nn::ConfigValue& v) {
  std::string out;
  write_json(v, out);
  return out;
}

nn::LayerConfig model_config_with_constants(const nn::Layer& model, std::vector<io::NamedTensor>& constants) {
  Tensors t;
  LayerConfig c = config_of(model, t, 0);
  constants = std::move(t.saved);
  return c;
}

std::shared_ptr<nn::Layer> rebuild_from_config(const nn::LayerConfig& config, const std::map<std::string, Tensor>& constants,
                                               const LoadModelOptions& options, const std::string& where) {
  Tensors t;
  t.loaded = &constants;
  t.options = &options;
  return rebuild(config, t, 0, where);
}

void build_model_for(train::Model& model, const TensorSpec& spec) { build_for(model, spec); }
std::optional<TensorSpec> model_build_spec(const nn::Layer& model) { return build_spec(model); }

nn::ConfigValue optimizer_config(const optim::Optimizer& optimizer) { return optimizer_value(optimizer); }
std::shared_ptr<optim::Optimizer> optimizer_from_config(const nn::ConfigValue& v, const std::string& where) {
  return optimizer_from(v, where);
}
nn::ConfigValue loss_config(const train::Loss& loss, const std::string& where) { return loss_value(loss, where); }
train::Loss loss_from_config(const nn::ConfigValue& v, const std::string& where) { return loss_from(v, where); }

}  // namespace detail

nn::LayerConfig model_config(const nn::Layer& model) {
  Tensors t;
  return config_of(model, t, 0);
}

std::shared_ptr<nn::Layer> model_from_config(const nn::LayerConfig& config, const LoadModelOptions& options) {
  Tensors t;
  std::map<std::string, Tensor> none;
  t.loaded = &none;
  t.options = &options;
  return rebuild(config, t, 0, "model_from_config");
}

std::string model_to_json(const nn::Layer& model) {
  std::string out;
  write_json(layer_value(model_config(model)), out);
  return out;
}

std::string model_to_keras_json(const nn::Layer& model) {
  Tensors t;
  LayerConfig c = config_of(model, t, 0);
  std::string out;
  write_json(io::keras::model_to_keras(model, c, t.saved), out);
  return out;
}

std::shared_ptr<nn::Layer> model_from_json(const std::string& json, const LoadModelOptions& options) {
  ConfigValue v = from_json(io::parse_json(json, "model_from_json", true));
  // Keras' own JSON (keras' to_json, config.json of .keras files): every object has a module.
  if (const auto* m = std::get_if<ConfigMap>(&v.value); m && m->has("module")) {
    io::keras::FromKeras k = io::keras::model_from_keras(v, "model_from_json");
    auto layer = detail::rebuild_from_config(k.config, k.constants, options, "model_from_json");
    if (auto* model = dynamic_cast<train::Model*>(layer.get()); model && !model->built() && k.build_input)
      build_for(*model, *k.build_input);
    return layer;
  }
  return model_from_config(layer_config_from(v, "model_from_json"), options);
}

void save_model(const train::Model& model, const std::string& path, const SaveModelOptions& options) {
  if (!train::is_file_writer()) return;  // rank 0 of a data-parallel job writes (eagerflow/train/distribution.h)
  auto ends_with = [&](std::string_view tail) {
    return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with(".keras")) return io::save_keras_model(model, path, options);
  if (ends_with(".h5") || ends_with(".hdf5")) return io::save_legacy_h5_model(model, path, options);
  Tensors tensors;
  ConfigMap header;
  header.set("format", "eagerflow-model");
  header.set("model", layer_value(config_of(model, tensors, 0)));
  ConfigValue build;
  if (auto spec = build_spec(model); spec && model.built() && !plain_functional(model)) {
    ConfigMap b;
    b.set("dtype", std::string(name_of(spec->dtype)));
    b.set("shape", shape_value(spec->shape));
    build = std::move(b);
  }
  header.set("build_input", std::move(build));
  auto weights = train::weights_by_key(model);
  std::vector<io::NamedTensor> payload = std::move(tensors.saved);
  for (const auto& [key, var] : weights) payload.push_back({"weights/" + key, var.value()});
  bool with_compile = options.include_optimizer && model.compiled();
  header.set("compile", with_compile ? compile_value(model.compile_options(), *model.optimizer()) : ConfigValue());
  if (with_compile) {
    optim::Optimizer& opt = *model.optimizer();
    if (opt.iterations().defined()) payload.push_back({"optimizer/iterations", opt.iterations().value()});
    payload.push_back({"optimizer/learning_rate", opt.learning_rate_variable().value()});
    std::size_t slots = 0;
    for (const auto& [key, var] : weights)
      for (const auto& [slot, s] : opt.slots_of(var)) {
        payload.push_back({"optimizer/slots/" + key + "/" + slot, s.value()});
        ++slots;
      }
    std::size_t all = opt.variables().size() - (opt.iterations().defined() ? 1 : 0);
    if (slots != all)
      throw Error("save_model('" + path + "'): the optimizer has slots for variables that are not the model's weights "
                  "(it trained other variables too); save with include_optimizer = false");
  }
  random::GeneratorState g = random::get_global_state();
  payload.push_back({"rng/seed", scalar(static_cast<std::int64_t>(g.seed))});
  payload.push_back({"rng/counter", scalar(static_cast<std::int64_t>(g.counter))});
  std::vector<std::int64_t> rows;
  for (auto [seed, n] : g.seeded) {
    rows.push_back(static_cast<std::int64_t>(seed));
    rows.push_back(static_cast<std::int64_t>(n));
  }
  std::int64_t count = static_cast<std::int64_t>(g.seeded.size());
  payload.push_back({"rng/seeded", tensor(std::move(rows), Shape{count, 2})});
  for (const auto& [key, generator] : train::seed_generators_by_key(model))
    payload.push_back({"rng/generators/" + (key.empty() ? model.name() : key), scalar(static_cast<std::int64_t>(generator->draws()))});
  std::string text;
  write_json(header, text);
  io::write_file_atomically(path, encode(text, io::serialize_safetensors(payload, {{"format", "eagerflow-model-payload"}})));
}

namespace {
std::shared_ptr<train::Model> load_model_impl(const std::string& path, const LoadModelOptions& options);
}

std::shared_ptr<train::Model> load_model(const std::string& path, const LoadModelOptions& options) {
  try {
    return load_model_impl(path, options);
  } catch (const nn::InvalidLayerName& e) {
    if (std::string(e.what()).find(path) != std::string::npos) throw;
    throw nn::InvalidLayerName("load_model('" + path + "'): " + e.what());
  } catch (const Error& e) {
    // Every error names the file (one from a layer or op factory may not).
    if (std::string(e.what()).find(path) != std::string::npos) throw;
    throw Error(e.kind(), "load_model('" + path + "'): " + e.what());
  }
}

namespace {
std::shared_ptr<train::Model> load_model_impl(const std::string& path, const LoadModelOptions& options) {
  const std::string what = "'" + path + "'";
  std::vector<std::byte> bytes = io::read_file(path);
  if (io::looks_like_zip(bytes)) return io::load_keras_model(bytes, path, options);
  if (is_hdf5_file(path)) return io::load_legacy_h5_model(path, options);
  Decoded d = decode(bytes, path);
  std::map<std::string, Tensor> by_name;
  for (const auto& t : d.payload.tensors) by_name.emplace(t.name, t.value);
  Tensors tensors;
  tensors.loaded = &by_name;
  tensors.options = &options;
  const std::string where = "load_model(" + what + ")";
  // The rebuilt layers may create no more weight bytes than the file holds (a damaged config
  // asking for a huge layer is an error before anything is allocated).
  std::uint64_t weight_bytes = 0;
  for (const auto& t : d.payload.tensors)
    if (t.name.rfind("weights/", 0) == 0) weight_bytes += t.value.nbytes();
  std::shared_ptr<train::Model> model;
  {
    detail::WeightBudget budget(weight_bytes, where);
    std::shared_ptr<nn::Layer> layer = rebuild(layer_config_from(d.header.at("model"), where + " model"), tensors, 0, where);
    model = std::dynamic_pointer_cast<train::Model>(layer);
    if (!model) throw Error(where + ": the file holds a layer (" + layer->type_name() + "), not a model");
    if (d.header.has_value("build_input") && !model->built()) {
      ConfigMap b = d.header.map("build_input");
      b.where = where + " build_input";
      TensorSpec spec{dtype_from(b, "dtype"), shape_from(b, "shape"), {}};
      if (spec.shape.rank() < 1) throw Error(b.where + ": the input needs its batch axis");
      build_for(*model, spec);
    }
  }
  // The weights: every key, shape and dtype checked before anything is assigned.
  std::vector<std::string> problems;
  std::vector<std::pair<Variable, Tensor>> assign;
  std::set<std::string> used;
  auto weights = train::weights_by_key(*model);
  for (const auto& [key, var] : weights) {
    auto it = by_name.find("weights/" + key);
    if (it == by_name.end()) {
      problems.push_back("missing in the file: weight '" + key + "'");
      continue;
    }
    used.insert(it->first);
    if (it->second.dtype() != var.dtype() || it->second.shape() != var.shape()) {
      problems.push_back("weight '" + key + "': the file has " + spec_text(it->second) + ", the model " +
                         TensorSpec{var.dtype(), var.shape(), {}}.str());
      continue;
    }
    assign.emplace_back(var, it->second);
  }
  for (const auto& [name, t] : by_name)
    if (name.rfind("weights/", 0) == 0 && !used.count(name)) problems.push_back("not in the model: weight '" + name.substr(8) + "'");
  if (!problems.empty()) {
    std::string msg = where + ": the weights do not match the rebuilt model:";
    for (const auto& p : problems) msg += "\n  " + p;
    throw Error(msg);
  }
  // The optimizer's state, checked the same way.
  std::optional<train::CompileOptions> compile;
  std::vector<std::tuple<Variable, std::string, Tensor>> slots;
  if (options.compile && d.header.has_value("compile")) {
    compile = compile_from(d.header.map("compile"), where);
    std::map<std::string, Variable> var_by_key(weights.begin(), weights.end());
    const std::string prefix = "optimizer/slots/";
    for (const auto& [name, t] : by_name) {
      if (name.rfind(prefix, 0) != 0) continue;
      std::string rest = name.substr(prefix.size());
      std::size_t cut = rest.rfind('/');
      auto owner = cut == std::string::npos ? var_by_key.end() : var_by_key.find(rest.substr(0, cut));
      if (owner == var_by_key.end()) {
        problems.push_back("optimizer slot '" + rest + "' belongs to no weight of the model");
        continue;
      }
      if (t.dtype() != owner->second.dtype() || t.shape() != owner->second.shape()) {
        problems.push_back("optimizer slot '" + rest + "': the file has " + spec_text(t) + ", its weight is " +
                           TensorSpec{owner->second.dtype(), owner->second.shape(), {}}.str());
        continue;
      }
      std::string slot = rest.substr(cut + 1);
      if (slot.empty()) problems.push_back("optimizer slot '" + rest + "' has no name");
      slots.emplace_back(owner->second, slot, t);
    }
    if (auto it = by_name.find("optimizer/iterations"); it != by_name.end() && (it->second.dtype() != DType::int64 || it->second.rank() != 0))
      problems.push_back("'optimizer/iterations' is " + spec_text(it->second) + ", not an int64 scalar");
    auto lr = by_name.find("optimizer/learning_rate");
    if (lr == by_name.end()) problems.push_back("missing in the file: 'optimizer/learning_rate'");
    else if (lr->second.dtype() != DType::float32 || lr->second.rank() != 0)
      problems.push_back("'optimizer/learning_rate' is " + spec_text(lr->second) + ", not a float32 scalar");
    else if (float v = lr->second.item<float>(); !std::isfinite(v) || v < 0)
      problems.push_back("'optimizer/learning_rate' is not a finite rate");
    if (!problems.empty()) {
      std::string msg = where + ": the optimizer state does not match the model:";
      for (const auto& p : problems) msg += "\n  " + p;
      throw Error(msg);
    }
  }
  std::optional<random::GeneratorState> rng;
  if (options.restore_random_state) {
    auto seed = by_name.find("rng/seed"), counter = by_name.find("rng/counter"), seeded = by_name.find("rng/seeded");
    auto scalar64 = [&](auto it) { return it != by_name.end() && it->second.dtype() == DType::int64 && it->second.rank() == 0; };
    if (!scalar64(seed) || !scalar64(counter))
      throw Error(ErrorCode::data_loss, where + ": the random state (rng/seed, rng/counter) is missing or damaged");
    random::GeneratorState g{static_cast<std::uint64_t>(seed->second.item<std::int64_t>()),
                             static_cast<std::uint64_t>(counter->second.item<std::int64_t>()), {}};
    if (seeded != by_name.end()) {
      const Tensor& s = seeded->second;
      if (s.dtype() != DType::int64 || s.rank() != 2 || s.shape()[1] != 2)
        throw Error(where + ": rng/seeded must be int64[n,2], got " + spec_text(s));
      auto v = s.to_vector<std::int64_t>();
      for (std::size_t i = 0; i + 1 < v.size(); i += 2)
        g.seeded.emplace_back(static_cast<std::uint64_t>(v[i]), static_cast<std::uint64_t>(v[i + 1]));
    }
    rng = std::move(g);
  }
  for (auto& [var, value] : assign) var.assign(value);
  if (compile) {
    try {
      model->compile(*compile);
    } catch (const Error& e) {
      throw Error(e.kind(), where + ": compiling the loaded model failed: " + e.what());
    }
    optim::Optimizer& opt = *model->optimizer();
    for (auto& [owner, slot, value] : slots) opt.get_or_create_slot(owner, slot).assign(value);
    if (auto it = by_name.find("optimizer/iterations"); it != by_name.end()) opt.get_or_create_iterations().assign(it->second);
    opt.learning_rate_variable().assign(by_name.at("optimizer/learning_rate"));
  }
  // The layers' own sequences (Dropout(seed=)) are the model's state, restored always (files
  // from before them have none); the global generator only when asked.
  std::vector<std::pair<const random::SeedGenerator*, std::uint64_t>> draws;
  for (const auto& [path, generator] : train::seed_generators_by_key(*model))
    if (auto it = by_name.find("rng/generators/" + (path.empty() ? model->name() : path)); it != by_name.end()) {
      if (it->second.dtype() != DType::int64 || it->second.rank() != 0)
        throw Error(where + ": " + it->first + " must be an int64 scalar, got " + spec_text(it->second));
      draws.emplace_back(generator, static_cast<std::uint64_t>(it->second.item<std::int64_t>()));
    }
  if (rng) random::set_global_state(std::move(*rng));
  for (auto [generator, n] : draws) generator->set_draws(n);
  return model;
}

}  // namespace

}  // namespace ef
