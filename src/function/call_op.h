#pragma once
// The call op (JAX's closed_call, TF's PartitionedCall): a traced graph called as one node.
// Traced functions called under a tape and loaded saved models run through it: a tape records
// one entry, a trace records one node, and the gradient comes from the graph itself, computed
// from forward values the call kept (no second forward pass, no second random draw).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "autodiff/gradient_split.h"
#include "eagerflow/exec/plan.h"
#include "eagerflow/ops/primitive.h"
#include "eagerflow/passes/passes.h"

namespace ef {

// A graph ready to be called: the graph as traced (what gradients are derived from), and the
// plan that runs it, optimized with `options` (which its gradient graphs keep).
class GraphFunction {
 public:
  GraphFunction(std::shared_ptr<const ir::Graph> traced, const passes::PassOptions& options);

  const std::string& name() const { return traced_->name; }
  const ir::Graph& traced() const { return *traced_; }
  const ir::Graph& optimized() const { return plan_.graph(); }
  const passes::PassOptions& options() const { return options_; }
  const std::vector<TensorSpec>& input_specs() const { return input_specs_; }
  const std::vector<TensorSpec>& output_specs() const { return output_specs_; }
  bool has_effect() const { return has_effect_; }
  bool is_stateful() const { return is_stateful_; }
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) const { plan_.run(inputs, outputs); }

  // The forward graph that also returns the residuals, and the backward graphs: made on the
  // first gradient, then kept.
  struct Gradient {
    std::shared_ptr<const GraphFunction> forward;  // outputs: the graph's, then the residuals
    std::size_t num_residuals = 0;
    detail::GradientSplit split;
    std::shared_ptr<const GraphFunction> backward;  // all gradients of split.gradient_inputs
  };
  // Throws the ef::Error that splitting gave (an op without a gradient rule), every time.
  const Gradient& gradient() const;
  // Whether the split succeeded: a call records its residual variant only then, so that a
  // tape over a graph without gradients fails when a gradient is asked, not when recording.
  bool has_gradient() const;
  // The backward graph with only the gradients of the inputs marked in `needed` (over the
  // graph's inputs; in the order of split.gradient_inputs), the rest pruned.
  std::shared_ptr<const GraphFunction> backward_for(const std::vector<bool>& needed) const;

 private:
  std::shared_ptr<const ir::Graph> traced_;
  exec::Plan plan_;
  std::vector<TensorSpec> input_specs_, output_specs_;
  bool has_effect_ = false, is_stateful_ = false;
  passes::PassOptions options_;
  mutable std::once_flag gradient_once_;
  mutable std::unique_ptr<Gradient> gradient_;
  mutable std::string gradient_error_;
  mutable ErrorKind gradient_error_kind_;
  mutable std::mutex backward_mutex_;
  mutable std::map<std::vector<bool>, std::shared_ptr<const GraphFunction>> backward_for_;
};

class CallOp : public PrimitiveBase<CallOp> {
 public:
  // with_residuals: the outputs are followed by the forward values the gradient needs (the
  // variant a tape records).
  CallOp(std::shared_ptr<const GraphFunction> fn, bool with_residuals) : fn_(std::move(fn)), with_residuals_(with_residuals) {}
  const char* name() const override { return "call"; }
  bool takes_bfloat16() const override { return true; }
  bool takes_strings() const override { return true; }
  std::string attrs() const override;
  bool has_effect() const override { return fn_->has_effect(); }
  bool is_stateful() const override { return fn_->is_stateful(); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<SubGraphRef> subgraphs() const override;
  const std::shared_ptr<const GraphFunction>& function() const { return fn_; }
  bool with_residuals() const { return with_residuals_; }

 private:
  std::shared_ptr<const GraphFunction> fn_;
  bool with_residuals_;
};

namespace detail {
// Whether a value of spec `given` may be passed where `wanted` is expected: the same dtype and
// rank, and dims equal where both are known (a dynamic dim is checked when the call runs).
bool specs_compatible(const TensorSpec& given, const TensorSpec& wanted);
// Calls `fn` through dispatch: eagerly, as one node of the active trace, and as one entry on
// recording tapes (then with its residuals). Returns the graph's outputs.
std::vector<Tensor> call_graph(const std::shared_ptr<const GraphFunction>& fn, std::span<const Tensor> inputs);
}  // namespace detail

}  // namespace ef
