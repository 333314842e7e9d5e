// Layer configs (eagerflow/nn/layer_config.h): the config values, the registry of layer
// factories with the built-in classes listed explicitly, and get_config of every built-in layer.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12: a false positive on copies of std::variant
#endif
#include "eagerflow/nn/layer_config.h"
#include "eagerflow/nn/layer_name.h"

#include <cmath>
#include <functional>
#include <cstring>
#include <map>
#include <mutex>

#include "eagerflow/core/error.h"
#include "eagerflow/nn/activation_layers.h"
#include "eagerflow/nn/basic_layers.h"
#include "eagerflow/nn/constraints.h"
#include "eagerflow/nn/conv_layers.h"
#include "eagerflow/nn/conv_transpose.h"
#include "eagerflow/nn/embedding_merge.h"
#include "eagerflow/nn/normalization.h"
#include "eagerflow/nn/preprocessing.h"
#include "eagerflow/nn/regularizers.h"
#include "eagerflow/nn/reshaping.h"
#include "eagerflow/ops/ops.h"
#include "nn/layer_args.h"  // set_initializer, read_initializer

namespace ef::detail {
void add_attention_layer_factories(std::map<std::string, nn::LayerFactory>& factories);  // src/nn/attention.cpp
void add_recurrent_layer_factories(std::map<std::string, nn::LayerFactory>& factories);  // src/nn/recurrent.cpp
void add_conv1d_layer_factories(std::map<std::string, nn::LayerFactory>& factories);     // src/nn/conv1d.cpp
void add_dense_layer_factories(std::map<std::string, nn::LayerFactory>& factories);      // src/nn/dense.cpp
void add_dropout_layer_factories(std::map<std::string, nn::LayerFactory>& factories);    // src/nn/dropout.cpp
void add_conv2d_layer_factories(std::map<std::string, nn::LayerFactory>& factories);     // src/nn/conv_layers.cpp
}

