// ef.summary (tf.summary's writers and scalar / histogram / text, eagerflow/summary/summary.h)
// and ef.keras.callbacks.TensorBoard (eagerflow/train/tensorboard.h).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"
#include "eagerflow/summary/event_file.h"
#include "eagerflow/summary/summary.h"
#include "eagerflow/train/tensorboard.h"

namespace efpy {
using namespace ef;

namespace {

summary::Step to_step(nb::handle step) {
  if (step.is_none()) return {};
  if (nb::isinstance<nb::bool_>(step)) throw nb::type_error("summary: step must be an integer or a tensor, got a bool");
  if (nb::isinstance<nb::int_>(step)) return summary::Step(int_arg(step, "summary: step"));
  return summary::Step(to_tensor(step));
}

}  // namespace

void init_summary(nb::module_& m) {
  nb::module_ s = m.def_submodule("_summary", "ef::summary (eagerflow/summary/summary.h)");
  nb::class_<summary::SummaryWriter>(s, "SummaryWriter")
      .def_prop_ro("path", [](const summary::SummaryWriter& w) { return w.path(); })
      .def_prop_ro("logdir", [](const summary::SummaryWriter& w) { return w.logdir(); })
      .def_prop_ro("closed", &summary::SummaryWriter::closed)
      .def("flush", &summary::SummaryWriter::flush)
      .def("close", &summary::SummaryWriter::close)
      .def("_same", [](const summary::SummaryWriter& a, const summary::SummaryWriter& b) { return a.impl() == b.impl(); })
      .def("_write_graph_def", [](const summary::SummaryWriter& w, nb::bytes b, std::int64_t step) {
        w.write_graph_def(std::string(b.c_str(), b.size()), step);
      });
  s.def("create_file_writer",
        [](const std::string& logdir, int max_queue, double flush_secs, const std::string& suffix) {
          return summary::create_file_writer(logdir, {.max_queue = max_queue, .flush_secs = flush_secs, .filename_suffix = suffix});
        },
        "logdir"_a, "max_queue"_a = 10, "flush_secs"_a = 2.0, "filename_suffix"_a = "");
  s.def("set_default_writer", [](nb::handle w) {
    summary::set_default_writer(w.is_none() ? summary::SummaryWriter() : nb::cast<summary::SummaryWriter>(w));
  }, "writer"_a.none());
  s.def("default_writer", []() -> nb::object {
    auto w = summary::default_writer();
    if (!w.valid()) return nb::none();
    return nb::cast(w);
  });
  s.def("set_step", [](std::optional<std::int64_t> step) { summary::set_step(step); }, "step"_a.none());
  s.def("get_step", [] { return summary::get_step(); });
  s.def("scalar", [](const std::string& name, nb::handle data, nb::handle step) {
    return summary::scalar(name, to_tensor(data), to_step(step));
  }, "name"_a, "data"_a, "step"_a.none() = nb::none());
  s.def("histogram", [](const std::string& name, nb::handle data, nb::handle step, std::optional<int> buckets) {
    return summary::histogram(name, to_tensor(data), to_step(step), buckets.value_or(30));
  }, "name"_a, "data"_a, "step"_a.none() = nb::none(), "buckets"_a.none() = nb::none());
  s.def("text", [](const std::string& name, const std::string& data, nb::handle step) {
    return summary::text(name, data, to_step(step));
  }, "name"_a, "data"_a, "step"_a.none() = nb::none());
  // Reading back (tests, tools): (wall_time, step, file_version, graph_def, [(tag, kind, value)]).
  s.def("_read_events", [](const std::string& path) {
    nb::list out;
    for (const auto& e : summary::read_events(path)) {
      nb::list values;
      for (const auto& v : e.values) {
        nb::object val;
        if (v.kind == summary::SummaryValue::Kind::simple_value) val = nb::float_(v.simple_value);
        else if (v.kind == summary::SummaryValue::Kind::tensor && !v.string_val.empty()) val = nb::str(v.string_val[0].c_str(), v.string_val[0].size());
        else if (v.kind == summary::SummaryValue::Kind::histogram) val = nb::make_tuple(v.min, v.max, v.num, v.bucket_limit, v.bucket);
        else val = nb::none();
        values.append(nb::make_tuple(v.tag, v.plugin_name, val));
      }
      out.append(nb::make_tuple(e.wall_time, e.step, e.file_version, nb::bytes(e.graph_def.data(), e.graph_def.size()), values));
    }
    return out;
  });

  nb::module_ t = nb::borrow<nb::module_>(m.attr("_train"));
  nb::class_<train::TensorBoard, train::Callback>(t, "_TensorBoard")
      .def("__init__",
           [](train::TensorBoard* self, const std::string& log_dir, int histogram_freq, bool write_graph, nb::handle update_freq) {
             train::UpdateFreq u = nb::isinstance<nb::int_>(update_freq) && !nb::isinstance<nb::bool_>(update_freq)
                                       ? train::UpdateFreq(nb::cast<int>(update_freq))
                                       : train::UpdateFreq(nb::cast<std::string>(update_freq));
             new (self) train::TensorBoard(log_dir, histogram_freq, write_graph, u);
           },
           "log_dir"_a = "logs", "histogram_freq"_a = 0, "write_graph"_a = true, "update_freq"_a = "epoch")
      .def_prop_ro("log_dir", &train::TensorBoard::log_dir)
      .def_prop_ro("train_file", &train::TensorBoard::train_file)
      .def_prop_ro("validation_file", &train::TensorBoard::validation_file);
}

}  // namespace efpy
