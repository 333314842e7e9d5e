#pragma once
// A trace in progress: records ops into a graph, turns captured eager tensors into
// constants, lifts symbolic values of enclosing traces into sub-graph inputs (for cond and
// while_loop bodies), and holds the rules for variable creation.
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/trace/graph.h"
#include "eagerflow/trace/recorder.h"

namespace ef {
struct VariableState;
}

namespace ef::trace {

class TraceContext : public Recorder {
 public:
  // `parent` is the enclosing trace for sub-graphs (branches, loop bodies), else nullptr.
  TraceContext(std::string function_name, bool allow_variable_creation, TraceContext* parent = nullptr);

  Tensor add_input(const TensorSpec& spec);
  std::vector<Tensor> record(const Primitive& op, std::span<const Tensor> inputs,
                             std::vector<TensorSpec> specs) override;
  // Value id of `t` in this graph: its own symbolic value, a lifted outer value, or a constant.
  int value_of(const Tensor& t);
  void set_outputs(const std::vector<Tensor>& outputs);

  // Variables: one read per variable until it is assigned (reads after an assignment see it).
  Tensor read_variable(const std::shared_ptr<VariableState>& var);
  void variable_assigned(const VariableState* var);
  void note_variable_created(const std::string& description);

  const std::shared_ptr<ir::Graph>& graph() const { return graph_; }
  TraceContext& root();
  const std::string& function_name() const { return function_name_; }
  bool allow_variable_creation() const { return allow_variable_creation_; }
  const std::vector<std::string>& created_variables() const { return created_variables_; }
  // Sub-graphs that run at most once (cond branches) read unassigned variables through the
  // enclosing trace; loop bodies must not (a read sees the previous iteration's assignment).
  void set_lift_variable_reads(bool lift) { lift_variable_reads_ = lift; }
  // The reads made through the enclosing trace (tapes outside the branch learn of them).
  const std::vector<std::pair<std::shared_ptr<VariableState>, Tensor>>& outer_variable_reads() const {
    return outer_variable_reads_;
  }
  // Outer tensors this sub-graph lifted, in the order of its lifted inputs.
  const std::vector<Tensor>& lifted() const { return lifted_; }
  // Eager tensors captured as constants (the originals, not the graph's frozen copies), each
  // with its value id: a loop body under a tape makes them inputs, so that they get gradients.
  std::vector<std::pair<Tensor, int>> captured_constants() const;

 private:
  std::shared_ptr<ir::Graph> graph_;
  TraceContext* parent_;
  std::string function_name_;
  bool allow_variable_creation_;
  std::vector<std::string> created_variables_;
  std::map<const TensorImpl*, int> constants_;   // keep captured eager tensors deduplicated
  std::vector<Tensor> captured_;
  std::map<const TensorImpl*, int> lifted_ids_;
  std::vector<Tensor> lifted_;
  std::map<const VariableState*, Tensor> reads_;
  std::set<const VariableState*> assigned_here_;
  std::vector<std::pair<std::shared_ptr<VariableState>, Tensor>> outer_variable_reads_;
  bool lift_variable_reads_ = false;
};

// The innermost trace active on this thread, or nullptr.
TraceContext* current();

// Makes `ctx` the active trace on this thread for the scope's lifetime.
class TraceScope {
 public:
  explicit TraceScope(TraceContext& ctx);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceContext* previous_;
};

// Hides any active trace (TF's init_scope): variable initializers run eagerly under it.
class EagerScope {
 public:
  EagerScope();
  ~EagerScope();
  EagerScope(const EagerScope&) = delete;
  EagerScope& operator=(const EagerScope&) = delete;

 private:
  TraceContext* previous_;
};

}  // namespace ef::trace
