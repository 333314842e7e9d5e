// Keras' dtype policies: ef.keras.DTypePolicy, ef.keras.mixed_precision.set_global_policy, and
// layer.dtype_policy / compute_dtype / variable_dtype (eagerflow/nn/dtype_policy.h).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "eagerflow/nn/layer_config.h"
#include "layer_args.h"
#include "py_layer.h"

namespace efpy {
namespace {

ef::nn::DTypePolicy policy_of(nb::handle h) {
  ef::nn::DTypePolicy* p = nullptr;
  if (nb::try_cast(h, p, false) && p) return *p;
  if (nb::isinstance<nb::str>(h)) return ef::nn::DTypePolicy(nb::cast<std::string>(h));
  if (nb::isinstance<nb::dict>(h))  // Keras 3's serialized form, as get_config writes it
    return ef::nn::dtype_policy_from_config(config_map_from_py(h, "dtype policy"), "dtype policy");
  ef::DType d;
  if (nb::try_cast(h, d)) return ef::nn::DTypePolicy(std::string(ef::name_of(d)));
  if (nb::hasattr(h, "name")) return ef::nn::DTypePolicy(nb::cast<std::string>(nb::str(nb::object(h.attr("name")))));
  throw nb::type_error("a dtype policy is a DTypePolicy, a policy name ('mixed_bfloat16') or a dtype");
}

std::string dtype_name(ef::DType d) { return std::string(ef::name_of(d)); }

}  // namespace

ef::nn::DTypePolicy dtype_policy_arg(nb::handle h) { return policy_of(h); }

void init_dtype_policy(nb::module_& m) {
  nb::class_<ef::nn::DTypePolicy>(m, "DTypePolicy",
                                  "Keras' DTypePolicy: 'float32', 'float64', 'bfloat16' or 'mixed_bfloat16' "
                                  "(variables float32, computation bfloat16).")
      .def(nb::init<const std::string&>(), nb::arg("name") = "float32")
      .def_prop_ro("name", &ef::nn::DTypePolicy::name)
      .def_prop_ro("compute_dtype", [](const ef::nn::DTypePolicy& p) { return dtype_name(p.compute_dtype()); })
      .def_prop_ro("variable_dtype", [](const ef::nn::DTypePolicy& p) { return dtype_name(p.variable_dtype()); })
      .def("__eq__", [](const ef::nn::DTypePolicy& a, nb::handle b) {
        ef::nn::DTypePolicy* p = nullptr;
        if (nb::try_cast(b, p, false) && p) return a == *p;
        return nb::isinstance<nb::str>(b) && a.name() == nb::cast<std::string>(b);
      })
      .def("get_config", [](const ef::nn::DTypePolicy& p) {
        nb::dict d;
        d["name"] = p.name();
        return d;
      })
      .def_static("from_config", [](nb::dict config) { return policy_of(config["name"]); }, nb::arg("config"))
      .def("__hash__", [](const ef::nn::DTypePolicy& p) { return nb::hash(nb::str(p.name().c_str())); })
      .def("__repr__", [](const ef::nn::DTypePolicy& p) { return "<DTypePolicy \"" + p.name() + "\">"; });
  m.def("set_global_policy", [](nb::handle p) { ef::nn::set_global_policy(policy_of(p)); }, nb::arg("policy"),
        "Keras' set_global_policy: the policy that layers made from now on take.");
  m.def("global_policy", &ef::nn::global_policy);
  m.def("_dtype_policy", &policy_of, nb::arg("policy"),
        "A DTypePolicy from a name, a DTypePolicy, a dtype or Keras 3's serialized form "
        "({'class_name': 'DTypePolicy', 'config': {'name': ...}}).");
  // Keras' get_config / from_config for the C++ layers (layers written in Python define their
  // own, python/eagerflow/_layers.py): the config save_model writes, "dtype" included.
  m.def(
      "_layer_config",
      [](const ef::nn::Layer& l) {
        std::optional<ef::nn::LayerConfig> c = l.get_config();
        if (!c) throw nb::attribute_error(("layer '" + l.name() + "' (" + l.type_name() + ") has no config").c_str());
        return py_from_config(ef::nn::ConfigValue(c->config));
      },
      nb::arg("layer"));
  m.def(
      "_layer_from_config",
      [](const std::string& class_name, nb::handle config) {
        std::string where = class_name + ".from_config";
        ef::nn::LayerConfig c{class_name, config_map_from_py(config, where)};
        return ef::nn::layer_from_config(c, where);
      },
      nb::arg("class_name"), nb::arg("config"));
  m.def("_serialize_dtype_policy", [](nb::handle p) { return py_from_config(ef::nn::dtype_policy_config(policy_of(p))); },
        nb::arg("policy"), "Keras 3's dtype_policies.serialize: the form layer configs hold.");

  auto layer = nb::borrow<nb::object>(m.attr("Layer"));
  auto prop = nb::module_::import_("builtins").attr("property");
  layer.attr("dtype_policy") = prop(
      nb::cpp_function([](const ef::nn::Layer& l) { return l.dtype_policy(); }),
      nb::cpp_function([](ef::nn::Layer& l, nb::handle p) { l.set_dtype_policy(policy_of(p)); }));  // refused once built
  layer.attr("compute_dtype") = prop(nb::cpp_function([](const ef::nn::Layer& l) { return dtype_name(l.compute_dtype()); }));
  layer.attr("variable_dtype") = prop(nb::cpp_function([](const ef::nn::Layer& l) { return dtype_name(l.variable_dtype()); }));
  layer.attr("dtype") = prop(nb::cpp_function([](const ef::nn::Layer& l) { return dtype_name(l.variable_dtype()); }));
}

}  // namespace efpy
