#pragma once
// Python keyword arguments of a C++ layer, from its declared argument list
// (eagerflow/nn/layer_args.h): one binding line per layer,
//   def_init_from_args<ef::nn::Dense, ef::nn::DenseOptions>(cls, "Dense");
// takes Keras' signature (the table's positional arguments, then keywords), None for the
// default, and refuses an unknown keyword with Keras' TypeError naming it.
#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bindings.h"
#include "eagerflow/nn/layer_args.h"

namespace efpy {

// The converters the layer bindings share (defined beside the classes they accept).
ef::nn::ActivationFn activation_arg(nb::handle h);   // layers_keras.cpp: a name or a callable
// A Keras activation by name: the C++ one, else keras.activations' (computed in Python, saved by
// its name); an unknown name is a ValueError (layer_args.cpp).
ef::nn::ActivationFn activation_by_name(const std::string& name);
ef::nn::Initializer initializer_arg(nb::handle h);   // layers.cpp: a name, an initializer or a callable
ef::nn::Regularizer regularizer_arg(nb::handle h);   // layers_keras.cpp
ef::nn::Constraint constraint_arg(nb::handle h);     // layers_keras.cpp
ef::nn::DTypePolicy dtype_policy_arg(nb::handle h);  // dtype_policy.cpp

// One Python value (not None) into a member; `what` names it in errors ("Dense: units").
void arg_from_python(bool& out, nb::handle h, const std::string& what);
void arg_from_python(std::int64_t& out, nb::handle h, const std::string& what);
void arg_from_python(double& out, nb::handle h, const std::string& what);
void arg_from_python(std::string& out, nb::handle h, const std::string& what);
void arg_from_python(ef::Stride2& out, nb::handle h, const std::string& what);  // an int for both, or a pair
void arg_from_python(ef::nn::ActivationFn& out, nb::handle h, const std::string& what);
void arg_from_python(ef::nn::Initializer& out, nb::handle h, const std::string& what);
void arg_from_python(ef::nn::Regularizer& out, nb::handle h, const std::string& what);
void arg_from_python(ef::nn::Constraint& out, nb::handle h, const std::string& what);
void arg_from_python(std::optional<ef::nn::DTypePolicy>& out, nb::handle h, const std::string& what);
void arg_from_python(std::optional<std::int64_t>& out, nb::handle h, const std::string& what);
void arg_from_python(std::optional<std::vector<std::int64_t>>& out, nb::handle h, const std::string& what);

[[noreturn]] void unrecognized_keywords(const std::string& cls, const nb::dict& unknown);

template <class O>
O options_from_python(std::span<const ef::nn::LayerArg<O>> args, const nb::args& pos, const nb::kwargs& kw,
                      const std::string& cls) {
  O o;
  std::vector<bool> given(args.size(), false);
  auto set = [&](std::size_t i, nb::handle v) {
    std::string name(args[i].name);
    if (given[i]) throw nb::type_error((cls + "() got multiple values for argument '" + name + "'").c_str());
    given[i] = true;
    if (v.is_none()) return;  // Keras' None: the default
    std::visit([&](auto m) { arg_from_python(o.*m, v, cls + ": " + name); }, args[i].member);
  };
  std::size_t positional = 0;
  while (positional < args.size() && !args[positional].keyword_only) ++positional;
  if (pos.size() > positional)
    throw nb::type_error((cls + "() takes at most " + std::to_string(positional) + " positional arguments (" +
                          std::to_string(pos.size()) + " given)").c_str());
  for (std::size_t i = 0; i < pos.size(); ++i) set(i, pos[i]);
  nb::dict unknown;
  for (auto [k, v] : kw) {
    std::string key = nb::cast<std::string>(k);
    auto it = std::find_if(args.begin(), args.end(), [&](const auto& a) { return a.name == key; });
    if (it == args.end()) unknown[k] = v;
    else set(static_cast<std::size_t>(it - args.begin()), v);
  }
  if (unknown.size() != 0) unrecognized_keywords(cls, unknown);
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].required && !given[i])
      throw nb::type_error((cls + "() missing 1 required positional argument: '" + std::string(args[i].name) + "'").c_str());
  return o;
}

// "Keras' Dense(units, activation, ..., *, name, ...)": the signature help() shows, from the table.
template <class O>
std::string signature_doc(std::span<const ef::nn::LayerArg<O>> args, const std::string& cls) {
  std::string doc = "Keras' " + cls + "(";
  bool star = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (i) doc += ", ";
    if (args[i].keyword_only && !star) doc += "*, ", star = true;
    doc += std::string(args[i].name);
  }
  return doc + "): the C++ ef::nn::" + cls + ", its arguments declared once in " + cls + "::args(); None keeps a default.";
}

template <class L, class O, class Class>
void def_init_from_args(Class& cls, const char* name) {
  cls.def("__init__", [name](L* self, nb::args a, nb::kwargs k) { new (self) L(options_from_python<O>(L::args(), a, k, name)); });
  cls.attr("__doc__") = nb::str(signature_doc<O>(L::args(), name).c_str());
}

}  // namespace efpy
