#pragma once
#include <cstdint>
#include <memory>

namespace ef {
struct Storage;
}

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
// `b_owner`, where B is a tensor's (one matrix, or one shared by the batch): the storage it
// lives in, so that a product by the same unchanged B again reads panels packed once
// (packed_b_cache.h; a served model's weights).
void gemm_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
              std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias = nullptr,
              bool a_transposed = false, bool b_transposed = false,
              const std::shared_ptr<Storage>* b_owner = nullptr);

// Whether this CPU multiplies bfloat16 natively (AVX512_BF16 or AMX, read from oneDNN's CPU
// detection once); EF_BFLOAT16_NATIVE=0 turns it off, to compare with the float32 path.
bool native_bfloat16();

// C = op(A) * op(B) with bfloat16 A, B and C (float32 accumulation, one rounding at the end) on
// oneDNN's bfloat16 kernels; only where native_bfloat16(). Arguments as gemm_f32's.
void gemm_bf16(const void* a, const void* b, void* c, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n,
               bool a_broadcast, bool b_broadcast, bool a_transposed, bool b_transposed);

}  // namespace ef::cpu
