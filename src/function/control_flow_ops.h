#pragma once
// The ops that ef::cond and ef::while_loop record inside a trace: each holds its traced
// sub-graphs, optimized and compiled.
#include <memory>
#include <optional>
#include <vector>

#include "eagerflow/exec/plan.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/passes/passes.h"

namespace ef {

class GraphFunction;

namespace detail {
// The pass options of the ef::function whose body this thread traces (FunctionOptions::passes),
// for the sub-graphs made meanwhile (cond branches, loop and scan bodies, and those a gradient
// traces); the defaults when no function traces.
const passes::PassOptions& tracing_pass_options();
// Makes `options` the tracing pass options on this thread for the scope's lifetime.
class TracingPassOptions {
 public:
  explicit TracingPassOptions(const passes::PassOptions& options);
  ~TracingPassOptions();
  TracingPassOptions(const TracingPassOptions&) = delete;
  TracingPassOptions& operator=(const TracingPassOptions&) = delete;

 private:
  const passes::PassOptions* previous_;
};
}  // namespace detail

// A traced sub-graph ready to run: the graph as traced (for gradients), the graph optimized
// with `options` (the passes of the function whose trace made it) and its plan.
struct SubGraph {
  std::shared_ptr<ir::Graph> traced, graph;
  std::shared_ptr<exec::Plan> plan;
  passes::PassOptions options;  // also for the sub-graphs derived from this one (gradients)
  SubGraph(std::shared_ptr<ir::Graph> traced_graph, const passes::PassOptions& pass_options);
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;
  bool touches_state() const;
  // Adds "<role> (traced)" and "<role> (optimized)" for the IR verifier.
  void add_refs(std::vector<SubGraphRef>& refs, const std::string& role) const;
};

// Inputs: the predicate, then the captures both branches take (in the same order).
class CondOp : public PrimitiveBase<CondOp> {
 public:
  CondOp(SubGraph then_g, SubGraph else_g, std::vector<TensorSpec> specs)
      : then_(std::move(then_g)), else_(std::move(else_g)), specs_(std::move(specs)) {}
  const char* name() const override { return "cond"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  std::string attrs() const override;
  bool has_effect() const override { return then_.touches_state() || else_.touches_state(); }
  std::vector<TensorSpec> infer(std::span<const Tensor>) const override { return specs_; }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override;
  // The gradient is another cond: each branch runs its own backward graph, on the forward
  // values its branch kept (the variant a tape records), so a random draw in a branch is
  // differentiated at the draw that made the output.
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
  bool accepts_missing_cotangents() const override { return residuals_ != nullptr; }
  std::vector<SubGraphRef> subgraphs() const override;
  const SubGraph& then_branch() const { return then_; }
  const SubGraph& else_branch() const { return else_; }
  // The variant whose outputs are followed by both branches' residuals (the branch not taken
  // returns empty tensors for its own); nullopt when a branch has no gradient.
  std::optional<CondOp> with_residuals() const;
  bool has_residuals() const { return residuals_ != nullptr; }

 private:
  struct Residuals;
  std::vector<Tensor> vjp_by_rerun(std::span<const Tensor> in, std::span<const Tensor> cot,
                                   const std::vector<bool>& needed) const;
  SubGraph then_, else_;
  std::vector<TensorSpec> specs_;
  std::shared_ptr<const Residuals> residuals_;
};

// Inputs: the loop variables, the cond's captures, then the body's captures.
class WhileOp : public PrimitiveBase<WhileOp> {
 public:
  // max_iterations: TF's maximum_iterations, -1 for none.
  // invariants: empty, or one per loop variable (a shape whose kDynamic dims may change).
  WhileOp(SubGraph cond, SubGraph body, std::size_t n_vars, std::size_t n_cond_caps, std::int64_t max_iterations = -1,
          std::vector<std::optional<Shape>> invariants = {})
      : cond_(std::move(cond)), body_(std::move(body)), n_vars_(n_vars), n_cond_caps_(n_cond_caps),
        max_iterations_(max_iterations), invariants_(std::move(invariants)) {}
  bool has_shape_invariants() const { return !invariants_.empty(); }
  std::int64_t max_iterations() const { return max_iterations_; }
  const SubGraph& condition() const { return cond_; }
  const SubGraph& body() const { return body_; }
  std::size_t num_vars() const { return n_vars_; }
  std::size_t num_cond_captures() const { return n_cond_caps_; }
  bool has_residuals() const { return residuals_ != nullptr; }
  const char* name() const override { return "while"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  std::string attrs() const override;
  bool has_effect() const override { return cond_.touches_state() || body_.touches_state(); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override;
  // From the variant a tape records: a loop backwards over the iterations, each running the
  // body's backward graph on the values that iteration kept (src/function/while_gradient.cpp).
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
  bool accepts_missing_cotangents() const override { return residuals_ != nullptr; }
  // The variant whose outputs are followed by the iteration count and, stacked over the
  // iterations, the values the body's gradient needs; nullopt when the body has no gradient.
  std::optional<WhileOp> with_residuals() const;
  std::vector<SubGraphRef> subgraphs() const override;

 private:
  struct Residuals;
  void run_loop(std::span<const Tensor> in, std::span<Tensor> out, const Residuals* keep) const;
  void append_residual_specs(std::vector<TensorSpec>& specs) const;
  SubGraph cond_, body_;
  std::size_t n_vars_, n_cond_caps_;
  std::int64_t max_iterations_;
  std::vector<std::optional<Shape>> invariants_;
  std::shared_ptr<const Residuals> residuals_;
};

}  // namespace ef
