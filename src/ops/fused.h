#pragma once
// Ops that only the fusion pass creates. They compute what the op chain they replace
// computes; their kernels run it as one oneDNN primitive.
#include <memory>

#include "eagerflow/ops/primitive.h"

namespace ef {

// post(matmul(x, w) + bias) for x of rank >= 2, w rank 2, bias [N] (or none), float32.
// activation: "" (none), "relu", "sigmoid", "tanh", "gelu".
std::shared_ptr<Primitive> make_fused_dense(bool has_bias, const std::string& activation);
bool fusible_activation(const std::string& op_name);

}  // namespace ef
