#pragma once
// Layer normalization as one op (src/ops/layer_norm_op.cpp; kernels in
// src/kernels/cpu/layer_norm.cpp), public as ef::nn::layer_norm (eagerflow/nn/normalization.h).
#include <optional>

#include "eagerflow/ops/primitive.h"

namespace ef {
// (x [..., C], gamma [C], beta [C]) -> (y [..., C], mean [..., 1], rstd [..., 1]) over the last
// axis: y = (x - mean) rstd gamma + beta, rstd = 1 / sqrt(var + epsilon) (biased variance), as
// ONNX's LayerNormalization(axis=-1) with its Mean and InvStdDev outputs. float32 or float64.
class LayerNormOp : public MergeablePrimitive<LayerNormOp> {
 public:
  explicit LayerNormOp(double epsilon) : epsilon_(epsilon) {}
  const char* name() const override { return "layer_norm"; }
  OpParams parameters() const override;
  double epsilon() const { return epsilon_; }
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  double epsilon_;
};

// (x, gamma, mean, rstd, dy) -> (dx, dgamma, dbeta) in one pass. Its own gradient (second
// order) differentiates the same formulas composed from ef ops, mean and rstd recomputed from x.
class LayerNormGradOp : public MergeablePrimitive<LayerNormGradOp> {
 public:
  explicit LayerNormGradOp(double epsilon) : epsilon_(epsilon) {}
  const char* name() const override { return "layer_norm_grad"; }
  OpParams parameters() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  double epsilon_;
};

}  // namespace ef
