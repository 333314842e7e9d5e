// Whole models from Python (eagerflow/saving/model.h): ef.keras.saving.save_model and
// ef.keras.models.load_model (python/eagerflow/keras/saving.py wraps these).
#include <nanobind/stl/function.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <type_traits>
#include <variant>

#include <eagerflow/saving/keras_weights.h>
#include <eagerflow/saving/model.h>

#include "bindings.h"
#include "py_layer.h"

namespace efpy {

namespace {

ef::nn::ConfigValue config_value_from_py(nb::handle v, const std::string& where, int depth) {
  if (depth > 64) throw nb::value_error((where + ": the config nests more than 64 levels").c_str());
  if (v.is_none()) return nullptr;
  if (PyBool_Check(v.ptr())) return nb::cast<bool>(v);
  if (PyLong_Check(v.ptr())) return nb::cast<std::int64_t>(v);
  if (PyFloat_Check(v.ptr())) return nb::cast<double>(v);
  if (PyUnicode_Check(v.ptr())) return nb::cast<std::string>(v);
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    ef::nn::ConfigList out;
    std::size_t i = 0;
    for (nb::handle item : v) out.push_back(config_value_from_py(item, where + "[" + std::to_string(i++) + "]", depth + 1));
    return out;
  }
  if (PyDict_Check(v.ptr())) {
    ef::nn::ConfigMap out;
    for (auto [k, item] : nb::borrow<nb::dict>(v)) {
      if (!PyUnicode_Check(k.ptr())) throw nb::type_error((where + ": config keys must be strings").c_str());
      auto key = nb::cast<std::string>(k);
      out.set(key, config_value_from_py(item, where + "['" + key + "']", depth + 1));
    }
    return out;
  }
  // NumPy scalars and the like: as the Python number they convert to.
  if (nb::hasattr(v, "item") && !nb::hasattr(v, "__len__")) return config_value_from_py(v.attr("item")(), where, depth + 1);
  throw nb::type_error((where + ": a " + nb::cast<std::string>(nb::str(v.type().attr("__name__"))) +
                        " cannot be saved in a config (use None, bool, int, float, str, lists and dicts)")
                           .c_str());
}

}  // namespace

ef::nn::ConfigMap config_map_from_py(nb::handle dict, const std::string& where) {
  if (!PyDict_Check(dict.ptr()))
    throw nb::type_error((where + ": a config must be a dict, got a " +
                          nb::cast<std::string>(nb::str(dict.type().attr("__name__")))).c_str());
  return std::get<ef::nn::ConfigMap>(config_value_from_py(dict, where, 0).value);
}

nb::object py_from_config(const ef::nn::ConfigValue& value) {
  return std::visit(
      [](const auto& v) -> nb::object {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::nullptr_t>) return nb::none();
        else if constexpr (std::is_same_v<T, ef::nn::ConfigList>) {
          nb::list out;
          for (const auto& item : v) out.append(py_from_config(item));
          return out;
        } else if constexpr (std::is_same_v<T, ef::nn::ConfigMap>) {
          nb::dict out;
          for (const auto& [k, item] : v.items()) out[nb::str(k.c_str())] = py_from_config(item);
          return out;
        } else {
          return nb::cast(v);
        }
      },
      value.value);
}

