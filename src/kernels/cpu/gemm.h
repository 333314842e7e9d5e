#pragma once
#include <cstdint>

namespace ef::cpu {

enum class PostOp { none, relu, sigmoid, tanh, gelu };

// C[M,N] = post(A[M,K] * B[K,N] + bias[N]), all row-major and contiguous, float32, through
// oneDNN with the primitive cached per shape. `batch` > 1 multiplies `batch` stacked matrices;
// a broadcast operand is shared by the whole batch. `bias` may be null.
void gemm_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
              std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias = nullptr,
              PostOp post = PostOp::none);

}  // namespace ef::cpu
