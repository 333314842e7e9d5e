#pragma once
// The fused optimizer update ops (TF's ResourceApplyAdam and friends): one op per variable and
// step that reads the variable, its slots (momentum, moments), the gradient and the step's
// scalars, and writes the variable and the slots in one pass, in place when it may. An effect
// like an assignment (never removed, merged or reordered by passes); not differentiable.
//
// In place, safely: a variable holds an immutable tensor that readers share, so the op writes
// over a buffer only when the variable holds the sole handle on it and the buffer is one this
// op allocated (not a NumPy array the tensor wraps, not a graph's constant); otherwise it
// writes a new buffer of its own and swaps it in, as an assignment does. From the second step
// of a traced train step on, nothing is allocated.
#include <memory>
#include <vector>

#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/optimizer_update.h"

namespace ef {

struct VariableState;

struct UpdateHyperparameters {
  cpu::UpdateRule rule = cpu::UpdateRule::sgd;
  double momentum = 0.0;                         // momentum, nesterov, rmsprop_momentum
  double beta_1 = 0.0, beta_2 = 0.0;             // adam
  double rho = 0.0;                              // rmsprop
  double epsilon = 0.0;                          // adam, rmsprop
  double weight_decay = 0.0;                     // adam (AdamW: decoupled, inside the same pass)
  bool operator==(const UpdateHyperparameters&) const = default;
};

class ApplyUpdate : public PrimitiveBase<ApplyUpdate> {
 public:
  // `slots`: momentum: {m}; adam: {m, v}; rmsprop: {v} or, with momentum, {v, m}. Checks the
  // hyperparameters and that the slots are distinct variables of the variable's dtype and shape.
  ApplyUpdate(UpdateHyperparameters h, std::shared_ptr<VariableState> var, std::vector<std::shared_ptr<VariableState>> slots);
  const char* name() const override;
  OpParams parameters() const override;
  bool has_effect() const override { return true; }
  bool is_differentiable() const override { return false; }
  // Inputs: the gradient, the learning rate (a float scalar) and, for Adam, the step counting
  // from 1 (a float or integer scalar). No outputs.
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  const UpdateHyperparameters& hyperparameters() const { return h_; }
  // The variable, then its slots: every variable the op writes.
  const std::vector<std::shared_ptr<VariableState>>& variables() const { return vars_; }

 private:
  std::size_t num_inputs() const { return h_.rule == cpu::UpdateRule::adam ? 3 : 2; }
  UpdateHyperparameters h_;
  std::vector<std::shared_ptr<VariableState>> vars_;
};

// The variables `op` writes: an assignment's, a fused update's variable and slots; empty for
// every other op (for passes and transforms that must treat writes alike).
std::vector<const VariableState*> variables_written(const Primitive& op);

}  // namespace ef