void init_saving_keras(nb::module_& m) {
  nb::module_ s = m.def_submodule("_saving", "ef::save_model / ef::load_model");
  s.def(
      "save_model",
      [](const ef::train::Model& model, const std::string& path, bool include_optimizer) {
        ef::save_model(model, path, ef::SaveModelOptions{include_optimizer});
      },
      nb::arg("model"), nb::arg("path"), nb::arg("include_optimizer") = true);
  // make_model(class_name, name) gives the empty ef.keras.Sequential / ef.keras.Model to fill.
  s.def(
      "load_model",
      [](const std::string& path, bool compile, nb::object make_model) {
        ef::LoadModelOptions o;
        o.compile = compile;
        if (!make_model.is_none())
          o.make_model = [make_model](const std::string& cls, const std::string& name) {
            nb::gil_scoped_acquire gil;
            return nb::cast<std::shared_ptr<ef::train::Model>>(make_model(cls, name));
          };
        return ef::load_model(path, o);
      },
      nb::arg("path"), nb::arg("compile") = true, nb::arg("make_model") = nb::none());
  // A layer class written in Python: load_model rebuilds it through
  // eagerflow.keras.saving._from_config(class_name, config), which finds the class in its own
  // registry. The C++ registry holds no Python object, so nothing outlives the interpreter.
  s.def(
      "register_layer",
      [](const std::string& class_name) {
        ef::nn::register_layer_factory(class_name, [](const ef::nn::LayerConfig& c) -> std::shared_ptr<ef::nn::Layer> {
          nb::gil_scoped_acquire gil;
          nb::object layer =
              nb::module_::import_("eagerflow.keras.saving").attr("_from_config")(c.class_name, py_from_config(c.config));
          std::shared_ptr<ef::nn::Layer> out;
          if (!nb::try_cast(layer, out) || !out)
            throw ef::Error(ef::kWrongType, "from_config of '" + c.class_name + "' returned a " +
                                                nb::cast<std::string>(nb::str(layer.type().attr("__name__"))) +
                                                ", not a layer");
          return out;
        });
      },
      nb::arg("class_name"));
  s.def("is_registered", [](const std::string& class_name) { return ef::nn::is_layer_registered(class_name); });
  s.def("model_to_json", [](const ef::nn::Layer& model) { return ef::model_to_json(model); }, nb::arg("model"));
  s.def("model_to_keras_json", [](const ef::nn::Layer& model) { return ef::model_to_keras_json(model); }, nb::arg("model"));
  // Keras' Model.get_config / from_config / model_from_json for Sequential and functional models:
  // the config save_model writes, rebuilt (fresh weights) into make_model's classes.
  s.def(
      "model_config",
      [](const ef::nn::Layer& model) {
        ef::nn::LayerConfig c = ef::model_config(model);
        nb::dict d;
        d["class_name"] = c.class_name;
        d["config"] = py_from_config(ef::nn::ConfigValue(c.config));
        return d;
      },
      nb::arg("model"));
  auto options_with = [](nb::object make_model) {
    ef::LoadModelOptions o;
    o.make_model = [make_model](const std::string& cls, const std::string& name) {
      nb::gil_scoped_acquire gil;
      return nb::cast<std::shared_ptr<ef::train::Model>>(make_model(cls, name));
    };
    return o;
  };
  s.def(
      "model_from_config",
      [options_with](const std::string& class_name, nb::handle config, nb::object make_model) {
        std::string where = class_name + ".from_config";
        return ef::model_from_config(ef::nn::LayerConfig{class_name, config_map_from_py(config, where)},
                                     options_with(make_model));
      },
      nb::arg("class_name"), nb::arg("config"), nb::arg("make_model"));
  s.def(
      "model_from_json",
      [options_with](const std::string& json, nb::object make_model) {
        return ef::model_from_json(json, options_with(make_model));
      },
      nb::arg("json"), nb::arg("make_model"));
  s.def("format_version", [] { return ef::kModelFormatVersion; });
  // The pieces of a .keras file that the Python package assembles for subclassed models
  // (eagerflow/keras/_subclassed_file.py): compile settings, weights, the build input.
  s.def("keras_compile_config", &ef::keras_compile_config, nb::arg("model"));
  s.def("compile_from_keras_config", &ef::compile_from_keras_config, nb::arg("model"), nb::arg("text"), nb::arg("where"));
  s.def(
      "keras_weights_bytes",
      [](const ef::train::Model& model, bool include_optimizer) {
        std::vector<std::byte> b =
            ef::keras_weights_to_bytes(model, include_optimizer && model.compiled() ? model.optimizer().get() : nullptr);
        return nb::bytes(reinterpret_cast<const char*>(b.data()), b.size());
      },
      nb::arg("model"), nb::arg("include_optimizer"));
  s.def(
      "load_keras_weights_bytes",
      [](ef::train::Model& model, nb::bytes data, const std::string& what) {
        std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data.c_str()), data.size());
        ef::keras_weights_from_bytes(model, bytes, model.compiled() ? model.optimizer().get() : nullptr, what);
      },
      nb::arg("model"), nb::arg("data"), nb::arg("what"));
  s.def(
      "build_input",
      [](const ef::nn::Layer& model) -> nb::object {
        auto spec = model.save_spec();
        if (!spec) return nb::none();
        nb::list dims;
        for (std::int64_t d : spec->shape.dims()) dims.append(d == ef::kDynamic ? nb::none() : nb::object(nb::int_(d)));
        return nb::make_tuple(dims, std::string(ef::name_of(spec->dtype)));
      },
      nb::arg("model"));
}

}  // namespace efpy
