// TrackableObjectGraph's wire format (field numbers of trackable_object_graph.proto).
#include "eagerflow/io/trackable_object_graph.h"

#include "eagerflow/core/error.h"
#include "proto_wire.h"

namespace ef::io {
namespace {

constexpr std::size_t kMaxNodes = std::size_t{1} << 24;

std::int32_t node_id(wire::Reader& r) {
  std::uint64_t v = r.varint();
  if (v > kMaxNodes) r.bad("a node id of " + std::to_string(v));
  return static_cast<std::int32_t>(v);
}

TrackableObject parse_node(std::string_view bytes, const std::string& what) {
  wire::Reader r(bytes, what);
  TrackableObject node;
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field >= 1 && field <= 5) r.expect(type, wire::kLengthDelimited, "TrackableObject field");
    if (field == 1) {
      wire::Reader c(r.length_delimited(), what);
      auto& child = node.children.emplace_back();
      while (!c.done()) {
        auto [f, t] = c.tag();
        if (f == 1 && t == wire::kVarint) child.node_id = node_id(c);
        else if (f == 2 && t == wire::kLengthDelimited) child.local_name = c.length_delimited();
        else c.skip(t);
      }
    } else if (field == 2) {
      wire::Reader a(r.length_delimited(), what);
      auto& attr = node.attributes.emplace_back();
      while (!a.done()) {
        auto [f, t] = a.tag();
        if (f == 1 && t == wire::kLengthDelimited) attr.name = a.length_delimited();
        else if (f == 2 && t == wire::kLengthDelimited) attr.full_name = a.length_delimited();
        else if (f == 3 && t == wire::kLengthDelimited) attr.checkpoint_key = a.length_delimited();
        else a.skip(t);
      }
    } else if (field == 3) {
      wire::Reader s(r.length_delimited(), what);
      auto& slot = node.slot_variables.emplace_back();
      while (!s.done()) {
        auto [f, t] = s.tag();
        if (f == 1 && t == wire::kVarint) slot.original_variable_node_id = node_id(s);
        else if (f == 2 && t == wire::kLengthDelimited) slot.slot_name = s.length_delimited();
        else if (f == 3 && t == wire::kVarint) slot.slot_variable_node_id = node_id(s);
        else s.skip(t);
      }
    } else if (field == 4) {
      r.length_delimited();
      fail(ErrorCode::unimplemented, "checkpoint",
           what + ": an object saved by a registered saver (tf.saved_model.register_saver), which eagerflow lacks");
    } else if (field == 5) {
      wire::Reader b(r.length_delimited(), what);
      while (!b.done()) {
        auto [f, t] = b.tag();
        if (f == 1 && t == wire::kVarint) node.has_checkpoint_values = b.varint() != 0;
        else b.skip(t);
      }
    } else {
      r.skip(type);
    }
  }
  return node;
}

}  // namespace

std::string serialize_object_graph(const TrackableObjectGraph& graph) {
  std::string out;
  for (const auto& node : graph) {
    std::string n;
    for (const auto& c : node.children) {
      std::string m;
      if (c.node_id) wire::put_varint_field(m, 1, static_cast<std::uint64_t>(c.node_id));
      if (!c.local_name.empty()) wire::put_bytes_field(m, 2, c.local_name);
      wire::put_bytes_field(n, 1, m);
    }
    for (const auto& a : node.attributes) {
      std::string m;
      if (!a.name.empty()) wire::put_bytes_field(m, 1, a.name);
      if (!a.full_name.empty()) wire::put_bytes_field(m, 2, a.full_name);
      if (!a.checkpoint_key.empty()) wire::put_bytes_field(m, 3, a.checkpoint_key);
      wire::put_bytes_field(n, 2, m);
    }
    for (const auto& s : node.slot_variables) {
      std::string m;
      if (s.original_variable_node_id)
        wire::put_varint_field(m, 1, static_cast<std::uint64_t>(s.original_variable_node_id));
      if (!s.slot_name.empty()) wire::put_bytes_field(m, 2, s.slot_name);
      if (s.slot_variable_node_id) wire::put_varint_field(m, 3, static_cast<std::uint64_t>(s.slot_variable_node_id));
      wire::put_bytes_field(n, 3, m);
    }
    if (node.has_checkpoint_values) {
      std::string m;
      wire::put_varint_field(m, 1, 1);
      wire::put_bytes_field(n, 5, m);
    }
    wire::put_bytes_field(out, 1, n);
  }
  return out;
}

TrackableObjectGraph parse_object_graph(std::string_view bytes, const std::string& what) {
  wire::Reader r(bytes, what);
  TrackableObjectGraph graph;
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field == 1) {
      r.expect(type, wire::kLengthDelimited, "nodes");
      if (graph.size() >= kMaxNodes) r.bad("more than 2^24 nodes");
      graph.push_back(parse_node(r.length_delimited(), what));
    } else {
      r.skip(type);
    }
  }
  auto check = [&](std::int32_t id) {
    if (id < 0 || static_cast<std::size_t>(id) >= graph.size())
      fail(ErrorCode::data_loss, "checkpoint",
           what + ": the object graph refers to node " + std::to_string(id) + " of " + std::to_string(graph.size()));
  };
  for (const auto& node : graph) {
    for (const auto& c : node.children) check(c.node_id);
    for (const auto& s : node.slot_variables) {
      check(s.original_variable_node_id);
      check(s.slot_variable_node_id);
    }
  }
  return graph;
}

}  // namespace ef::io
