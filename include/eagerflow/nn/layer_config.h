#pragma once
// Layer configs, as Keras' get_config / from_config: the class name and the constructor
// arguments that rebuild a layer (without its weights, which are saved beside it). What
// ef::save_model writes for a model's architecture (eagerflow/saving/model.h).
//
//   class Scale : public ef::nn::Layer {
//    public:
//     explicit Scale(double factor, std::string name = "") : Layer(std::move(name)), factor_(factor) {}
//     std::optional<ef::nn::LayerConfig> get_config() const override {
//       auto c = ef::nn::base_config(*this, "Scale");
//       c.config.set("factor", factor_);
//       return c;
//     }
//     ...
//   };
//   ef::register_layer<Scale>("Scale", [](const ef::nn::LayerConfig& c) {
//     return std::make_shared<Scale>(c.config.real("factor"), c.config.text("name"));
//   });
//
// Built-in layers are registered by an explicit list (no static self-registration, which a
// static library would drop); user layers register the same way before load_model.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "eagerflow/core/dtype.h"
#include "eagerflow/core/shape.h"

namespace ef::nn {

class Layer;
class DTypePolicy;
class Regularizer;
class Constraint;
class ActivationFn;
struct ConfigValue;
using ConfigList = std::vector<ConfigValue>;

// A JSON object: keys in insertion order, unique. Typed reads throw ef::Error naming the key
// (and `where`, set by the loader to the layer's name and class) when it is missing or has
// another type.
class ConfigMap {
 public:
  ConfigMap& set(const std::string& key, ConfigValue value);  // replaces an existing key
  const ConfigValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // Present and not null.
  bool has_value(std::string_view key) const;
  const ConfigValue& at(std::string_view key) const;
  bool flag(std::string_view key) const;
  std::int64_t integer(std::string_view key) const;
  double real(std::string_view key) const;  // an integer is read as a real too
  const std::string& text(std::string_view key) const;
  const ConfigList& list(std::string_view key) const;
  const ConfigMap& map(std::string_view key) const;
  std::vector<std::int64_t> ints(std::string_view key) const;
  const std::vector<std::pair<std::string, ConfigValue>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  // Prefixes error messages ("layer 'dense' (Dense)").
  std::string where = "config";

