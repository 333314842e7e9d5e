#pragma once
// The fused attention ops (src/ops/attention_op.cpp; kernels in src/kernels/cpu/attention.cpp).
#include <optional>

#include "eagerflow/ops/primitive.h"

namespace ef {
struct AttentionParams {
  double scale = 1.0;
  bool causal = false;
  bool has_mask = false;  // input 3 is a bool mask broadcastable to [batch, heads, q_len, k_len]
  double dropout = 0.0;   // > 0: the last input is a float64 scalar seed for the dropout mask
  bool bshd = false;      // q, k, v and out are [batch, seq, heads, dim] (lse stays [batch, heads, q_len])
  bool operator==(const AttentionParams&) const = default;
  OpParams parameters() const;
  static AttentionParams from(const OpParams& p);
};

// (q [B,H,Sq,D], k [B,H,Sk,D], v [B,H,Sk,Dv], [mask], [seed]) -> (out [B,H,Sq,Dv], lse [B,H,Sq]):
// softmax(scale q k^T, masked) v computed block by block with an online softmax; lse is each
// query row's logsumexp, all the backward pass needs besides the inputs and the output.
class ScaledDotProductAttention : public MergeablePrimitive<ScaledDotProductAttention> {
 public:
  explicit ScaledDotProductAttention(AttentionParams p) : p_(p) {}
  const char* name() const override { return "scaled_dot_product_attention"; }
  OpParams parameters() const override { return p_.parameters(); }
  // With dropout the op draws nothing itself (the seed is an input), so it may still merge.
  const AttentionParams& params() const { return p_; }
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  AttentionParams p_;
};

// (q, k, v, out, lse, dout, dlse, [mask], [seed]) -> (dq, dk, dv): the scores recomputed block
// by block from lse. Its own gradient (second order) differentiates the same formulas composed
// from ef ops (quadratic memory; not with dropout).
class ScaledDotProductAttentionGrad : public MergeablePrimitive<ScaledDotProductAttentionGrad> {
 public:
  explicit ScaledDotProductAttentionGrad(AttentionParams p) : p_(p) {}
  const char* name() const override { return "scaled_dot_product_attention_grad"; }
  OpParams parameters() const override { return p_.parameters(); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  AttentionParams p_;
};

}  // namespace ef
