// TF's checkpoint files from Python (eagerflow/io/tensor_bundle.h, trackable_object_graph.h):
// _core._bundle, used by python/eagerflow/_checkpoint_io.py and _tf_checkpoint.py.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <eagerflow/io/tensor_bundle.h>
#include <eagerflow/core/string_tensor.h>
#include <eagerflow/io/trackable_object_graph.h>

#include "bindings.h"

namespace efpy {

namespace {

nb::list graph_to_py(const ef::io::TrackableObjectGraph& graph) {
  nb::list out;
  for (const auto& node : graph) {
    nb::list children, attributes, slots;
    for (const auto& c : node.children) children.append(nb::make_tuple(c.node_id, c.local_name));
    for (const auto& a : node.attributes) attributes.append(nb::make_tuple(a.name, a.full_name, a.checkpoint_key));
    for (const auto& s : node.slot_variables)
      slots.append(nb::make_tuple(s.original_variable_node_id, s.slot_name, s.slot_variable_node_id));
    nb::dict d;
    d["children"] = children;
    d["attributes"] = attributes;
    d["slot_variables"] = slots;
    d["has_checkpoint_values"] = node.has_checkpoint_values;
    out.append(d);
  }
  return out;
}

ef::io::TrackableObjectGraph graph_from_py(nb::handle nodes) {
  ef::io::TrackableObjectGraph graph;
  for (nb::handle n : nodes) {
    auto& node = graph.emplace_back();
    for (nb::handle c : n["children"]) node.children.push_back({nb::cast<int>(c[0]), nb::cast<std::string>(c[1])});
    for (nb::handle a : n["attributes"])
      node.attributes.push_back(
          {nb::cast<std::string>(a[0]), nb::cast<std::string>(a[1]), nb::cast<std::string>(a[2])});
    for (nb::handle s : n["slot_variables"])
      node.slot_variables.push_back({nb::cast<int>(s[0]), nb::cast<std::string>(s[1]), nb::cast<int>(s[2])});
    node.has_checkpoint_values = nb::cast<bool>(n["has_checkpoint_values"]);
  }
  return graph;
}

}  // namespace

void init_tensor_bundle(nb::module_& m) {
  auto b = m.def_submodule("_bundle", "TF's checkpoint files (tensor bundles) and object graphs");
  nb::class_<ef::io::BundleReader>(b, "BundleReader")
      .def(nb::init<const std::string&>(), nb::arg("prefix"))
      .def("keys", &ef::io::BundleReader::keys)
      .def("contains", &ef::io::BundleReader::contains)
      .def("dtype_name",
           [](const ef::io::BundleReader& r, const std::string& key) { return std::string(ef::name_of(r.dtype(key))); })
      .def("shape",
           [](const ef::io::BundleReader& r, const std::string& key) {
             ef::Shape s = r.shape(key);
             std::vector<std::int64_t> dims;
             for (int i = 0; i < s.rank(); ++i) dims.push_back(s[i]);
             return dims;
           })
      .def("read", &ef::io::BundleReader::read, nb::call_guard<nb::gil_scoped_release>())
      .def("read_bytes", [](const ef::io::BundleReader& r, const std::string& key) {
        // a scalar string (the object graph) without going through a tensor
        auto values = ef::string_values(r.read(key));
        if (values.size() != 1) throw nb::value_error(("checkpoint: " + key + " is not one string").c_str());
        return nb::bytes(values[0].data(), values[0].size());
      });
  b.def(
      "write",
      [](const std::string& prefix, const std::vector<std::pair<std::string, ef::Tensor>>& entries) {
        nb::gil_scoped_release release;
        ef::io::BundleWriter w(prefix);
        for (const auto& [key, value] : entries) w.add(key, value);
        w.finish();
      },
      nb::arg("prefix"), nb::arg("entries"));
  b.def("is_tensor_bundle", &ef::io::is_tensor_bundle, nb::arg("prefix"));
  b.def(
      "parse_object_graph",
      [](nb::bytes data, const std::string& what) {
        return graph_to_py(ef::io::parse_object_graph(std::string_view(data.c_str(), data.size()), what));
      },
      nb::arg("data"), nb::arg("what"));
  b.def(
      "serialize_object_graph",
      [](nb::handle nodes) {
        std::string s = ef::io::serialize_object_graph(graph_from_py(nodes));
        return nb::bytes(s.data(), s.size());
      },
      nb::arg("nodes"));
}

}  // namespace efpy