namespace ef::nn {

// ---------------------------------------------------------------- values

ConfigValue::ConfigValue(const std::vector<std::int64_t>& v) : value(ConfigList(v.begin(), v.end())) {}
ConfigValue::ConfigValue(const std::vector<int>& v) {
  ConfigList l;
  for (int x : v) l.emplace_back(x);
  value = std::move(l);
}

bool ConfigValue::operator==(const ConfigValue& other) const {
  if (value.index() != other.value.index()) return false;
  if (const auto* d = std::get_if<double>(&value)) {  // by bits: -0.0 and 0.0 differ
    double o = std::get<double>(other.value);
    return std::memcmp(d, &o, sizeof o) == 0;
  }
  return value == other.value;
}

ConfigMap& ConfigMap::set(const std::string& key, ConfigValue v) {
  for (auto& [k, old] : items_)
    if (k == key) {
      old = std::move(v);
      return *this;
    }
  items_.emplace_back(key, std::move(v));
  return *this;
}

const ConfigValue* ConfigMap::find(std::string_view key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return &v;
  return nullptr;
}

bool ConfigMap::has_value(std::string_view key) const {
  const ConfigValue* v = find(key);
  return v && !v->is_null();
}

void ConfigMap::bad(std::string_view key, const std::string& why) const {
  throw Error(where + ": config '" + std::string(key) + "' " + why);
}

const ConfigValue& ConfigMap::at(std::string_view key) const {
  const ConfigValue* v = find(key);
  if (!v) bad(key, "is missing");
  return *v;
}

namespace {
template <class T>
const T& typed(const ConfigMap& m, std::string_view key, const char* type, const ConfigValue& v, std::nullptr_t) {
  const T* p = std::get_if<T>(&v.value);
  if (!p) throw Error(m.where + ": config '" + std::string(key) + "' must be " + type);
  return *p;
}
}  // namespace

bool ConfigMap::flag(std::string_view key) const { return typed<bool>(*this, key, "a boolean", at(key), nullptr); }
std::int64_t ConfigMap::integer(std::string_view key) const {
  // Keras' 1-D layers write their sizes as tuples of one (strides [2], kernel_size [3]).
  if (const auto* l = std::get_if<ConfigList>(&at(key).value); l && l->size() == 1 && std::holds_alternative<std::int64_t>(l->front().value))
    return std::get<std::int64_t>(l->front().value);
  return typed<std::int64_t>(*this, key, "an integer", at(key), nullptr);
}
double ConfigMap::real(std::string_view key) const {
  const ConfigValue& v = at(key);
  if (const auto* i = std::get_if<std::int64_t>(&v.value)) return static_cast<double>(*i);
  return typed<double>(*this, key, "a number", v, nullptr);
}
const std::string& ConfigMap::text(std::string_view key) const {
  return typed<std::string>(*this, key, "text", at(key), nullptr);
}
const ConfigList& ConfigMap::list(std::string_view key) const { return typed<ConfigList>(*this, key, "a list", at(key), nullptr); }
const ConfigMap& ConfigMap::map(std::string_view key) const { return typed<ConfigMap>(*this, key, "a map", at(key), nullptr); }
std::vector<std::int64_t> ConfigMap::ints(std::string_view key) const {
  // Keras writes a single axis as an integer (axis=-1) where a tuple is allowed.
  if (const auto* i = std::get_if<std::int64_t>(&at(key).value)) return {*i};
  std::vector<std::int64_t> out;
  for (const auto& v : list(key)) {
    const auto* i = std::get_if<std::int64_t>(&v.value);
    if (!i) bad(key, "must be a list of integers");
    out.push_back(*i);
  }
  return out;
}

// ---------------------------------------------------------------- sub-objects

ConfigValue dtype_policy_config(const DTypePolicy& policy) {
  // Keras 3's dtype_policies.serialize(layer.dtype_policy).
  ConfigMap inner;
  inner.set("name", policy.name());
  ConfigMap m;
  m.set("module", "keras");
  m.set("class_name", "DTypePolicy");
  m.set("config", std::move(inner));
  m.set("registered_name", nullptr);
  return m;
}

DTypePolicy dtype_policy_from_config(const ConfigValue& v, const std::string& where) {
  auto policy = [&](const std::string& name) {
    try {
      return DTypePolicy(name);
    } catch (const Error& e) {
      throw Error(e.kind(), where + ": " + e.what());
    }
  };
  if (const auto* name = std::get_if<std::string>(&v.value)) return policy(*name);  // Keras 3.0-3.1: the name
  const auto* m = std::get_if<ConfigMap>(&v.value);
  if (!m) throw Error(where + ": a dtype policy must be a name or a map {class_name, config: {name}}");
  ConfigMap c = *m;
  c.where = where;
  const std::string& cls = c.text("class_name");
  if (cls != "DTypePolicy" && cls != "FloatDTypePolicy" && cls != "Policy")
    throw Error(ErrorCode::unimplemented, where + ": dtype policy class '" + cls +
                                              "' (DTypePolicy expected; eagerflow has no quantized policies)");
  ConfigMap inner = c.map("config");
  inner.where = where;
  return policy(inner.text("name"));
}

LayerConfig base_config(const Layer& layer, std::string class_name) {
  LayerConfig c{std::move(class_name), {}};
  c.config.set("name", layer.name());
  c.config.set("trainable", layer.trainable());
  c.config.set("dtype", dtype_policy_config(layer.dtype_policy()));
  if (const Regularizer* r = layer.activity_regularizer())
    c.config.set("activity_regularizer", regularizer_config(*r, "layer '" + layer.name() + "' activity_regularizer"));
  return c;
}

void apply_base_config(Layer& layer, const ConfigMap& config) {
  if (config.has_value("trainable") && !config.flag("trainable")) layer.set_trainable(false);
  // The policy the layer was saved with, whatever the global policy is now (files written
  // before configs held it: the global policy, as the factory made the layer).
  if (config.has_value("dtype")) layer.set_dtype_policy(dtype_policy_from_config(config.at("dtype"), config.where + " dtype"));
  if (config.has_value("activity_regularizer"))
    layer.set_activity_regularizer(regularizer_from_config(config.at("activity_regularizer"), config.where + " activity_regularizer"));
}

ConfigValue activation_config(const ActivationFn& fn, const std::string& where) {
  if (fn.name() == "custom")
    throw Error(where + ": the activation is a C++ function, which a model config cannot hold; use an activation by "
                        "name, or a Layer subclass with get_config registered with ef::register_layer");
  return fn.name();
}

ActivationFn activation_from_config(const ConfigValue& v, const std::string& where) {
  if (v.is_null()) return ActivationFn();
  const auto* s = std::get_if<std::string>(&v.value);
  if (!s) throw Error(where + ": an activation must be a name");
  return ActivationFn(*s);  // an unknown name is an ef::Error naming it
}

// Keras' serialized form of a regularizer or constraint ({class_name: "L1L2", config: {l1, l2}},
// as .keras files hold them) in eagerflow's ({name: "l1_l2", l1, l2}).
static ConfigMap named_form(const ConfigMap& m, const std::string& where) {
  if (!m.has("class_name") || m.has("name")) return m;
  const auto* cls = std::get_if<std::string>(&m.at("class_name").value);
  if (!cls) throw Error(where + ": class_name must be text");
  static const std::map<std::string, std::string> names{{"L1", "l1"}, {"L2", "l2"}, {"L1L2", "l1_l2"},
                                                       {"MaxNorm", "max_norm"}, {"NonNeg", "non_neg"},
                                                       {"UnitNorm", "unit_norm"}, {"MinMaxNorm", "min_max_norm"}};
  auto it = names.find(*cls);
  if (it == names.end()) throw Error(where + ": unknown class '" + *cls + "'");
  ConfigMap out;
  out.set("name", it->second);
  if (const ConfigValue* c = m.find("config"); c && std::holds_alternative<ConfigMap>(c->value))
    for (const auto& [k, v] : std::get<ConfigMap>(c->value).items()) out.set(k, v);
  if (it->second == "l1" || it->second == "l2" || it->second == "l1_l2")
    for (const char* k : {"l1", "l2"})
      if (!out.has_value(k)) out.set(k, 0.0);
  if (const ConfigValue* a = out.find("axis"); a && std::holds_alternative<std::int64_t>(a->value))
    out.set("axis", ConfigList{*a});
  return out;
}

ConfigValue regularizer_config(const Regularizer& r, const std::string& where) {
  if (!r) return nullptr;
  if (r.name() != "l1" && r.name() != "l2" && r.name() != "l1_l2")
    throw Error(where + ": the regularizer '" + r.name() + "' is a C++ function, which a model config cannot hold "
                        "(l1, l2 and l1_l2 can be saved)");
  ConfigMap m;
  m.set("name", r.name());
  m.set("l1", r.l1());
  m.set("l2", r.l2());
  return m;
}

Regularizer regularizer_from_config(const ConfigValue& v, const std::string& where) {
  if (v.is_null()) return Regularizer();
  const auto* m = std::get_if<ConfigMap>(&v.value);
  if (!m) throw Error(where + ": a regularizer must be a map {name, l1, l2}");
  ConfigMap c = named_form(*m, where);
  c.where = where;
  const std::string& name = c.text("name");
  if (name != "l1" && name != "l2" && name != "l1_l2") throw Error(where + ": unknown regularizer '" + name + "'");
  double a = c.real("l1"), b = c.real("l2");
  if (!std::isfinite(a) || !std::isfinite(b)) throw Error(where + ": regularizer factors must be finite");
  return Regularizer(a, b);
}

ConfigValue constraint_config(const Constraint& c, const std::string& where) {
  if (!c) return nullptr;
  const std::string& n = c.name();
  if (n != "max_norm" && n != "non_neg" && n != "unit_norm" && n != "min_max_norm")
    throw Error(where + ": the constraint '" + n + "' is a C++ function, which a model config cannot hold (max_norm, "
                        "non_neg, unit_norm and min_max_norm can be saved)");
  ConfigMap m;
  m.set("name", n);
  for (const auto& [k, v] : c.params()) m.set(k, v);
  if (n != "non_neg") m.set("axis", c.axes());
  return m;
}

Constraint constraint_from_config(const ConfigValue& v, const std::string& where) {
  if (v.is_null()) return Constraint();
  const auto* m = std::get_if<ConfigMap>(&v.value);
  if (!m) throw Error(where + ": a constraint must be a map {name, ...}");
  ConfigMap c = named_form(*m, where);
  c.where = where;
  const std::string& name = c.text("name");
  auto axes = [&] {
    std::vector<int> out;
    for (std::int64_t a : c.ints("axis")) {
      if (a < -64 || a > 64) throw Error(where + ": constraint axis " + std::to_string(a) + " is out of range");
      out.push_back(static_cast<int>(a));
    }
    return out;
  };
  if (name == "max_norm") return max_norm(c.real("max_value"), axes());
  if (name == "non_neg") return non_neg();
  if (name == "unit_norm") return unit_norm(axes());
  if (name == "min_max_norm") return min_max_norm(c.real("min_value"), c.real("max_value"), c.real("rate"), axes());
  throw Error(where + ": unknown constraint '" + name + "'");
}

namespace {

ConfigValue pair_config(Stride2 s) { return ConfigList{ConfigValue(s.h), ConfigValue(s.w)}; }

Stride2 pair_from(const ConfigMap& c, std::string_view key) {
  auto v = c.ints(key);
  if (v.size() != 2) throw Error(c.where + ": config '" + std::string(key) + "' must be a list of 2 integers");
  return {v[0], v[1]};
}

std::int64_t positive(const ConfigMap& c, std::string_view key) {
  std::int64_t v = c.integer(key);
  if (v <= 0) throw Error(c.where + ": config '" + std::string(key) + "' must be positive, got " + std::to_string(v));
  return v;
}

int small_int(const ConfigMap& c, std::string_view key) {
  std::int64_t v = c.integer(key);
  if (v < -(1 << 20) || v > (1 << 20)) throw Error(c.where + ": config '" + std::string(key) + "' is out of range");
  return static_cast<int>(v);
}

// A small constant tensor (Normalization's mean): dtype, shape and values.
ConfigValue tensor_config(const Tensor& t) {
  Tensor v = t.dtype() == DType::float64 ? t : cast(t, DType::float64);
  ConfigMap m;
  m.set("dtype", std::string(name_of(t.dtype())));
  m.set("shape", t.shape().dims());
  ConfigList values;
  for (double x : v.to_vector<double>()) values.emplace_back(x);
  m.set("values", std::move(values));
  return m;
}

// Keras writes such a tensor (Normalization's mean) as a number or nested lists of numbers.
Tensor tensor_from_nested(const ConfigValue& v, const std::string& where) {
  std::vector<double> data;
  std::vector<std::int64_t> dims;
  std::function<void(const ConfigValue&, std::size_t)> walk = [&](const ConfigValue& x, std::size_t axis) {
    if (const auto* l = std::get_if<ConfigList>(&x.value)) {
      if (axis >= 8) throw Error(where + ": nested too deep");
      if (dims.size() == axis) dims.push_back(static_cast<std::int64_t>(l->size()));
      else if (dims[axis] != static_cast<std::int64_t>(l->size())) throw Error(where + ": ragged lists");
      for (const auto& e : *l) walk(e, axis + 1);
      return;
    }
    if (axis != dims.size()) throw Error(where + ": ragged lists");
    if (const auto* d = std::get_if<double>(&x.value)) data.push_back(*d);
    else if (const auto* i = std::get_if<std::int64_t>(&x.value)) data.push_back(static_cast<double>(*i));
    else throw Error(where + ": values must be numbers");
    if (data.size() > (std::size_t{1} << 24)) throw Error(where + ": too many values");
  };
  walk(v, 0);
  return cast(tensor(data, Shape(dims)), DType::float32);
}

Tensor tensor_from_config(const ConfigMap& c, std::string_view key) {
  if (const ConfigValue& v = c.at(key); !std::holds_alternative<ConfigMap>(v.value))
    return tensor_from_nested(v, c.where + " " + std::string(key));
  ConfigMap m = c.map(key);
  m.where = c.where + " " + std::string(key);
  std::vector<std::int64_t> dims = m.ints("shape");
  std::int64_t n = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || (d > 0 && n > (std::int64_t{1} << 40) / d)) throw Error(m.where + ": bad shape");
    n *= d;
  }
  const ConfigList& values = m.list("values");
  if (static_cast<std::int64_t>(values.size()) != n) throw Error(m.where + ": " + std::to_string(values.size()) + " values for the shape");
  std::vector<double> data;
  for (const auto& v : values) {
    if (const auto* d = std::get_if<double>(&v.value)) data.push_back(*d);
    else if (const auto* i = std::get_if<std::int64_t>(&v.value)) data.push_back(static_cast<double>(*i));
    else throw Error(m.where + ": values must be numbers");
  }
  const std::string& dtype = m.text("dtype");
  DType dt = dtype == "float32" ? DType::float32 : dtype == "float64" ? DType::float64 : DType::float32;
  if (dtype != "float32" && dtype != "float64") throw Error(m.where + ": dtype '" + dtype + "' (float32 or float64 expected)");
  Tensor t = tensor(data, Shape(dims));
  return dt == DType::float64 ? t : cast(t, dt);
}

