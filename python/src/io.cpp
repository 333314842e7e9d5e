// Saving and data: ef.saved_model.save/load (ef::save/ef::load), ef.onnx.export_model, and the
// MNIST reader (ef.data).
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <eagerflow/saving/onnx.h>
#include <eagerflow/summary/event_file.h>
#include <eagerflow/io/example.h>
#include <eagerflow/io/tensor_proto.h>
#include <nanobind/stl/tuple.h>
#include "convert.h"

#include "bindings.h"

namespace efpy {
namespace {

std::optional<ef::TensorSpec> spec_of(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return nb::cast<ef::TensorSpec>(h);
}

nb::tuple digits_tuple(const ef::data::Digits& d) { return nb::make_tuple(d.images, d.labels); }

}  // namespace

void init_io(nb::module_& m) {
  nb::module_ t = m.def_submodule("_io");
  nb::class_<ef::SavedModel>(t, "SavedModel")
      .def("signature_names", &ef::SavedModel::signature_names)
      .def(
          "signature_specs",
          [](const ef::SavedModel& s, const std::string& name) {
            const auto& sig = s.signature(name);
            return nb::make_tuple(sig.input_names, sig.inputs, sig.outputs);
          },
          "name"_a, "(input names, input specs, output specs) of a signature")
      .def(
          "run",
          [](const ef::SavedModel& s, const std::string& name, nb::handle inputs) {
            std::vector<ef::Tensor> xs;
            for (auto x : inputs) xs.push_back(to_tensor(x));
            std::vector<ef::Tensor> outs;
            {
              nb::gil_scoped_release release;
              outs = s(name, xs);
            }
            return outs;
          },
          "name"_a, "inputs"_a)
      .def_prop_ro("variables", &ef::SavedModel::variables)
      .def_prop_ro("trainable_variables", &ef::SavedModel::trainable_variables)
      .def("concrete_function", &ef::SavedModel::concrete_function, "name"_a);
  // Keras' TFSMLayer: a loaded signature as a trainable layer (fine-tuning a loaded model).
  nb::class_<ef::nn::SavedModelLayer, ef::nn::Layer>(t, "SavedModelLayer")
      .def(nb::init<const std::string&, std::string, bool, std::string>(), "filepath"_a,
           "call_endpoint"_a = "serving_default", "trainable"_a = true, "name"_a = "")
      .def(nb::init<ef::SavedModel, std::string, bool, std::string>(), "saved_model"_a,
           "call_endpoint"_a = "serving_default", "trainable"_a = true, "name"_a = "");
  t.def(
      "_save",
      [](ef::nn::Layer& layer, const std::string& dir, nb::handle input_spec) { ef::save(layer, dir, spec_of(input_spec)); },
      "layer"_a, "dir"_a, "input_spec"_a.none() = nb::none());
  t.def(
      "_load",
      [](const std::string& dir) {
        nb::gil_scoped_release release;  // load traces every graph again to check it
        return ef::load(dir);
      },
      "dir"_a);
  t.def(
      "_export_onnx",
      [](ef::nn::Layer& layer, const std::string& path, nb::handle input_spec) {
        ef::onnx::export_model(layer, path, spec_of(input_spec));
      },
      "layer"_a, "path"_a, "input_spec"_a.none() = nb::none());

  t.def(
      "_load_mnist_test", [](const std::string& dir) { return digits_tuple(ef::data::load_mnist_test(dir)); }, "dir"_a);
  t.def(
      "_load_idx",
      [](const std::string& images, const std::string& labels) { return digits_tuple(ef::data::load_idx(images, labels)); },
      "images_path"_a, "labels_path"_a);
  t.def("_find_mnist", &ef::data::find_mnist, "flag"_a = "");
  t.def(
      "_synthetic_digits",
      [](std::int64_t n, std::uint64_t seed) { return digits_tuple(ef::data::synthetic_digits(n, seed)); }, "n"_a,
      "seed"_a = 0);
  // TFRecord framing of one record (python/eagerflow/_tfrecord.py's writer).
  t.def(
      "_frame_record",
      [](nb::bytes data) {
        std::string framed = ef::summary::frame_record(std::string_view(data.c_str(), data.size()));
        return nb::bytes(framed.data(), framed.size());
      },
      "data"_a);
  // (key, kind, dtype, shape, has_default, allow_missing) per feature; python/eagerflow/_parse_example.py.
  t.def(
      "_parse_example",
      [](nb::handle serialized, const std::vector<std::tuple<std::string, int, nb::handle, std::vector<std::int64_t>, bool, bool>>& features,
         const std::vector<nb::handle>& defaults, bool sequence) {
        std::vector<ef::io::ExampleFeature> fs;
        for (const auto& [key, kind, dtype, shape, has_default, allow_missing] : features) {
          ef::io::ExampleFeature f;
          f.key = key;
          if (kind < 0 || kind > 3) throw nb::value_error("_parse_example: bad kind");
          f.kind = static_cast<ef::io::ExampleFeature::Kind>(kind);
          f.dtype = dtype_from_py(dtype);
          f.shape = shape;
          f.has_default = has_default;
          f.allow_missing = allow_missing;
          fs.push_back(std::move(f));
        }
        std::vector<ef::Tensor> ds;
        for (nb::handle d : defaults) ds.push_back(to_tensor(d));
        return ef::io::parse_example(to_tensor(serialized), fs, ds, sequence);
      },
      "serialized"_a, "features"_a, "defaults"_a, "sequence"_a = false);
  t.def(
      "_serialize_tensor",
      [](nb::handle x) {
        std::string b = ef::io::serialize_tensor(to_tensor(x));
        return nb::bytes(b.data(), b.size());
      },
      "tensor"_a);
  t.def(
      "_parse_tensor",
      [](nb::bytes serialized, nb::handle dtype) {
        return ef::io::parse_tensor(std::string_view(serialized.c_str(), serialized.size()), dtype_from_py(dtype));
      },
      "serialized"_a, "out_type"_a);
  t.def(
      "_decode_raw",
      [](nb::handle input_bytes, nb::handle out_type, bool little_endian, std::int64_t fixed_length) {
        return ef::io::decode_raw(to_tensor(input_bytes), dtype_from_py(out_type), little_endian, fixed_length);
      },
      "input_bytes"_a, "out_type"_a, "little_endian"_a = true, "fixed_length"_a = -1);
}

}  // namespace efpy
