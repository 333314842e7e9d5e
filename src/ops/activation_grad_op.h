#pragma once
// Activation gradients as one op each (src/ops/activation_grad_op.cpp): one pass over memory
// instead of the chains of elementwise ops their formulas compose to. The relu and gelu
// gradient rules (src/ops/elementwise.cpp) emit them, so every tape, trace and train step
// runs them.
#include <optional>

#include "eagerflow/ops/primitive.h"
#include "ops/elementwise_math.h"
#include "ops/op_factories.h"

namespace ef {

// relu_grad(y, g) = y > 0 ? g : 0, from relu's output y (y > 0 exactly where x > 0, NaN
// included), so that the pre-activation need not be kept for the backward pass.
// gelu_grad(x, g) = g * (Phi(x) + x phi(x)), one pass: in float32 from the same Phi and exp
// as float32 gelu (a few ulp of the exact terms, whatever the shapes), in float64 the same
// float operations as the composed formula. Inputs of one dtype, shapes broadcasting.
class ActivationGrad : public MergeablePrimitive<ActivationGrad> {
 public:
  explicit ActivationGrad(UnaryKind kind);
  const char* name() const override;
  UnaryKind kind() const { return kind_; }
  bool computes_bfloat16() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  Tensor eval_bfloat16(std::span<const Tensor> in, const TensorSpec& spec) const;
  UnaryKind kind_;
};

// The gradient of relu (from its output y) or gelu (from its input x) for the cotangent g.
Tensor relu_grad(const Tensor& y, const Tensor& g);
Tensor gelu_grad(const Tensor& x, const Tensor& g);

namespace detail {
void add_activation_grad_factories(OpFactories& f);
}  // namespace detail

}  // namespace ef
