// ef.onnx.load_model (eagerflow/saving/onnx_import.h): the imported model as a C++ object
// that python/eagerflow/onnx.py wraps as a callable with variables.
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <eagerflow/saving/onnx_import.h>

#include "bindings.h"
#include "convert.h"

namespace efpy {

void init_onnx_import(nb::module_& m) {
  nb::module_ io = nb::borrow<nb::module_>(m.attr("_io"));  // made by init_io
  nb::class_<ef::onnx::ImportedModel>(io, "OnnxModel")
      .def_prop_ro("input_names", &ef::onnx::ImportedModel::input_names)
      .def_prop_ro("input_specs", &ef::onnx::ImportedModel::input_specs)
      .def_prop_ro("output_names", &ef::onnx::ImportedModel::output_names)
      .def_prop_ro("opset", &ef::onnx::ImportedModel::opset)
      .def_prop_ro("variables", &ef::onnx::ImportedModel::variables)
      .def_prop_ro("trainable_variables", &ef::onnx::ImportedModel::trainable_variables)
      .def(
          "run",
          [](const ef::onnx::ImportedModel& model, nb::handle inputs) {
            std::vector<ef::Tensor> xs;
            const auto& specs = model.input_specs();
            std::size_t i = 0;
            for (auto x : inputs) {
              // NumPy arrays and Python numbers take the input's dtype (float64 data for a
              // float32 input is converted, as TF converts arguments of a concrete function).
              xs.push_back(i < specs.size() && !nb::isinstance<ef::Tensor>(x) ? to_tensor_as(x, specs[i].dtype) : to_tensor(x));
              ++i;
            }
            std::vector<ef::Tensor> outs;
            {
              nb::gil_scoped_release release;
              outs = model(xs);
            }
            return outs;
          },
          "inputs"_a)
      .def(
          "concrete_function",
          [](const ef::onnx::ImportedModel& model, std::vector<ef::TensorSpec> specs) {
            nb::gil_scoped_release release;
            return model.concrete_function(std::move(specs));
          },
          "specs"_a = std::vector<ef::TensorSpec>{});
  io.def(
      "_load_onnx",
      [](const std::string& path) {
        nb::gil_scoped_release release;
        return ef::onnx::load_model(path);
      },
      "path"_a);
  io.def(
      "_load_onnx_bytes",
      [](nb::bytes data) {
        std::string copy(data.c_str(), data.size());
        nb::gil_scoped_release release;
        return ef::onnx::load_model_from_bytes(std::as_bytes(std::span(copy.data(), copy.size())));
      },
      "data"_a);
  io.def("_onnx_supported_ops", &ef::onnx::supported_ops);
}

}  // namespace efpy
