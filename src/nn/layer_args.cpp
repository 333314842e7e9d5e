// The value conversions and checks of declared layer arguments (eagerflow/nn/layer_args.h).
#include "nn/layer_args.h"

#include "eagerflow/core/error.h"

namespace ef::nn {

ConfigValue arg_to_config(bool v, const std::string&) { return v; }
ConfigValue arg_to_config(std::int64_t v, const std::string&) { return v; }
ConfigValue arg_to_config(double v, const std::string&) { return v; }
ConfigValue arg_to_config(const std::string& v, const std::string&) { return v; }
ConfigValue arg_to_config(Stride2 v, const std::string&) { return ConfigList{ConfigValue(v.h), ConfigValue(v.w)}; }
ConfigValue arg_to_config(const ActivationFn& v, const std::string& where) { return activation_config(v, where); }
ConfigValue arg_to_config(const Regularizer& v, const std::string& where) { return regularizer_config(v, where); }
ConfigValue arg_to_config(const Constraint& v, const std::string& where) { return constraint_config(v, where); }
ConfigValue arg_to_config(const std::optional<std::int64_t>& v, const std::string&) {
  return v ? ConfigValue(*v) : ConfigValue();
}

namespace {
std::string where_of(const ConfigMap& c, std::string_view key) { return c.where + " " + std::string(key); }
}  // namespace

void arg_from_config(bool& out, const ConfigMap& c, std::string_view key) { out = c.flag(key); }
void arg_from_config(std::int64_t& out, const ConfigMap& c, std::string_view key) { out = c.integer(key); }
void arg_from_config(double& out, const ConfigMap& c, std::string_view key) { out = c.real(key); }
void arg_from_config(std::string& out, const ConfigMap& c, std::string_view key) { out = c.text(key); }
void arg_from_config(Stride2& out, const ConfigMap& c, std::string_view key) {
  std::vector<std::int64_t> v = c.ints(key);
  if (v.size() != 2) throw Error(c.where + ": config '" + std::string(key) + "' must be a list of 2 integers");
  out = {v[0], v[1]};
}
void arg_from_config(ActivationFn& out, const ConfigMap& c, std::string_view key) {
  out = activation_from_config(c.at(key), where_of(c, key));
}
void arg_from_config(Regularizer& out, const ConfigMap& c, std::string_view key) {
  out = regularizer_from_config(c.at(key), where_of(c, key));
}
void arg_from_config(Constraint& out, const ConfigMap& c, std::string_view key) {
  out = constraint_from_config(c.at(key), where_of(c, key));
}
void arg_from_config(Initializer& out, const ConfigMap& c, std::string_view key) {
  if (std::optional<Initializer> init = initializer_from_config(c.at(key), where_of(c, key))) out = std::move(*init);
}
void arg_from_config(std::optional<std::int64_t>& out, const ConfigMap& c, std::string_view key) {
  out = c.has_value(key) ? std::optional<std::int64_t>(c.integer(key)) : std::nullopt;
}

namespace {
// A table that declares a check its member's type does not have: a bug of the table.
[[noreturn]] void cannot_check(std::string_view name, const std::string& tag) {
  throw Error(ErrorCode::internal, tag + ": argument '" + std::string(name) + "' declares a check its type does not have");
}

template <class T>
void check_number(ArgCheck check, T value, std::string_view name, const std::string& tag) {
  const char* rule = nullptr;  // comparisons written so that NaN fails each
  switch (check) {
    case ArgCheck::any: break;
    case ArgCheck::positive: rule = value > 0 ? nullptr : " must be positive"; break;
    case ArgCheck::non_negative: rule = value >= 0 ? nullptr : " must be non-negative"; break;
    case ArgCheck::fraction: rule = value >= 0 && value < 1 ? nullptr : " must be in [0, 1)"; break;
    default: cannot_check(name, tag);
  }
  if (rule) fail(tag, std::string(name) + rule + ", got " + std::to_string(value));
}
}  // namespace

void check_arg(ArgCheck check, std::int64_t value, std::string_view name, const std::string& tag) {
  check_number(check, value, name, tag);
}
void check_arg(ArgCheck check, double value, std::string_view name, const std::string& tag) {
  check_number(check, value, name, tag);
}
void check_arg(ArgCheck check, const std::optional<std::int64_t>& value, std::string_view name, const std::string& tag) {
  if (value) check_arg(check, *value, name, tag);
}
void check_arg(ArgCheck check, Stride2 value, std::string_view name, const std::string& tag) {
  if (check != ArgCheck::positive) cannot_check(name, tag);
  if (value.h <= 0 || value.w <= 0)
    fail(tag, std::string(name) + " must be positive, got (" + std::to_string(value.h) + ", " + std::to_string(value.w) + ")");
}
void check_arg(ArgCheck check, const std::string& value, std::string_view name, const std::string& tag) {
  if (check == ArgCheck::padding) {
    if (value != "valid" && value != "same") fail(tag, std::string(name) + " must be \"valid\" or \"same\", got \"" + value + "\"");
  } else if (check == ArgCheck::channels_last) {
    if (value != "channels_last") fail(tag, "only " + std::string(name) + "=\"channels_last\" is supported (NHWC), got \"" + value + "\"");
  } else {
    cannot_check(name, tag);
  }
}

void apply_layer_options(Layer& layer, const LayerOptions& o) {
  if (o.dtype) layer.set_dtype_policy(*o.dtype);
  if (!o.trainable) layer.set_trainable(false);
  if (o.activity_regularizer) layer.set_activity_regularizer(o.activity_regularizer);
  std::optional<std::vector<std::int64_t>> shape = o.input_shape;
  if (!shape && o.input_dim) shape = std::vector<std::int64_t>{*o.input_dim};  // Keras 2: input_shape wins
  if (o.batch_size && !shape) fail(layer.name(), "batch_size= needs input_shape= (or input_dim=)");
  if (!shape) return;
  std::vector<std::int64_t> dims{o.batch_size ? *o.batch_size : kDynamic};
  for (std::int64_t d : *shape) {
    if (d < 0 && d != kDynamic)
      fail(layer.name(), "input_shape dims must be non-negative (or unknown), got " + Shape(*shape).str());
    dims.push_back(d);
  }
  if (o.batch_size && *o.batch_size <= 0)
    fail(layer.name(), "batch_size must be positive, got " + std::to_string(*o.batch_size));
  layer.set_declared_input_shape(Shape(dims));
}

}  // namespace ef::nn
