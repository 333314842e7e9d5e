#pragma once
// B operands packed once and kept (see gemm_chain.cpp). A served model multiplies by the same
// weights on every call; packing them on every call, or reading them in place, costs about 7% of
// a batch-128 MLP's inference at one thread (their rows, 2 KB apart, come from L3). onnxruntime
// packs them once when it loads a model; here they are packed the second time the same unchanged
// bytes are multiplied in the same layout, and kept while they stay unchanged.
//
// "Unchanged" is Storage::version, which moves whenever anything asks for a writable pointer
// (the only way to write a tensor's bytes): an optimizer step, an assign, a loaded checkpoint.
// Training writes its weights every step, so its products never pack twice: they see each
// version once. Panels are the same floats in another order: the products' bits do not change.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace ef {
struct Storage;
}

namespace ef::cpu {

struct PackedB {
  std::vector<float> buffer;
  const float* panels = nullptr;  // 64-byte aligned, in buffer
};

// One layout of one B: where it starts, its sizes, how it is stored, and the panels: nr
// columns wide (the last zero-padded), K in blocks of k_block, each block's panels side by
// side ([kc, nr] each, the block from p0 * ceil(n / nr) * nr on).
struct PackedBLayout {
  const float* b;
  std::int64_t k, n, nr, k_block;
  bool transposed;
  bool operator==(const PackedBLayout&) const = default;
};

// The panels of B in this layout when the same bytes of `owner` (unchanged since) were asked
// for before; null the first time. `pack(context, out)` fills `floats` floats when they are
// built (a plain function: a lookup allocates nothing). The panels stay valid while the caller
// holds the pointer, whatever happens to the cache.
std::shared_ptr<const PackedB> packed_b(const std::shared_ptr<Storage>& owner, const PackedBLayout& layout,
                                        std::int64_t floats, void (*pack)(const void* context, float* out),
                                        const void* context);

// Bytes of panels held now (bounded by EF_PACKED_WEIGHTS_MB, default 256; 0 turns the cache
// off), panels built so far, the bound changed at run time (tests), and a way to drop them all.
std::size_t packed_b_bytes();
std::size_t packed_b_builds();
void set_packed_b_byte_limit(std::size_t bytes);
void release_packed_b();

}  // namespace ef::cpu