template <class T>
std::shared_ptr<Layer> as_layer(std::shared_ptr<T> p) {
  return p;
}

std::map<std::string, LayerFactory> builtin_factories() {
  std::map<std::string, LayerFactory> f;
  ef::detail::add_attention_layer_factories(f);  // src/nn/attention.cpp
  ef::detail::add_recurrent_layer_factories(f);  // SimpleRNN, LSTM, GRU, Bidirectional
  ef::detail::add_conv1d_layer_factories(f);     // Conv1D, 1-D pooling, global max pooling
  ef::detail::add_dense_layer_factories(f);      // src/nn/dense.cpp, from Dense::args()
  ef::detail::add_dropout_layer_factories(f);    // src/nn/dropout.cpp, from Dropout::args()
  ef::detail::add_conv2d_layer_factories(f);     // src/nn/conv_layers.cpp, from Conv2D::args()
  auto conv_options = [](const ConfigMap& c, auto& o) {
    o.strides = pair_from(c, "strides");
    o.padding = c.text("padding");
    if (o.padding != "valid" && o.padding != "same") throw Error(c.where + ": padding must be 'valid' or 'same'");
    o.activation = activation_from_config(c.at("activation"), c.where);
    o.use_bias = c.flag("use_bias");
    o.kernel_regularizer = regularizer_from_config(c.at("kernel_regularizer"), c.where + " kernel_regularizer");
    o.bias_regularizer = regularizer_from_config(c.at("bias_regularizer"), c.where + " bias_regularizer");
    o.kernel_constraint = constraint_from_config(c.at("kernel_constraint"), c.where + " kernel_constraint");
    o.bias_constraint = constraint_from_config(c.at("bias_constraint"), c.where + " bias_constraint");
  };
  f["Conv2DTranspose"] = [conv_options](const LayerConfig& lc) {
    const ConfigMap& c = lc.config;
    Conv2DTransposeOptions o;
    conv_options(c, o);
    read_initializer(c, "kernel_initializer", o.kernel_initializer);
    read_initializer(c, "bias_initializer", o.bias_initializer);
    return as_layer(std::make_shared<Conv2DTranspose>(positive(c, "filters"), pair_from(c, "kernel_size"), o, c.text("name")));
  };
  auto pooling = [](bool max) {
    return [max](const LayerConfig& lc) -> std::shared_ptr<Layer> {
      const ConfigMap& c = lc.config;
      std::optional<Stride2> strides;
      if (c.has_value("strides")) strides = pair_from(c, "strides");
      if (max) return std::make_shared<MaxPool2D>(pair_from(c, "pool_size"), strides, c.text("padding"), c.text("name"));
      return std::make_shared<AveragePooling2D>(pair_from(c, "pool_size"), strides, c.text("padding"), c.text("name"));
    };
  };
  f["MaxPool2D"] = f["MaxPooling2D"] = pooling(true);
  f["AveragePooling2D"] = f["AvgPool2D"] = pooling(false);
  f["GlobalAveragePooling2D"] = [](const LayerConfig& lc) { return as_layer(std::make_shared<GlobalAveragePooling2D>(lc.config.text("name"))); };
  f["Flatten"] = [](const LayerConfig& lc) { return as_layer(std::make_shared<Flatten>(lc.config.text("name"))); };
  f["Reshape"] = [](const LayerConfig& lc) {
    auto dims = lc.config.ints("target_shape");
    for (std::int64_t d : dims)
      if (d < -1) throw Error(lc.config.where + ": target_shape dims must be >= -1");
    return as_layer(std::make_shared<Reshape>(Shape(dims), lc.config.text("name")));
  };
  f["Activation"] = [](const LayerConfig& lc) {
    return as_layer(std::make_shared<Activation>(activation_from_config(lc.config.at("activation"), lc.config.where), lc.config.text("name")));
  };
  f["BatchNormalization"] = [](const LayerConfig& lc) {
    const ConfigMap& c = lc.config;
    BatchNormalizationOptions o;
    o.momentum = c.real("momentum");
    o.epsilon = c.real("epsilon");
    if (c.has_value("axis")) {
      auto axes = c.ints("axis");
      if (axes.size() != 1 || axes[0] < -64 || axes[0] > 64)
        throw Error(ErrorCode::unimplemented, c.where + ": BatchNormalization over several axes is not supported");
      o.axis = static_cast<int>(axes[0]);
    }
    if (c.has_value("center")) o.center = c.flag("center");
    if (c.has_value("scale")) o.scale = c.flag("scale");
    read_initializer(c, "beta_initializer", o.beta_initializer);
    read_initializer(c, "gamma_initializer", o.gamma_initializer);
    read_initializer(c, "moving_mean_initializer", o.moving_mean_initializer);
    read_initializer(c, "moving_variance_initializer", o.moving_variance_initializer);
    return as_layer(std::make_shared<BatchNormalization>(o, c.text("name")));
  };
  f["LayerNormalization"] = [](const LayerConfig& lc) {
    return as_layer(std::make_shared<LayerNormalization>(lc.config.real("epsilon"), lc.config.text("name")));
  };
  f["Embedding"] = [](const LayerConfig& lc) {
    const ConfigMap& c = lc.config;
    auto e = std::make_shared<Embedding>(positive(c, "input_dim"), positive(c, "output_dim"), c.text("name"));
    e->mask_zero = c.has("mask_zero") && c.flag("mask_zero");
    read_initializer(c, "embeddings_initializer", e->embeddings_initializer);
    return as_layer(e);
  };
  f["Add"] = [](const LayerConfig& lc) { return as_layer(std::make_shared<Add>(lc.config.text("name"))); };
  f["Concatenate"] = [](const LayerConfig& lc) {
    return as_layer(std::make_shared<Concatenate>(small_int(lc.config, "axis"), lc.config.text("name")));
  };
  f["Rescaling"] = [](const LayerConfig& lc) {
    return as_layer(std::make_shared<Rescaling>(lc.config.real("scale"), lc.config.real("offset"), lc.config.text("name")));
  };
  f["Normalization"] = [](const LayerConfig& lc) {
    const ConfigMap& c = lc.config;
    std::vector<int> axis;
    for (std::int64_t i : c.ints("axis")) {
      if (i < -64 || i > 64) throw Error(c.where + ": axis must be small integers");
      axis.push_back(static_cast<int>(i));
    }
    std::optional<Tensor> mean, variance;
    if (c.has_value("mean")) mean = tensor_from_config(c, "mean");
    if (c.has_value("variance")) variance = tensor_from_config(c, "variance");
    bool invert = c.has_value("invert") && c.flag("invert");
    return as_layer(std::make_shared<Normalization>(axis, mean, variance, invert, c.text("name")));
  };
  f["UpSampling2D"] = [](const LayerConfig& lc) {
    return as_layer(std::make_shared<UpSampling2D>(pair_from(lc.config, "size"), lc.config.text("interpolation"), lc.config.text("name")));
  };
  f["ZeroPadding2D"] = [](const LayerConfig& lc) {
    const ConfigMap& c = lc.config;
    const ConfigList& rows = c.list("padding");
    if (rows.size() != 2) throw Error(c.where + ": padding must be [[top, bottom], [left, right]]");
    Padding2D p;
    std::int64_t* out[2][2] = {{&p.top, &p.bottom}, {&p.left, &p.right}};
    for (int r = 0; r < 2; ++r) {
      const auto* row = std::get_if<ConfigList>(&rows[static_cast<std::size_t>(r)].value);
      if (!row || row->size() != 2) throw Error(c.where + ": padding must be [[top, bottom], [left, right]]");
      for (int k = 0; k < 2; ++k) {
        const auto* v = std::get_if<std::int64_t>(&(*row)[static_cast<std::size_t>(k)].value);
        if (!v) throw Error(c.where + ": padding must be integers");
        *out[r][k] = *v;
      }
    }
    return as_layer(std::make_shared<ZeroPadding2D>(p, c.text("name")));
  };
  f["LeakyReLU"] = [](const LayerConfig& lc) {
    return as_layer(std::make_shared<LeakyReLU>(lc.config.real("negative_slope"), lc.config.text("name")));
  };
  f["ELU"] = [](const LayerConfig& lc) { return as_layer(std::make_shared<ELU>(lc.config.real("alpha"), lc.config.text("name"))); };
  return f;
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, LayerFactory> factories = builtin_factories();
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_layer_factory(const std::string& class_name, LayerFactory factory) {
  if (class_name.empty()) throw Error("register_layer: the class name is empty");
  if (!factory) throw Error("register_layer('" + class_name + "'): the factory is empty");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.factories[class_name] = std::move(factory);
}

bool is_layer_registered(const std::string& class_name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.factories.count(class_name) != 0;
}

std::shared_ptr<Layer> layer_from_config(const LayerConfig& config, const std::string& where) {
  LayerFactory factory;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.factories.find(config.class_name);
    if (it != r.factories.end()) factory = it->second;
  }
  std::string name = config.config.has_value("name") && std::holds_alternative<std::string>(config.config.at("name").value)
                         ? config.config.text("name")
                         : std::string("?");
  std::string label = where + ": layer '" + name + "' (" + config.class_name + ")";
  if (!factory)
    throw Error(ErrorKind(ErrorCode::not_found, PythonBuiltin::type_error),
                label + ": no layer class '" + config.class_name +
                    "' is registered; register it before loading with "
                    "ef::register_layer<" +
                    config.class_name + ">(\"" + config.class_name +
                    "\", factory) (in Python: @ef.keras.saving.register_keras_serializable(), or "
                    "load_model(path, custom_objects={...}))");
  LayerConfig c = config;
  c.config.where = label;
  std::shared_ptr<Layer> layer;
  try {
    layer = factory(c);
  } catch (const InvalidLayerName&) {
    throw;  // as it is: its type makes Python's ValueError; the label would repeat the raw name (a NUL cuts it)
  } catch (const Error& e) {
    std::string msg = e.what();
    if (msg.rfind(label, 0) == 0) throw;
    throw Error(e.kind(), label + ": " + msg);
  }
  if (!layer) throw Error(label + ": the registered factory returned no layer");
  apply_base_config(*layer, c.config);
  return layer;
}

