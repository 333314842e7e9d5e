#pragma once
// Reverse mode for a whole graph from saved forward values (JAX's partial evaluation of the
// linearized program, done on our graphs): the graph is traced once more together with its
// backward pass, and the joint graph is cut in two. The forward part also returns the values
// the backward part uses (the residuals), so a gradient never runs the forward pass again and
// never draws its random numbers again.
#include <memory>
#include <vector>

#include "eagerflow/trace/graph.h"

namespace ef::detail {

struct GradientSplit {
  // Inputs: the graph's. Outputs: the graph's, then the residuals.
  std::shared_ptr<ir::Graph> forward;
  std::size_t num_residuals = 0;
  // Inputs: the graph inputs it reads (positions in `forward_inputs`), the residuals, then
  // the cotangents of the graph outputs in `cotangent_outputs`. Outputs: the gradients of the
  // graph inputs in `gradient_inputs` (zeros where unconnected).
  std::shared_ptr<ir::Graph> backward;
  std::vector<std::size_t> forward_inputs;
  std::vector<std::size_t> cotangent_outputs;
  std::vector<std::size_t> gradient_inputs;
};

// Splits `g` (a graph as traced: its ops have gradient rules) for the gradient of its floating
// outputs with respect to its floating inputs.
GradientSplit split_for_gradient(const ir::Graph& g);

}  // namespace ef::detail
