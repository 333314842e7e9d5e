// Reading event files back: our own reader for tests and tools (TensorBoard reads them too).
#include "eagerflow/core/error.h"
#include "eagerflow/summary/event_file.h"
#include "ef_tensorboard.pb.h"

namespace ef::summary {
namespace {

std::string print_attr(const ef_tensorboard::AttrValue& a) {
  using A = ef_tensorboard::AttrValue;
  auto shape = [](const ef_tensorboard::TensorShapeProto& s) {
    std::string out = "[";
    for (int i = 0; i < s.dim_size(); ++i) out += (i ? "," : "") + (s.dim(i).size() < 0 ? std::string("?") : std::to_string(s.dim(i).size()));
    return out + "]";
  };
  switch (a.value_case()) {
    case A::kS: return a.s();
    case A::kI: return std::to_string(a.i());
    case A::kF: return std::to_string(a.f());
    case A::kB: return a.b() ? "true" : "false";
    case A::kType: return ef_tensorboard::DataType_Name(a.type());
    case A::kShape: return shape(a.shape());
    case A::kList: {
      std::string out;
      for (const auto& s : a.list().shape()) out += (out.empty() ? "" : ",") + shape(s);
      for (const auto& s : a.list().s()) out += (out.empty() ? "" : ",") + s;
      return out;
    }
    default: return "";
  }
}

}  // namespace

Event parse_event(std::string_view record) {
  ef_tensorboard::Event e;
  if (record.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !e.ParseFromArray(record.data(), static_cast<int>(record.size())))
    fail("summary", "a record of " + std::to_string(record.size()) + " bytes is not an Event protocol buffer");
  Event out;
  out.wall_time = e.wall_time();
  out.step = e.step();
  if (e.has_file_version()) out.file_version = e.file_version();
  if (e.has_graph_def()) out.graph_def = e.graph_def();
  if (e.has_summary()) {
    for (const auto& v : e.summary().value()) {
      SummaryValue s;
      s.tag = v.tag();
      s.plugin_name = v.metadata().plugin_data().plugin_name();
      if (v.has_simple_value()) {
        s.kind = SummaryValue::Kind::simple_value;
        s.simple_value = v.simple_value();
      } else if (v.has_histo()) {
        s.kind = SummaryValue::Kind::histogram;
        const auto& h = v.histo();
        s.min = h.min();
        s.max = h.max();
        s.num = h.num();
        s.sum = h.sum();
        s.sum_squares = h.sum_squares();
        s.bucket_limit.assign(h.bucket_limit().begin(), h.bucket_limit().end());
        s.bucket.assign(h.bucket().begin(), h.bucket().end());
      } else if (v.has_tensor()) {
        s.kind = SummaryValue::Kind::tensor;
        s.string_val.assign(v.tensor().string_val().begin(), v.tensor().string_val().end());
        s.float_val.assign(v.tensor().float_val().begin(), v.tensor().float_val().end());
      }
      out.values.push_back(std::move(s));
    }
  }
  return out;
}

std::vector<GraphNode> parse_graph_def(std::string_view serialized) {
  ef_tensorboard::GraphDef g;
  if (serialized.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
      !g.ParseFromArray(serialized.data(), static_cast<int>(serialized.size())))
    fail("summary", "bytes that are not a GraphDef protocol buffer (" + std::to_string(serialized.size()) + " bytes)");
  std::vector<GraphNode> out;
  for (const auto& n : g.node()) {
    GraphNode gn{n.name(), n.op(), n.device(), {n.input().begin(), n.input().end()}, {}};
    for (const auto& [k, v] : n.attr()) gn.attrs.emplace_back(k, print_attr(v));
    std::sort(gn.attrs.begin(), gn.attrs.end());
    out.push_back(std::move(gn));
  }
  return out;
}

std::vector<Event> read_events(const std::string& path) {
  RecordFile f = read_record_file(path);
  std::vector<Event> out;
  out.reserve(f.records.size());
  for (const auto& r : f.records) out.push_back(parse_event(r));
  return out;
}

}  // namespace ef::summary
