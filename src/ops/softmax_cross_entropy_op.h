#pragma once
// Sparse softmax cross-entropy from logits as one op (src/ops/softmax_cross_entropy_op.cpp),
// public as ef::nn::sparse_softmax_cross_entropy_with_logits (eagerflow/nn/cross_entropy.h).
#include <optional>

#include "eagerflow/ops/primitive.h"

namespace ef {
// (logits [..., C] float, labels [...] int32/int64) -> (loss [...], lse [...]): per row
// lse = logsumexp(logits) and loss = lse - logits[label]. lse is what the gradient needs.
class SparseSoftmaxCrossEntropy : public MergeablePrimitive<SparseSoftmaxCrossEntropy> {
 public:
  const char* name() const override { return "sparse_softmax_cross_entropy"; }
  bool is_index_input(std::size_t i) const override { return i == 1; }
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

// (logits, labels, lse, dloss) -> dlogits = (exp(logits - lse) - one_hot(label)) dloss in one
// pass. Its own gradient differentiates the same formula composed from ef ops.
class SparseSoftmaxCrossEntropyGrad : public MergeablePrimitive<SparseSoftmaxCrossEntropyGrad> {
 public:
  const char* name() const override { return "sparse_softmax_cross_entropy_grad"; }
  bool is_index_input(std::size_t i) const override { return i == 1; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

}  // namespace ef
