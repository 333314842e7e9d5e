#pragma once
// The machinery of declared layer arguments (eagerflow/nn/layer_args.h) that a layer's source
// file uses: its constructor's checks, get_config's keys and its factory come from its table.
// Private to src/: a user of the public headers only sees the tables.
#include <memory>
#include <type_traits>

#include "eagerflow/core/error.h"
#include "eagerflow/nn/layer_args.h"
#include "eagerflow/ops/ops.h"  // Stride2

namespace ef::nn {

// Keras' base arguments as a layer's table ends: name, trainable, dtype, input_shape, input_dim,
// batch_size (activity_regularizer is positional in Dense and Conv2D: each table places it).
template <class O>
void append_base_args(std::vector<LayerArg<O>>& args) {
  args.push_back({"name", &O::name, ArgUse::base_config, false, true});
  args.push_back({"trainable", &O::trainable, ArgUse::base_config, false, true});
  args.push_back({"dtype", &O::dtype, ArgUse::base_config, false, true});
  args.push_back({"input_shape", &O::input_shape, ArgUse::construct_only, false, true});
  args.push_back({"input_dim", &O::input_dim, ArgUse::construct_only, false, true});
  args.push_back({"batch_size", &O::batch_size, ArgUse::construct_only, false, true});
}

// One value to and from its config form (src/nn/layer_args.cpp); `where` prefixes errors.
ConfigValue arg_to_config(bool v, const std::string& where);
ConfigValue arg_to_config(std::int64_t v, const std::string& where);
ConfigValue arg_to_config(double v, const std::string& where);
ConfigValue arg_to_config(const std::string& v, const std::string& where);
ConfigValue arg_to_config(Stride2 v, const std::string& where);  // [h, w]
ConfigValue arg_to_config(const ActivationFn& v, const std::string& where);
ConfigValue arg_to_config(const Regularizer& v, const std::string& where);
ConfigValue arg_to_config(const Constraint& v, const std::string& where);
ConfigValue arg_to_config(const std::optional<std::int64_t>& v, const std::string& where);
void arg_from_config(bool& out, const ConfigMap& c, std::string_view key);
void arg_from_config(std::int64_t& out, const ConfigMap& c, std::string_view key);
void arg_from_config(double& out, const ConfigMap& c, std::string_view key);
void arg_from_config(std::string& out, const ConfigMap& c, std::string_view key);
void arg_from_config(Stride2& out, const ConfigMap& c, std::string_view key);
void arg_from_config(ActivationFn& out, const ConfigMap& c, std::string_view key);
void arg_from_config(Regularizer& out, const ConfigMap& c, std::string_view key);
void arg_from_config(Constraint& out, const ConfigMap& c, std::string_view key);
void arg_from_config(Initializer& out, const ConfigMap& c, std::string_view key);  // an unknown class keeps `out`
void arg_from_config(std::optional<std::int64_t>& out, const ConfigMap& c, std::string_view key);
// The rule of a check ("[tag] units must be positive, got 0"); an unset optional passes.
void check_arg(ArgCheck check, double value, std::string_view name, const std::string& tag);
void check_arg(ArgCheck check, std::int64_t value, std::string_view name, const std::string& tag);
void check_arg(ArgCheck check, const std::optional<std::int64_t>& value, std::string_view name, const std::string& tag);
void check_arg(ArgCheck check, Stride2 value, std::string_view name, const std::string& tag);
void check_arg(ArgCheck check, const std::string& value, std::string_view name, const std::string& tag);
// Sets what LayerOptions holds on a layer its constructor made (not the name, which Layer's
// constructor takes): trainable, the dtype policy, the activity regularizer, the input shape.
void apply_layer_options(Layer& layer, const LayerOptions& o);

// An initializer under `key` where it has a Keras name (else left out: the default comes back),
// and read back where the config names one eagerflow knows.
inline void set_initializer(ConfigMap& c, const char* key, const Initializer& init) {
  if (ConfigValue v = initializer_config(init); !v.is_null()) c.set(key, std::move(v));
}
inline void read_initializer(const ConfigMap& c, const char* key, Initializer& out) {
  if (c.has_value(key))
    if (std::optional<Initializer> init = initializer_from_config(c.at(key), c.where)) out = std::move(*init);
}

namespace detail {
template <class T>
constexpr bool saved_in_config = !std::is_same_v<T, std::optional<DTypePolicy>> &&
                                 !std::is_same_v<T, std::optional<std::vector<std::int64_t>>>;
}  // namespace detail

// The checks the table declares, for the layer's constructor (tag: "dense").
template <class O>
void check_options(const O& o, std::span<const LayerArg<O>> args, const std::string& tag) {
  for (const auto& a : args) {
    if (a.check == ArgCheck::any) continue;
    std::visit([&](auto m) {
      using T = std::remove_cvref_t<decltype(o.*m)>;
      if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::optional<std::int64_t>> ||
                    std::is_same_v<T, Stride2> || std::is_same_v<T, std::string>)
        check_arg(a.check, o.*m, a.name, tag);
      else
        throw Error(ErrorCode::internal, tag + ": argument '" + std::string(a.name) + "' declares a check for a value it cannot check");
    }, a.member);
  }
}

// get_config's own keys, in table order, after base_config's.
template <class O>
void write_config(const O& o, std::span<const LayerArg<O>> args, ConfigMap& c, const std::string& where) {
  for (const auto& a : args) {
    if (a.use != ArgUse::config) continue;
    std::visit([&](auto m) {
      using T = std::remove_cvref_t<decltype(o.*m)>;
      if constexpr (std::is_same_v<T, Initializer>) {
        // A function of your own has no Keras name: left out, the layer's default comes back.
        if (ConfigValue v = initializer_config(o.*m); !v.is_null()) c.set(std::string(a.name), std::move(v));
      } else if constexpr (detail::saved_in_config<T>) {
        c.set(std::string(a.name), arg_to_config(o.*m, where + " " + std::string(a.name)));
      }
    }, a.member);
  }
}

// The factory's half: the options a config holds (its own keys and the name; layer_from_config
// applies trainable, dtype and activity_regularizer). A required key missing is an error naming
// it; another missing key keeps its default (a config written before the argument existed).
template <class O>
O options_from_config(const ConfigMap& c, std::span<const LayerArg<O>> args) {
  O o;
  if (c.has_value("name")) o.name = c.text("name");
  for (const auto& a : args) {
    if (a.use != ArgUse::config || (!a.required && !c.has(a.name))) continue;
    std::visit([&](auto m) {
      using T = std::remove_cvref_t<decltype(o.*m)>;
      if constexpr (detail::saved_in_config<T>) arg_from_config(o.*m, c, a.name);
    }, a.member);
  }
  return o;
}

// The layer_from_config factory of a layer L built from O: `L(options_from_config(config, L::args()))`.
template <class L, class O>
LayerFactory factory_from_args() {
  return [](const LayerConfig& lc) -> std::shared_ptr<Layer> {
    return std::make_shared<L>(options_from_config<O>(lc.config, L::args()));
  };
}

}  // namespace ef::nn
