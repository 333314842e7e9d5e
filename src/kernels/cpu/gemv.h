#pragma once
// Products with few rows (batch-1 inference, a decoder's one step): C[M,N] = op(A) op(B) for
// M <= kGemvMaxRows, on a hand-vectorized AVX2+FMA kernel that streams the weights once in
// their stored layout. oneDNN's GEMM, built for blocks of rows, reads a [K,N] weight matrix at
// M=1 at well below the speed memory allows.
//
// Each output element is one fused multiply-add chain over k in order from +0, B stored either
// way, whatever M, the thread count or the split over N, and the bias is added after the sum
// (the bits of the product followed by a separate add). The GEMM for more rows
// (gemm_chain.h) computes the same chain, so a row's bits do not depend on the batch.
#include <cstdint>
#include <memory>

namespace ef {
struct Storage;
}

namespace ef::cpu {

// Measured on the 784x512 product, one thread (bench/ops_bench.cpp): 1 row 1.1x faster than
// oneDNN, 2 rows 2.4x, 4 rows 1.6x, 8 rows 1.3-1.7x; level at 16, and oneDNN ahead from 24 on.
inline constexpr std::int64_t kGemvMaxRows = 8;

// True when gemv_f32 takes a product with `m` rows on this CPU (AVX2 and FMA, and EF_ISA does
// not ask for the baseline kernels).
bool gemv_applicable(std::int64_t m);

// gemm_f32's contract (see gemm.h) for m <= kGemvMaxRows. With `b_owner` and more than one
// thread, a B stored [K,N] multiplied again unchanged is read from a copy that keeps each
// thread's columns together (packed_b_cache.h).
void gemv_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
              std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias, bool a_transposed,
              bool b_transposed, const std::shared_ptr<Storage>* b_owner = nullptr);

}  // namespace ef::cpu
