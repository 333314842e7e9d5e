#pragma once
// A traced graph as TensorFlow's GraphDef, for TensorBoard's graph dashboard: one NodeDef per
// node (op name, inputs, the layer scope as its name scope, output shapes and dtypes as attrs).
#include <string>

#include "eagerflow/trace/graph.h"

namespace ef::summary::detail {
std::string graph_def_bytes(const ir::Graph& graph);
}
