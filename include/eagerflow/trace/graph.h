#pragma once
// The traced program: values (inputs, node outputs, constants) and nodes in recording order.
// Recording order is execution order, so effects (print, assignment) stay ordered.
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef::ir {

enum class ValueKind { input, node_output, constant };

struct Value {
  TensorSpec spec;
  ValueKind kind = ValueKind::input;
  int index = -1;  // input position, node index, or constant index
};

struct Node {
  std::shared_ptr<const Primitive> op;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
  std::string scope;         // the layer path it was traced in ("model/dense_1"), for errors
};

class Graph {
 public:
  int add_input(const TensorSpec& spec);
  int add_constant(const Tensor& t);
  std::vector<int> add_node(std::shared_ptr<const Primitive> op, std::vector<int> inputs,
                            const std::vector<TensorSpec>& output_specs, std::string scope = {});

  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> inputs;    // value ids, in argument order
  std::vector<int> outputs;   // value ids
  std::vector<Tensor> constants;
  std::string name;
};

// JAX-jaxpr-like text: one line per node, a type on every value, stable names.
std::string to_text(const Graph& g);
// Graphviz DOT.
std::string to_dot(const Graph& g);

}  // namespace ef::ir
