// The public fused update ops (eagerflow/optim/optimizer.h): each dispatches one ApplyUpdate
// (src/ops/optimizer_update_op.h) and tells an active trace that the variables changed, so
// that later reads inside the step see the new values.
#include "eagerflow/optim/optimizer.h"
#include "eagerflow/trace/context.h"
#include "ops/optimizer_update_op.h"

namespace ef::optim {
namespace {

std::shared_ptr<VariableState> state_of(const Variable& v, const char* op, const char* what) {
  if (!v.defined()) fail(op, std::string(what) + " is an undefined Variable");
  return v.state_ptr();
}

void apply(const UpdateHyperparameters& h, const char* op, const Variable& var, std::vector<Variable> slots,
           std::vector<Tensor> inputs) {
  std::vector<std::shared_ptr<VariableState>> slot_states;
  for (const auto& s : slots) slot_states.push_back(state_of(s, op, "a slot"));
  ApplyUpdate update(h, state_of(var, op, "the variable"), std::move(slot_states));
  dispatch(update, inputs);
  if (auto* ctx = trace::current())
    for (const auto& v : update.variables()) ctx->variable_assigned(v.get());
}

}  // namespace

void apply_sgd(const Variable& var, const Tensor& grad, const Tensor& lr) {
  apply({.rule = cpu::UpdateRule::sgd}, "apply_sgd", var, {}, {grad, lr});
}

void apply_momentum(const Variable& var, const Variable& m, const Tensor& grad, const Tensor& lr, double momentum,
                    bool nesterov) {
  apply({.rule = nesterov ? cpu::UpdateRule::nesterov : cpu::UpdateRule::momentum, .momentum = momentum}, "apply_momentum",
        var, {m}, {grad, lr});
}

void apply_adam(const Variable& var, const Variable& m, const Variable& v, const Tensor& grad, const Tensor& lr,
                const Tensor& step, double beta_1, double beta_2, double epsilon, double weight_decay) {
  apply({.rule = cpu::UpdateRule::adam, .beta_1 = beta_1, .beta_2 = beta_2, .epsilon = epsilon, .weight_decay = weight_decay},
        weight_decay != 0.0 ? "apply_adamw" : "apply_adam", var, {m, v}, {grad, lr, step});
}

void apply_rmsprop(const Variable& var, const Variable& velocity, const Tensor& grad, const Tensor& lr, double rho,
                   double epsilon, const Variable& m, double momentum) {
  if (momentum != 0.0 && !m.defined()) fail("apply_rmsprop", "momentum > 0 needs the momentum slot m");
  bool with_m = momentum != 0.0;
  UpdateHyperparameters h{.rule = with_m ? cpu::UpdateRule::rmsprop_momentum : cpu::UpdateRule::rmsprop,
                          .momentum = momentum, .rho = rho, .epsilon = epsilon};
  apply(h, "apply_rmsprop", var, with_m ? std::vector<Variable>{velocity, m} : std::vector<Variable>{velocity}, {grad, lr});
}

}  // namespace ef::optim