// ---------------------------------------------------------------- the weight budget of a load

}  // namespace ef::nn

namespace ef::detail {
namespace {
thread_local WeightBudget* current_budget = nullptr;
}

WeightBudget::WeightBudget(std::uint64_t bytes, std::string w) : left(bytes), what(std::move(w)), previous_(current_budget) {
  current_budget = this;
}
WeightBudget::~WeightBudget() { current_budget = previous_; }

void charge_weight_budget(const Shape& shape, DType dtype, const std::string& weight) {
  WeightBudget* b = current_budget;
  if (!b || !shape.is_static()) return;
  std::uint64_t bytes = size_of(dtype);
  for (std::int64_t d : shape.dims()) {
    if (d < 0) return;
    if (d != 0 && bytes > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(d)) bytes = std::uint64_t{1} << 62;
    else bytes *= static_cast<std::uint64_t>(d);
  }
  if (bytes > b->left)
    throw Error(b->what + ": the model's config makes weight '" + weight + "' " + TensorSpec{dtype, shape, {}}.str() + " (" +
                std::to_string(bytes) + " bytes), more than the file's weights hold: the file is damaged");
  b->left -= bytes;
}
}  // namespace ef::detail

namespace ef::nn {

// ---------------------------------------------------------------- get_config of the built-in layers

std::optional<LayerConfig> Layer::get_config() const { return std::nullopt; }

namespace {
std::string where_of(const Layer& l) { return "layer '" + l.name() + "' (" + l.type_name() + ")"; }
}  // namespace

namespace {
template <class O>
void conv_config(ConfigMap& c, const O& o, const std::string& w) {
  c.set("strides", pair_config(o.strides));
  c.set("padding", o.padding);
  c.set("activation", activation_config(o.activation, w));
  c.set("use_bias", o.use_bias);
  c.set("kernel_regularizer", regularizer_config(o.kernel_regularizer, w + " kernel_regularizer"));
  c.set("bias_regularizer", regularizer_config(o.bias_regularizer, w + " bias_regularizer"));
  c.set("kernel_constraint", constraint_config(o.kernel_constraint, w + " kernel_constraint"));
  c.set("bias_constraint", constraint_config(o.bias_constraint, w + " bias_constraint"));
}
}  // namespace

std::optional<LayerConfig> Conv2DTranspose::get_config() const {
  auto c = base_config(*this, "Conv2DTranspose");
  c.config.set("filters", filters_);
  c.config.set("kernel_size", pair_config(kernel_size_));
  conv_config(c.config, options_, where_of(*this));
  set_initializer(c.config, "kernel_initializer", options_.kernel_initializer);
  set_initializer(c.config, "bias_initializer", options_.bias_initializer);
  return c;
}

std::optional<LayerConfig> Pooling2D::get_config() const {
  auto c = base_config(*this, max_ ? "MaxPool2D" : "AveragePooling2D");
  c.config.set("pool_size", pair_config(pool_));
  c.config.set("strides", strides_ ? pair_config(*strides_) : ConfigValue());
  c.config.set("padding", padding_);
  return c;
}

std::optional<LayerConfig> GlobalAveragePooling2D::get_config() const { return base_config(*this, "GlobalAveragePooling2D"); }
std::optional<LayerConfig> Flatten::get_config() const { return base_config(*this, "Flatten"); }

std::optional<LayerConfig> Reshape::get_config() const {
  auto c = base_config(*this, "Reshape");
  c.config.set("target_shape", target_.dims());
  return c;
}

std::optional<LayerConfig> Activation::get_config() const {
  auto c = base_config(*this, "Activation");
  c.config.set("activation", activation_config(fn_, where_of(*this)));
  return c;
}

std::optional<LayerConfig> BatchNormalization::get_config() const {
  auto c = base_config(*this, "BatchNormalization");
  c.config.set("axis", o_.axis);
  c.config.set("momentum", o_.momentum);
  c.config.set("epsilon", o_.epsilon);
  c.config.set("center", o_.center);
  c.config.set("scale", o_.scale);
  set_initializer(c.config, "beta_initializer", o_.beta_initializer);
  set_initializer(c.config, "gamma_initializer", o_.gamma_initializer);
  set_initializer(c.config, "moving_mean_initializer", o_.moving_mean_initializer);
  set_initializer(c.config, "moving_variance_initializer", o_.moving_variance_initializer);
  return c;
}

std::optional<LayerConfig> LayerNormalization::get_config() const {
  auto c = base_config(*this, "LayerNormalization");
  c.config.set("epsilon", epsilon_);
  return c;
}

std::optional<LayerConfig> Embedding::get_config() const {
  auto c = base_config(*this, "Embedding");
  c.config.set("input_dim", input_dim_);
  c.config.set("output_dim", output_dim_);
  set_initializer(c.config, "embeddings_initializer", embeddings_initializer);
  if (mask_zero) c.config.set("mask_zero", true);
  return c;
}

std::optional<LayerConfig> Add::get_config() const { return base_config(*this, "Add"); }

std::optional<LayerConfig> Concatenate::get_config() const {
  auto c = base_config(*this, "Concatenate");
  c.config.set("axis", axis_);
  return c;
}

std::optional<LayerConfig> Lambda::get_config() const {
  throw Error("layer '" + name() + "' (Lambda) holds a C++ function, which a saved model cannot hold: write a Layer "
              "subclass with get_config() and register it with ef::register_layer<YourLayer>(\"YourLayer\", factory)");
}

std::optional<LayerConfig> Rescaling::get_config() const {
  auto c = base_config(*this, "Rescaling");
  c.config.set("scale", scale_);
  c.config.set("offset", offset_);
  return c;
}

std::optional<LayerConfig> Normalization::get_config() const {
  auto c = base_config(*this, "Normalization");
  c.config.set("axis", axis_);
  c.config.set("mean", input_mean_ ? tensor_config(*input_mean_) : ConfigValue());
  c.config.set("variance", input_variance_ ? tensor_config(*input_variance_) : ConfigValue());
  c.config.set("invert", invert_);
  return c;
}

std::optional<LayerConfig> UpSampling2D::get_config() const {
  auto c = base_config(*this, "UpSampling2D");
  c.config.set("size", pair_config(size_));
  c.config.set("interpolation", interpolation_);
  return c;
}

std::optional<LayerConfig> ZeroPadding2D::get_config() const {
  auto c = base_config(*this, "ZeroPadding2D");
  c.config.set("padding", ConfigList{ConfigValue(std::vector<std::int64_t>{padding_.top, padding_.bottom}),
                                     ConfigValue(std::vector<std::int64_t>{padding_.left, padding_.right})});
  return c;
}

std::optional<LayerConfig> LeakyReLU::get_config() const {
  auto c = base_config(*this, "LeakyReLU");
  c.config.set("negative_slope", slope_);
  return c;
}

std::optional<LayerConfig> ELU::get_config() const {
  auto c = base_config(*this, "ELU");
  c.config.set("alpha", alpha_);
  return c;
}

}  // namespace ef::nn
