#pragma once
// Ops that the fusion passes create (and eager Dense, when nothing records). They compute
// exactly what the op chain they replace computes: fused Dense is one oneDNN GEMM with the
// bias, then the activation on ef's vector kernels; fused elementwise is one blocked loop.
#include <memory>
#include <optional>

#include "eagerflow/ops/primitive.h"
#include "ops/elementwise_math.h"

namespace ef {

// post(matmul(x, w) + bias) for x of rank >= 2, w rank 2, bias [N] (or none), float32.
// activation: none, relu, sigmoid, tanh or gelu.
std::shared_ptr<Primitive> make_fused_dense(bool has_bias, std::optional<UnaryKind> activation);
bool fusible_activation(UnaryKind kind);
// The fusible activation a Keras activation name stands for ("relu" -> relu), or none.
std::optional<UnaryKind> fusible_activation_named(const std::string& name);
// Dense's forward in one fused kernel when it runs eagerly with no tape recording; an
// undefined Tensor when the composed ops must run instead (a trace, a tape, other dtypes).
Tensor eager_dense(const Tensor& x, const Tensor& kernel, const Tensor* bias, std::optional<UnaryKind> activation);
// True when nothing would record the composed ops (no trace, no tape): ask before reading
// variables for eager_dense, so that a trace or tape sees only the reads it needs.
bool eager_fusion_allowed();

}  // namespace ef

namespace ef {

// A run of elementwise ops computed in one blocked loop. Registers 0..inputs-1 hold the
// inputs (each of the output shape, or a scalar); instruction i writes register inputs + i.
struct FusedInstruction {
  bool binary = false;
  int code = 0;  // UnaryKind or BinaryKind
  int a = 0, b = 0;
};
std::shared_ptr<Primitive> make_fused_elementwise(std::vector<FusedInstruction> program, int num_inputs,
                                                  std::vector<int> output_registers, TensorSpec spec);
// The code (UnaryKind or BinaryKind) of an op the fused kernel can run (same dtype in and
// out), or -1.
int fusible_code(const Primitive& op);

}  // namespace ef
