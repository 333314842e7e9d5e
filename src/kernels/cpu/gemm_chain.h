#pragma once
// The blocked GEMM behind gemm_f32 for products of more than a few rows, on AVX2+FMA or AVX-512.
//
// It computes each element of C exactly as the few-rows kernel (gemv.h) does: one fused
// multiply-add chain over k = 0, 1, ..., K-1 starting from +0, then the bias in a separate
// add. K is cut into blocks for the caches, but a block continues the chain from the value
// the previous one stored, so the blocking changes no bit; nor do M, the tile a row falls in,
// the split over threads or which operand is stored transposed. A row of a product therefore
// has the same bits whatever rows are computed with it (users compare predict(x)[i] with
// model(x[i:i+1])). oneDNN's GEMM, which it replaces here, picks its K order by shape.
#include <cstdint>
#include <memory>

namespace ef {
struct Storage;
}

namespace ef::cpu {

struct PackedB;  // packed_b_cache.h

// True where gemm_chain_f32 runs: AVX2 and FMA, and EF_ISA does not ask for the baseline.
bool gemm_chain_applicable();

// True where it runs AVX-512's register tile (the CPU has AVX-512F and EF_ISA allows it).
bool gemm_chain_has_avx512();

// gemm_f32's contract (see gemm.h), any m. With `b_owner`, B's panels come from the packed-B
// cache once the same unchanged B has been multiplied before (packed_b_cache.h).
void gemm_chain_f32(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m, std::int64_t k,
                    std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias, bool a_transposed,
                    bool b_transposed, const std::shared_ptr<Storage>* b_owner = nullptr);

// A product of a few rows (2 to gemv.h's kGemvMaxRows) on this GEMM, where it runs faster than
// on the few-rows kernel: the CPU runs the 64-column tile on this N and B's panels come from
// the packed-B cache (a served model's weights; the lookup counts as seeing B, as a product
// does). Returns false, having computed nothing, otherwise. Measured on 784x512, one thread,
// panels kept: 2 rows 1.3x faster here, 4 rows 1.6x, 8 rows 1.8x; a B packed on each call
// (training) stays on the few-rows kernel.
bool gemm_chain_f32_few_rows(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                             std::int64_t k, std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias,
                             bool a_transposed, bool b_transposed, const std::shared_ptr<Storage>* b_owner);

// op(B) in the packed-B cache's layout (packed_b_cache.h: panels of `nr` columns, K in blocks
// of `k_block`), when `owner`'s bytes were multiplied unchanged in that layout before; null the
// first time. nr a multiple of 8. The few-rows product keeps each thread's columns so.
std::shared_ptr<const PackedB> cached_panels(const std::shared_ptr<Storage>& owner, const float* b, std::int64_t k,
                                             std::int64_t n, std::int64_t nr, std::int64_t k_block, bool transposed);

// The same on AVX2's tile whatever the CPU has: the tests compare the two tiles' bits.
void gemm_chain_f32_avx2(const float* a, const float* b, float* c, std::int64_t batch, std::int64_t m,
                         std::int64_t k, std::int64_t n, bool a_broadcast, bool b_broadcast, const float* bias,
                         bool a_transposed, bool b_transposed);

}  // namespace ef::cpu
