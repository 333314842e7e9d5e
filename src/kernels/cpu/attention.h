#pragma once
// Fused scaled-dot-product attention (FlashAttention's scheme on the CPU): keys are visited in
// blocks with an online softmax (a running maximum and sum per query row), so no [q, k] score
// matrix is ever stored; the forward pass keeps only the output and each row's logsumexp, and
// the backward pass recomputes the scores block by block from them. Memory grows linearly
// with the sequence length. float32 block products run on oneDNN (single-threaded primitives
// inside our own parallel loop over heads and query blocks); float64 (gradient checks) on loops.
#include <cstdint>

namespace ef::cpu {

struct AttentionDims {
  std::int64_t batch, heads, q_len, k_len, head_dim, value_dim;
  // q, k, v, out (and their gradients) laid out [batch, seq, heads, dim] (Keras' and JAX's
  // layout) instead of [batch, heads, seq, dim]; lse is [batch, heads, q_len] either way.
  bool bshd = false;
  // Where row i of head bh of a tensor with `len` rows of `dim` starts, and the row stride.
  std::int64_t head_offset(std::int64_t bh, std::int64_t len, std::int64_t dim) const {
    return bshd ? ((bh / heads) * len * heads + bh % heads) * dim : bh * len * dim;
  }
  std::int64_t row_stride(std::int64_t dim) const { return bshd ? heads * dim : dim; }
};

// A bool mask broadcast to [batch, heads, q_len, k_len] by strides (0 along a broadcast axis);
// true = attend. `data` null: no mask.
struct AttentionMask {
  const bool* data = nullptr;
  std::int64_t stride[4] = {0, 0, 0, 0};
};

struct AttentionConfig {
  double scale = 1.0;
  // Query i sees keys j <= i (top-left aligned, as Keras' use_causal_mask and torch's is_causal).
  bool causal = false;
  // Dropout on the probabilities: each (batch, head, i, j) kept with probability 1 - rate by a
  // counter hash of `seed`, so the backward pass redraws the same mask.
  double dropout = 0.0;
  std::uint64_t seed = 0;
};

// q [B,H,Sq,D], k [B,H,Sk,D], v [B,H,Sk,Dv] contiguous (or [B,S,H,D] with bshd); out
// [B,H,Sq,Dv] (or [B,Sq,H,Dv]), lse [B,H,Sq].
// Hidden keys (mask false, or after the query when causal) get probability 0; a row that sees no
// key outputs zeros and has lse -inf (Keras 3's masked softmax zeroes masked positions).
template <class T>
void attention_forward(const T* q, const T* k, const T* v, const AttentionMask& mask, const AttentionConfig& cfg,
                       const AttentionDims& d, T* out, T* lse);

// Gradients from dout (and dlse, may be null) given the forward's out and lse.
template <class T>
void attention_backward(const T* q, const T* k, const T* v, const T* out, const T* lse, const T* dout, const T* dlse,
                        const AttentionMask& mask, const AttentionConfig& cfg, const AttentionDims& d, T* dq, T* dk,
                        T* dv);

}  // namespace ef::cpu