 private:
  [[noreturn]] void bad(std::string_view key, const std::string& why) const;
  std::vector<std::pair<std::string, ConfigValue>> items_;
};

// null, a boolean, an integer, a real, text, a list or a map.
struct ConfigValue {
  using Value = std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, ConfigList, ConfigMap>;
  ConfigValue() : value(nullptr) {}
  ConfigValue(std::nullptr_t) : value(nullptr) {}                         // NOLINT
  ConfigValue(bool v) : value(v) {}                                       // NOLINT
  ConfigValue(int v) : value(std::int64_t{v}) {}                          // NOLINT
  ConfigValue(std::int64_t v) : value(v) {}                               // NOLINT
  ConfigValue(double v) : value(v) {}                                     // NOLINT
  ConfigValue(const char* v) : value(std::string(v)) {}                   // NOLINT
  ConfigValue(std::string v) : value(std::move(v)) {}                     // NOLINT
  ConfigValue(ConfigList v) : value(std::move(v)) {}                      // NOLINT
  ConfigValue(ConfigMap v) : value(std::move(v)) {}                       // NOLINT
  ConfigValue(const std::vector<std::int64_t>& v);                        // NOLINT: a list of integers
  ConfigValue(const std::vector<int>& v);                                 // NOLINT
  bool is_null() const { return std::holds_alternative<std::nullptr_t>(value); }
  bool operator==(const ConfigValue& other) const;
  Value value;
};

inline bool operator==(const ConfigMap& a, const ConfigMap& b) { return a.items() == b.items(); }

struct LayerConfig {
  std::string class_name;
  ConfigMap config;
};

// The config every layer starts from: {"name", "trainable", "dtype"} and, when the layer has
// one, its "activity_regularizer". apply_base_config sets trainable, the dtype policy and the
// activity regularizer on a layer a factory made (layer_from_config does this after every
// factory).
LayerConfig base_config(const Layer& layer, std::string class_name);
void apply_base_config(Layer& layer, const ConfigMap& config);
// A dtype policy as Keras 3 serializes it: {"module": "keras", "class_name": "DTypePolicy",
// "config": {"name": "mixed_bfloat16"}, "registered_name": null}. Read back from that form or
// from a bare name ("float32", as Keras 3.0 wrote it).
ConfigValue dtype_policy_config(const DTypePolicy& policy);
DTypePolicy dtype_policy_from_config(const ConfigValue& v, const std::string& where);

// Sub-objects by Keras name and parameters. An activation, regularizer or constraint made from
// a C++ function has no config: an ef::Error naming `where` and the argument.
ConfigValue activation_config(const ActivationFn& fn, const std::string& where);
ActivationFn activation_from_config(const ConfigValue& v, const std::string& where);
ConfigValue regularizer_config(const Regularizer& r, const std::string& where);  // null when none
Regularizer regularizer_from_config(const ConfigValue& v, const std::string& where);
ConfigValue constraint_config(const Constraint& c, const std::string& where);  // null when none
Constraint constraint_from_config(const ConfigValue& v, const std::string& where);

using LayerFactory = std::function<std::shared_ptr<Layer>(const LayerConfig&)>;

// Registers (or replaces) the factory for `class_name`. Built-in classes: Dense, Conv2D,
// Conv2DTranspose, MaxPool2D (MaxPooling2D), AveragePooling2D, GlobalAveragePooling2D, Flatten,
// Reshape, Dropout, Activation, BatchNormalization, LayerNormalization, Embedding, Add,
// Concatenate, Rescaling, Normalization, UpSampling2D, ZeroPadding2D, LeakyReLU, ELU.
void register_layer_factory(const std::string& class_name, LayerFactory factory);
bool is_layer_registered(const std::string& class_name);
// Rebuilds a layer: the factory registered for config.class_name, then apply_base_config.
// An unknown class is an ef::Error that names it and says how to register it; a factory's
// error is prefixed with `where`, the layer's name and class.
std::shared_ptr<Layer> layer_from_config(const LayerConfig& config, const std::string& where = "load_model");


}  // namespace ef::nn

namespace ef {

namespace detail {
// While a WeightBudget lives on this thread, Layer::add_weight charges each new weight's bytes
// to it and throws ef::Error (before allocating) when they exceed it: load_model rebuilds a
// model from a config that may be damaged, and its weights can be no larger than the file's.
class WeightBudget {
 public:
  WeightBudget(std::uint64_t bytes, std::string what);
  ~WeightBudget();
  WeightBudget(const WeightBudget&) = delete;
  WeightBudget& operator=(const WeightBudget&) = delete;
  std::uint64_t left;
  std::string what;

 private:
  WeightBudget* previous_;
};
void charge_weight_budget(const Shape& shape, DType dtype, const std::string& weight);
}  // namespace detail

// ef::register_layer<MyLayer>("MyLayer", factory): load_model rebuilds layers of that class
// from their configs with factory (see the example at the top of this header).
template <class T>
bool register_layer(const std::string& class_name, std::function<std::shared_ptr<T>(const nn::LayerConfig&)> factory) {
  nn::register_layer_factory(class_name, [factory = std::move(factory)](const nn::LayerConfig& c) -> std::shared_ptr<nn::Layer> {
    return factory(c);
  });
  return true;
}
// The same with T::from_config(const LayerConfig&) as the factory.
template <class T>
bool register_layer(const std::string& class_name) {
  return register_layer<T>(class_name, [](const nn::LayerConfig& c) { return T::from_config(c); });
}

}  // namespace ef
