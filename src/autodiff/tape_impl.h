#pragma once
// The tape behind ef::GradientTape, and reverse-mode differentiation of a whole graph (how
// cond and functions called under a tape get their gradients).
#include <memory>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/trace/graph.h"
#include "ops/interpreters.h"

namespace ef::detail {

class TapeImpl : public TapeHook {
 public:
  TapeImpl(bool persistent, bool watch_accessed_variables);
  ~TapeImpl() override;
  TapeImpl(const TapeImpl&) = delete;
  TapeImpl& operator=(const TapeImpl&) = delete;

  void record(const Primitive& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs) override;
  void variable_read(const std::shared_ptr<VariableState>& var, const Tensor& value) override;
  void watch(const Tensor& t);
  void watch_variable(const Variable& v);
  std::vector<Tensor> gradient(std::span<const Tensor> targets, std::span<const Tensor> output_gradients,
                               std::span<const GradientSource> sources, UnconnectedGradients unconnected);
  std::vector<Variable> watched_variables() const;
  void reset();

 private:
  struct Entry {
    std::shared_ptr<const Primitive> op;
    std::vector<Tensor> inputs, outputs;
  };
  bool tracks(const Tensor& t) const { return tracked_.count(t.impl_ptr().get()) != 0; }

  bool persistent_, watch_variables_;
  bool used_ = false;
  std::vector<Entry> entries_;
  std::unordered_set<const TensorImpl*> tracked_;  // watched, or computed from watched values
  std::vector<Tensor> watched_;                    // keeps watched handles (and their ids) alive
  std::vector<std::pair<Variable, Tensor>> variable_reads_;
};

// Differentiates `graph` at `inputs`: runs it op by op under a fresh tape and returns the
// cotangents of the inputs marked `needed` (zeros when unconnected; undefined otherwise).
std::vector<Tensor> graph_vjp(const ir::Graph& graph, std::span<const Tensor> inputs,
                              std::span<const Tensor> cotangents, const std::vector<bool>& needed);

}  // namespace ef::detail
