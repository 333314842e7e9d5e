#pragma once
// Ops the convolution fusion pass (src/passes/conv_fusion.cpp) makes. They compute what the
// op chains they replace compute, with fewer passes over the activations:
// - fused_conv2d: activation(conv2d(x, w) + bias), the bias added inside oneDNN's convolution
//   (as a separate add rounds: one addition per output), the activation on ef's vector
//   kernels over the output (bit-equal to the unfused activation). Activations whose gradient
//   is a function of the output only (relu, sigmoid, tanh), so that training keeps no
//   pre-activation.
// - conv2d_backprop_filter_bias: (x, dy, w) -> (dw, dbias): the filter gradient and dy summed
//   over batch, height and width (the bias gradient), one oneDNN primitive.
#include <memory>
#include <optional>

#include "eagerflow/ops/primitive.h"
#include "ops/primitives.h"

namespace ef {

class FusedConv2D : public MergeablePrimitive<FusedConv2D> {
 public:
  FusedConv2D(Conv2DParams p, bool has_bias, std::optional<UnaryKind> activation);
  const char* name() const override { return "fused_conv2d"; }
  OpParams parameters() const override;
  const Conv2DParams& params() const { return p_; }
  bool has_bias() const { return has_bias_; }
  std::optional<UnaryKind> activation() const { return activation_; }
  bool takes_bfloat16() const override;  // natively where the CPU can (src/ops/conv.cpp)
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  Conv2DParams p_;
  bool has_bias_;
  std::optional<UnaryKind> activation_;
};

class Conv2DBackpropFilterBias : public MergeablePrimitive<Conv2DBackpropFilterBias> {
 public:
  explicit Conv2DBackpropFilterBias(Conv2DParams p) : p_(p) {}
  const char* name() const override { return "conv2d_backprop_filter_bias"; }
  OpParams parameters() const override { return p_.parameters(); }
  bool takes_bfloat16() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  Conv2DParams p_;
};

// max_pool2d_relu_grad(y, dy) = relu_grad(y, max_pool2d_grad(y, dy)) for y = relu(...): dy
// routed to each window's first maximum where that maximum is > 0, in one pass (max pooling
// of a relu's output, the CNN's pattern, whose gradient then needs no second pass over y).
class MaxPool2DReluGrad : public MergeablePrimitive<MaxPool2DReluGrad> {
 public:
  explicit MaxPool2DReluGrad(Pool2DParams p);
  const char* name() const override { return "max_pool2d_relu_grad"; }
  OpParams parameters() const override { return p_.parameters(); }
  bool computes_bfloat16() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  Pool2DParams p_;
};

// Activations fused_conv2d takes: their gradient needs the output only.
bool conv_fusible_activation(UnaryKind kind);

}  // namespace ef
