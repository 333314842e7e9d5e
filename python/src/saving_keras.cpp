// Whole models from Python (eagerflow/saving/model.h): ef.keras.saving.save_model and
// ef.keras.models.load_model (python/eagerflow/keras/saving.py wraps these).
#include <nanobind/stl/function.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>

#include <eagerflow/saving/model.h>

#include "bindings.h"

namespace efpy {

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
  s.def("model_to_json", [](const ef::nn::Layer& model) { return ef::model_to_json(model); }, nb::arg("model"));
  s.def("format_version", [] { return ef::kModelFormatVersion; });
}

}  // namespace efpy
