#pragma once
// The fused recurrent ops behind ef::lstm and ef::gru (include/eagerflow/nn/recurrent.h).
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"

namespace ef {

enum class RnnCellKind { lstm, gru };

// LSTM inputs (x [n,t,c], kernel [c,4u], recurrent_kernel [u,4u], bias [4,u], h0 [n,u], c0 [n,u]),
// outputs (sequence [n,t,u], h [n,u], c [n,u], workspace float32[k]); the GRU (linear before
// reset) has no c0 / c and a bias of 4 rows: z and r (input + recurrent bias), h's input bias,
// h's recurrent bias. The workspace holds what the backward pass needs; it gets no gradient.
class RnnForward : public MergeablePrimitive<RnnForward> {
 public:
  RnnForward(RnnCellKind cell, bool reverse) : cell_(cell), reverse_(reverse) {}
  const char* name() const override { return cell_ == RnnCellKind::lstm ? "lstm" : "gru"; }
  OpParams parameters() const override { return OpParams().add_flag("reverse", reverse_); }
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
  RnnCellKind cell() const { return cell_; }
  bool reverse() const { return reverse_; }

 private:
  RnnCellKind cell_;
  bool reverse_;
};

// The gradients of RnnForward's inputs from its inputs, its outputs and the cotangents of its
// outputs but the workspace (all given: zeros where nothing flowed). Its own gradient (second
// order, forward mode) differentiates the same math written with ef ops on ef::scan.
class RnnBackward : public MergeablePrimitive<RnnBackward> {
 public:
  RnnBackward(RnnCellKind cell, bool reverse) : cell_(cell), reverse_(reverse) {}
  const char* name() const override { return cell_ == RnnCellKind::lstm ? "lstm_grad" : "gru_grad"; }
  OpParams parameters() const override { return OpParams().add_flag("reverse", reverse_); }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  RnnCellKind cell_;
  bool reverse_;
};

namespace detail {
void add_rnn_factories(OpFactories& f);
}

}  // namespace ef
