#pragma once
// TF's TrackableObjectGraph (trackable_object_graph.proto), the value tf.train.Checkpoint stores
// under "_CHECKPOINTABLE_OBJECT_GRAPH": the saved objects as nodes (node 0 the root), their
// named edges, the checkpoint keys of their values, and optimizers' slot variables. Restoring
// matches this graph to the program's objects by edge names, as TF does.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ef::io {

struct TrackableObject {
  struct Child {
    std::int32_t node_id = 0;
    std::string local_name;
  };
  struct Attribute {        // SerializedTensor
    std::string name;       // "VARIABLE_VALUE"
    std::string full_name;  // the variable's name
    std::string checkpoint_key;
  };
  struct SlotVariable {  // on the optimizer's node
    std::int32_t original_variable_node_id = 0;
    std::string slot_name;
    std::int32_t slot_variable_node_id = 0;
  };
  std::vector<Child> children;
  std::vector<Attribute> attributes;
  std::vector<SlotVariable> slot_variables;
  bool has_checkpoint_values = false;  // google.protobuf.BoolValue, written when true
};

using TrackableObjectGraph = std::vector<TrackableObject>;

std::string serialize_object_graph(const TrackableObjectGraph& graph);
// Every node id is checked to lie in the graph; ef::Error(DATA_LOSS) naming `what` otherwise.
// A registered saver (field 4) is refused: eagerflow has none of TF's registered savers.
TrackableObjectGraph parse_object_graph(std::string_view bytes, const std::string& what);

}  // namespace ef::io
