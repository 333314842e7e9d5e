#pragma once
// The node that carries a user's gradient rule (ef::custom_gradient, ef::custom_vjp).
// Inputs: the function's inputs (then the variables its forward pass read), the outputs as the
// forward pass computed them, then the residuals. Outputs: those outputs again, as new handles
// on the same storage. Its gradient calls the rule; the forward ops that made the outputs and
// residuals get no cotangent from it, so they are differentiated only when the rule's own
// gradient reaches the residuals (grad of grad).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/autodiff/custom_gradient.h"
#include "eagerflow/ops/primitive.h"

namespace ef {

struct CustomRule {
  std::string function;             // the user's name for the function
  std::size_t num_args = 0;         // explicit inputs (variable reads follow them)
  std::vector<Variable> variables;  // trainable variables the forward pass read
  VjpBwdFn bwd;                     // (residuals, cotangents) -> gradients of inputs, then variables
};

class CustomGradientOp : public PrimitiveBase<CustomGradientOp> {
 public:
  // `rule` null: loaded from a saved model, where the rule was not saved.
  CustomGradientOp(std::string function, std::size_t num_inputs, std::size_t num_outputs, std::size_t num_residuals,
                   std::shared_ptr<const CustomRule> rule)
      : function_(std::move(function)), num_inputs_(num_inputs), num_outputs_(num_outputs),
        num_residuals_(num_residuals), rule_(std::move(rule)) {}
  const char* name() const override { return "custom_gradient"; }
  bool takes_bfloat16() const override { return true; }
  OpParams parameters() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
  bool has_rule() const { return rule_ != nullptr; }
  // Inputs: the function's inputs (num_inputs), then its outputs, then the residuals.
  std::size_t num_inputs() const { return num_inputs_; }

 private:
  std::string function_;
  std::size_t num_inputs_, num_outputs_, num_residuals_;
  std::shared_ptr<const CustomRule> rule_;
};

namespace detail {
// Makes `variables` what ef::custom_variables() returns while a gradient function runs.
class CustomVariablesScope {
 public:
  explicit CustomVariablesScope(const std::vector<Variable>& variables);
  ~CustomVariablesScope();
  CustomVariablesScope(const CustomVariablesScope&) = delete;
  CustomVariablesScope& operator=(const CustomVariablesScope&) = delete;

 private:
  const std::vector<Variable>* previous_;
};
}  // namespace detail

}  // namespace ef
