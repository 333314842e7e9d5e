#pragma once
// Attention: the fused scaled-dot-product-attention op, Keras' MultiHeadAttention layer on it,
// and a learned token-and-position embedding for transformers.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "eagerflow/nn/layer.h"

namespace ef::nn {

struct AttentionOptions {
  // Bool, broadcastable to [batch, heads, q_len, k_len]; true = attend (Keras' convention).
  // Undefined: every key is visible. A row that sees no key outputs zeros (as Keras 3).
  Tensor mask;
  // Query i sees keys j <= i (top-left aligned: Keras' use_causal_mask, torch's is_causal).
  bool causal = false;
  // Multiplies q k^T; default 1 / sqrt(head_dim).
  std::optional<double> scale;
  // Dropout on the probabilities, applied whenever > 0 (pass 0 outside training). Each call
  // draws a fresh mask (also on traced replay); the gradient reuses the forward's mask.
  double dropout = 0.0;
  std::optional<std::uint64_t> seed;
  // Draws the masks from this generator's sequence instead (a layer's own seed); its seed wins.
  std::optional<random::SeedGenerator> seed_generator;
  // q, k, v and the result laid out [batch, seq, heads, head_dim] (Keras' and JAX's layout:
  // a Dense projection reshaped, no transposes) instead of [batch, heads, seq, head_dim]. The
  // mask is broadcast to [batch, heads, q_len, k_len] either way.
  bool bshd = false;
};

// softmax(scale q k^T, masked) v for q [batch, heads, q_len, head_dim], k [batch, heads, k_len,
// head_dim], v [batch, heads, k_len, value_dim] (float32 or float64) -> [batch, heads, q_len,
// value_dim]. One fused op with its own gradient op: keys are processed in blocks with an online
// softmax (FlashAttention), only the output and each row's logsumexp are kept for the backward
// pass, which recomputes the scores block by block: memory grows linearly with the sequence
// length. Gradients of gradients are not available (an ef::Error says so).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& options = {});

// The attention probabilities softmax(scale q k^T, masked) [batch, heads, q_len, k_len] (in
// either layout of q and k),
// composed from matmul and softmax (quadratic memory; what return_attention_scores returns).
// Masked positions are 0. options.dropout is ignored.
Tensor attention_probabilities(const Tensor& q, const Tensor& k, const AttentionOptions& options = {});

struct MultiHeadAttentionOptions {
  std::optional<std::int64_t> value_dim;     // per head; default key_dim
  double dropout = 0.0;                      // on the attention probabilities, while training
  bool use_bias = true;
  std::optional<std::int64_t> output_shape;  // the output's last dim; default the query's
  // By Keras name: glorot_uniform, zeros, ones, random_uniform, random_normal.
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::optional<std::uint64_t> seed;         // for dropout
};

// Keras 3's MultiHeadAttention for inputs [batch, seq, features]. Weights as Keras lays them
// out (EinsumDense kernels), so weights copied from Keras give Keras' outputs:
//   query/kernel [query_dim, num_heads, key_dim], query/bias [num_heads, key_dim]
//   key/kernel   [key_dim_in, num_heads, key_dim], key/bias  [num_heads, key_dim]
//   value/kernel [value_dim_in, num_heads, value_dim], value/bias [num_heads, value_dim]
//   attention_output/kernel [num_heads, value_dim, output_dim], attention_output/bias [output_dim]
// Attention runs on the fused op (linear memory); with return_attention_scores the
// probabilities are computed explicitly (as Keras does) and returned [batch, heads, T, S].
// Keras masks on the inputs (ef::nn::mask_of, e.g. from Embedding with mask_zero) are honoured
// as Keras does: padded queries attend nowhere (output: the bias), padded keys are never
// attended; the output carries the query's mask.
// The call arguments of MultiHeadAttention beside query and value.
struct MultiHeadAttentionCall {
  Tensor key;             // default: value
  Tensor attention_mask;  // bool [batch, T, S] (or broadcastable to [batch, heads, T, S]); true = attend
  bool use_causal_mask = false;
  std::optional<bool> training;
};

class MultiHeadAttention : public Layer {
 public:
  using Call = MultiHeadAttentionCall;
  MultiHeadAttention(std::int64_t num_heads, std::int64_t key_dim, MultiHeadAttentionOptions options = {},
                     std::string name = "");

  // Keras' call(query, value, key=None, attention_mask=None, training=None, use_causal_mask=False).
  Tensor operator()(const Tensor& query, const Tensor& value, const Call& call = {});
  // return_attention_scores=True: (output, scores [batch, heads, T, S]).
  std::pair<Tensor, Tensor> call_with_scores(const Tensor& query, const Tensor& value, const Call& call = {});
  // The list form, layer({query, value}) or layer({query, value, key}), with the call options
  // of the latest call through the methods above (a functional model replays with them).
  using Layer::operator();

  std::int64_t num_heads() const { return num_heads_; }
  std::int64_t key_dim() const { return key_dim_; }
  std::int64_t value_dim() const { return value_dim_; }
  const MultiHeadAttentionOptions& options() const { return options_; }
  Variable query_kernel() const { return wq_; }
  Variable query_bias() const { return bq_; }
  Variable key_kernel() const { return wk_; }
  Variable key_bias() const { return bk_; }
  Variable value_kernel() const { return wv_; }
  Variable value_bias() const { return bv_; }
  Variable output_kernel() const { return wo_; }
  Variable output_bias() const { return bo_; }

  std::optional<LayerConfig> get_config() const override;
  const random::SeedGenerator* seed_generator() const override { return generator_ ? &*generator_ : nullptr; }
  static std::shared_ptr<MultiHeadAttention> from_config(const LayerConfig& config);

 protected:
  void build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<Tensor> call_multi(const std::vector<Tensor>& inputs, bool training) override;

 private:
  std::vector<Tensor> attend(const std::vector<Tensor>& inputs, bool training);
  std::vector<Tensor> invoke_with(const Tensor& query, const Tensor& value, const Call& call, bool scores);
  std::int64_t num_heads_, key_dim_, value_dim_;
  MultiHeadAttentionOptions options_;
  // How the list inputs of the latest call are laid out: {query, value[, key][, mask]}.
  bool has_key_ = false, has_mask_ = false, causal_ = false, return_scores_ = false;
  Variable wq_, bq_, wk_, bk_, wv_, bv_, wo_, bo_;
  std::optional<random::SeedGenerator> generator_;  // with options.seed: this layer's masks
};

// Token embedding plus a learned position embedding (keras_hub's TokenAndPositionEmbedding):
// ids [batch, seq] (seq <= sequence_length) -> token_embeddings[ids] + position_embeddings[:seq],
// [batch, seq, embedding_dim]. Weights token_embedding/embeddings [vocabulary_size, dim]
// (uniform(-0.05, 0.05), as Keras' Embedding) and position_embedding/embeddings
// [sequence_length, dim] (glorot_uniform, as keras_hub's PositionEmbedding).
class PositionalEmbedding : public Layer {
 public:
  PositionalEmbedding(std::int64_t vocabulary_size, std::int64_t sequence_length, std::int64_t embedding_dim,
                      std::string name = "");
  Variable token_embeddings() const { return tokens_; }
  Variable position_embeddings() const { return positions_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& ids) override;

 private:
  std::int64_t vocabulary_size_, sequence_length_, embedding_dim_;
  Variable tokens_, positions_;
};

}  // namespace ef::nn
