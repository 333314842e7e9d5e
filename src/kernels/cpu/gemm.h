#pragma once
#include <cstdint>

namespace ef::cpu {
// C[M,N] = A[M,K] * B[K,N], all row-major and contiguous, float32, through oneDNN with the
// primitive cached per shape. `batch` > 1 multiplies `batch` stacked matrices; a
// `*_batch_stride` of 0 broadcasts that operand over the batch.
void gemm_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
              std::int64_t n, bool a_broadcast, bool b_broadcast);
}  // namespace ef::cpu
