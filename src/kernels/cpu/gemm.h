#pragma once
#include <cstdint>

namespace ef::cpu {

// Drops every thread's cached oneDNN primitives (each at its next matmul).
void release_primitive_caches();
std::size_t cached_primitives_on_this_thread();

// C[M,N] = op(A) * op(B) + bias[N], row-major and contiguous, float32. op(A) is A[M,K], or A
// stored as [K,M] when `a_transposed` (likewise B: [K,N], or [N,K] stored): gradients
// multiply by transposes without copying them. `batch` > 1 multiplies `batch` stacked
// matrices; a broadcast operand is shared by the whole batch. `bias` may be null.
// On AVX2+FMA every element is one fused multiply-add chain over k in order, then the bias
// (gemv.h for a few rows, gemm_chain.h for more): a row's bits do not depend on M. Elsewhere
// (EF_ISA=baseline) oneDNN's GEMM runs, cached per shape, and its order depends on the shape.
void gemm_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
              std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias = nullptr,
              bool a_transposed = false, bool b_transposed = false);

}  // namespace ef::cpu
