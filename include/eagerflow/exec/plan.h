#pragma once
// A compiled graph: a flat instruction list over value slots. Shapes are resolved once when
// every shape is static; graphs with dynamic dims re-run the shape rules on replay. Each
// intermediate is released right after its last use, so its buffer returns to the caching
// allocator and the next instruction reuses it.
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "eagerflow/trace/graph.h"

namespace ef::exec {

class Plan {
 public:
  explicit Plan(std::shared_ptr<const ir::Graph> graph);
  // inputs: one per graph input; outputs: sized num_outputs().
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) const;
  std::size_t num_inputs() const { return graph_->inputs.size(); }
  std::size_t num_outputs() const { return graph_->outputs.size(); }
  const ir::Graph& graph() const { return *graph_; }

 private:
  struct Instruction {
    const Primitive* op;
    int first_arg, num_args;       // into args_ (slot ids)
    int first_output, num_outputs; // slots first_output.. (node outputs are consecutive values)
    int first_spec;                // into specs_, or -1 when shapes must be re-inferred
    int first_release, num_release;
    bool strings;  // string outputs keep their inputs' bytes alive (eagerflow/core/string_tensor.h)
  };
  void execute(std::span<Tensor> slots, std::span<const Tensor> inputs, std::span<Tensor> outputs) const;
  Tensor own_result(Tensor t) const;

  std::shared_ptr<const ir::Graph> graph_;
  std::vector<Instruction> instructions_;
  std::vector<int> args_;
  std::vector<TensorSpec> specs_;
  std::vector<int> releases_;
  std::vector<std::pair<int, int>> constants_;  // (slot, index into graph constants)
  std::vector<const Storage*> constant_storage_;  // results sharing these are copied
};

}  // namespace ef::exec
