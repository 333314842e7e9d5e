#include "eagerflow/nn/attention.h"

#include <cmath>
#include <map>

#include "eagerflow/ops/ops.h"
#include "eagerflow/nn/recurrent.h"  // Keras masks: mask_of / set_mask
#include "eagerflow/ops/random.h"
#include "ops/attention_op.h"

namespace ef::nn {
namespace {

constexpr const char* kSdpa = "scaled_dot_product_attention";

double default_scale(const Tensor& q) {
  std::int64_t d = q.rank() == 4 ? q.shape()[3] : kDynamic;
  if (d == kDynamic) fail(kSdpa, "head_dim of q " + q.spec().str() + " must be known for the default scale");
  return d > 0 ? 1.0 / std::sqrt(static_cast<double>(d)) : 1.0;
}

// The causal mask [q_len, k_len] (j <= i) as a constant, for the explicit path.
Tensor causal_mask(std::int64_t q_len, std::int64_t k_len) {
  if (q_len == kDynamic || k_len == kDynamic)
    fail(kSdpa, "a causal mask with explicit probabilities needs static sequence lengths, got " +
                    std::to_string(q_len) + " x " + std::to_string(k_len));
  return greater_equal(reshape(arange(q_len), {q_len, 1}), reshape(arange(k_len), {1, k_len}));
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o) {
  AttentionParams p;
  if (q.rank() != 4) fail(kSdpa, "expects q of rank 4 [batch, heads, seq, head_dim], got " + q.spec().str());
  p.scale = o.scale ? *o.scale : default_scale(q);
  p.causal = o.causal;
  p.has_mask = o.mask.defined();
  p.dropout = o.dropout;
  p.bshd = o.bshd;
  if (!(o.dropout >= 0 && o.dropout < 1)) fail(kSdpa, "dropout must be in [0, 1), got " + std::to_string(o.dropout));
  std::vector<Tensor> in{q, k, v};
  if (p.has_mask) in.push_back(o.mask);
  // A fresh seed per call (a stateful draw, so also per traced replay); the op itself is pure.
  if (p.dropout > 0)
    in.push_back(o.seed_generator ? random::uniform(Shape{}, 0.0, 9007199254740992.0, DType::float64, *o.seed_generator)
                                  : random::uniform(Shape{}, 0.0, 9007199254740992.0, DType::float64, o.seed));
  return dispatch(ScaledDotProductAttention(p), in)[0];
}


Tensor attention_probabilities(const Tensor& q, const Tensor& k, const AttentionOptions& o) {
  if (q.rank() != 4 || k.rank() != 4)
    fail("attention_probabilities", "expects q and k of rank 4 [batch, heads, seq, head_dim], got " + q.spec().str() +
                                        ", " + k.spec().str());
  double scale = o.scale ? *o.scale : default_scale(q);
  if (o.bshd) {
    AttentionOptions heads_second_options = o;
    heads_second_options.bshd = false;
    heads_second_options.scale = scale;
    return attention_probabilities(transpose(q, {0, 2, 1, 3}), transpose(k, {0, 2, 1, 3}), heads_second_options);
  }
  // Keras: the query is scaled before the product.
  Tensor scores = matmul(q * scale, k, false, true);
  Tensor mask = o.mask;
  if (mask.defined() && mask.dtype() != DType::bool_)
    fail(kWrongType, "attention_probabilities", "the mask must be bool (true = attend), got " + mask.spec().str());
  if (o.causal) {
    Tensor c = causal_mask(q.shape()[2], k.shape()[2]);
    mask = mask.defined() ? logical_and(mask, c) : c;
  }
  if (!mask.defined()) return softmax(scores, -1);
  // Keras 3's masked softmax: masked scores replaced by -1e9, masked probabilities zeroed.
  Tensor p = softmax(where(mask, scores, scalar_like(scores, -1e9)), -1);
  return where(mask, p, zeros_like(p));
}

// ---------------------------------------------------------------- MultiHeadAttention
namespace {

Initializer initializer_named(const std::string& name, const std::string& who) {
  if (name == "glorot_uniform") return glorot_uniform_initializer();
  if (name == "zeros") return zeros_initializer();
  if (name == "ones") return ones_initializer();
  if (name == "random_uniform") return random_uniform_initializer();
  if (name == "random_normal") return random_normal_initializer();
  fail(who, "unknown initializer '" + name + "' (glorot_uniform, zeros, ones, random_uniform, random_normal)");
}

// x [batch, seq, heads * dim] -> [batch, seq, heads, dim] (a view: the fused op reads this layout).
Tensor unmerge_heads(const Tensor& x, std::int64_t heads, std::int64_t dim, const std::string& who) {
  std::int64_t b = x.shape()[0], t = x.shape()[1];
  if (b == kDynamic && t == kDynamic)
    fail(who, "needs a static batch or sequence length to split heads, got " + x.spec().str());
  return reshape(x, {b == kDynamic ? -1 : b, t == kDynamic ? -1 : t, heads, dim});
}

// x [batch, seq, heads, dim] -> [batch, seq, heads * dim].
Tensor merge_heads(const Tensor& x, const std::string& who) {
  std::int64_t b = x.shape()[0], s = x.shape()[1];
  if (b == kDynamic && s == kDynamic)
    fail(who, "needs a static batch or sequence length to merge heads, got " + x.spec().str());
  return reshape(x, {b == kDynamic ? -1 : b, s == kDynamic ? -1 : s, x.shape()[2] * x.shape()[3]});
}

Tensor heads_second(const Tensor& x) { return transpose(x, {0, 2, 1, 3}); }  // [b, s, h, d] <-> [b, h, s, d]

// EinsumDense "abc,cde->abde": x [batch, seq, in] times kernel [in, heads, dim] (+ bias [heads, dim]).
Tensor project(const Tensor& x, const Variable& kernel, const Variable* bias) {
  const Shape& ks = kernel.shape();
  Tensor y = matmul(x, reshape(Tensor(kernel), {ks[0], ks[1] * ks[2]}));
  if (bias) y = y + reshape(Tensor(*bias), {ks[1] * ks[2]});
  return y;
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t num_heads, std::int64_t key_dim, MultiHeadAttentionOptions o,
                                       std::string name)
    : Layer(std::move(name)), num_heads_(num_heads), key_dim_(key_dim), value_dim_(o.value_dim.value_or(key_dim)),
      options_(std::move(o)) {
  const char* who = "multi_head_attention";
  if (num_heads <= 0 || key_dim <= 0 || value_dim_ <= 0)
    fail(who, "num_heads, key_dim and value_dim must be positive, got " + std::to_string(num_heads) + ", " +
                  std::to_string(key_dim) + ", " + std::to_string(value_dim_));
  if (!(options_.dropout >= 0 && options_.dropout < 1))
    fail(who, "dropout must be in [0, 1), got " + std::to_string(options_.dropout));
  if (options_.output_shape && *options_.output_shape <= 0)
    fail(who, "output_shape must be positive, got " + std::to_string(*options_.output_shape));
  initializer_named(options_.kernel_initializer, who);
  initializer_named(options_.bias_initializer, who);
  if (options_.seed) generator_.emplace(*options_.seed);
}

void MultiHeadAttention::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < 2 || shapes.size() > 4)
    fail(name(), "expects (query, value[, key][, mask]) inputs, got " + std::to_string(shapes.size()));
  bool with_mask = has_mask_ && shapes.size() >= 3, with_key = shapes.size() - (with_mask ? 1 : 0) == 3;
  const Shape& qs = shapes[0];
  const Shape& vs = shapes[1];
  const Shape& ks = with_key ? shapes[2] : vs;
  for (const Shape* s : {&qs, &vs, &ks})
    if (s->rank() != 3 || (*s)[2] == kDynamic)
      fail(name(), "expects query, value and key of rank 3 [batch, seq, features] with known features, got " +
                       qs.str() + ", " + vs.str() + ", " + ks.str());
  Initializer ki = initializer_named(options_.kernel_initializer, name());
  Initializer bi = initializer_named(options_.bias_initializer, name());
  bool b = options_.use_bias;
  std::int64_t out_dim = options_.output_shape.value_or(qs[2]);
  wq_ = add_weight("query/kernel", Shape{qs[2], num_heads_, key_dim_}, ki);
  if (b) bq_ = add_weight("query/bias", Shape{num_heads_, key_dim_}, bi);
  wk_ = add_weight("key/kernel", Shape{ks[2], num_heads_, key_dim_}, ki);
  if (b) bk_ = add_weight("key/bias", Shape{num_heads_, key_dim_}, bi);
  wv_ = add_weight("value/kernel", Shape{vs[2], num_heads_, value_dim_}, ki);
  if (b) bv_ = add_weight("value/bias", Shape{num_heads_, value_dim_}, bi);
  wo_ = add_weight("attention_output/kernel", Shape{num_heads_, value_dim_, out_dim}, ki);
  if (b) bo_ = add_weight("attention_output/bias", Shape{out_dim}, bi);
}

std::vector<Tensor> MultiHeadAttention::attend(const std::vector<Tensor>& in, bool training) {
  // {query, value[, key][, mask]}: the mask only when the latest call gave one.
  bool with_mask = has_mask_ && in.size() >= 3;
  std::size_t rest = in.size() - (with_mask ? 1 : 0);
  if (in.size() < 2 || rest > 3)
    fail(name(), "expects inputs (query, value[, key]" + std::string(with_mask ? ", attention_mask" : "") + "), got " +
                     std::to_string(in.size()));
  const Tensor& query = in[0];
  const Tensor& value = in[1];
  const Tensor& key = rest == 3 ? in[2] : value;
  Tensor mask = with_mask ? in.back() : Tensor();
  for (const Tensor* t : {&query, &value, &key})
    if (t->rank() != 3)
      fail(name(), "expects query, value and key of rank 3 [batch, seq, features], got query " + query.spec().str() +
                       ", value " + value.spec().str() + ", key " + key.spec().str());
  auto expect_features = [&](const Tensor& x, const Variable& w, const char* what) {
    if (x.shape()[2] != w.shape()[0])
      fail(name(), std::string(what) + " " + x.spec().str() + " has " + std::to_string(x.shape()[2]) +
                       " features; the layer was built for " + std::to_string(w.shape()[0]));
  };
  expect_features(query, wq_, "query");
  expect_features(key, wk_, "key");
  expect_features(value, wv_, "value");
  if (key.shape()[1] != value.shape()[1] && key.shape()[1] != kDynamic && value.shape()[1] != kDynamic)
    fail(name(), "key " + key.spec().str() + " and value " + value.spec().str() + " must have the same length");
  bool b = options_.use_bias;
  // [batch, seq, heads, dim]: the fused op reads this layout, so no transposes are made.
  Tensor q = unmerge_heads(project(query, wq_, b ? &bq_ : nullptr), num_heads_, key_dim_, name());
  Tensor k = unmerge_heads(project(key, wk_, b ? &bk_ : nullptr), num_heads_, key_dim_, name());
  Tensor v = unmerge_heads(project(value, wv_, b ? &bv_ : nullptr), num_heads_, value_dim_, name());
  AttentionOptions o;
  o.causal = causal_;
  o.scale = 1.0 / std::sqrt(static_cast<double>(key_dim_));
  if (mask.defined() && mask.dtype() != DType::bool_) mask = not_equal(mask, scalar_like(mask, 0.0));
  // Keras masks on the inputs (Embedding(mask_zero)): a padded query row attends nowhere, a
  // padded key or value is never attended; combined with attention_mask as Keras does.
  Tensor query_mask = mask_of(query), auto_mask;
  auto both = [](const Tensor& a, const Tensor& b) { return a.defined() ? logical_and(a, b) : b; };
  if (query_mask.defined()) auto_mask = expand_dims(query_mask, -1);                 // [batch, T, 1]
  if (Tensor vm = mask_of(value); vm.defined()) auto_mask = both(auto_mask, expand_dims(vm, 1));  // [batch, 1, S]
  if (rest == 3)
    if (Tensor km = mask_of(key); km.defined()) auto_mask = both(auto_mask, expand_dims(km, 1));
  if (auto_mask.defined()) mask = mask.defined() ? logical_and(mask, auto_mask) : auto_mask;
  if (mask.defined()) {
    // Keras: a [batch, T, S] mask is the same for every head.
    if (mask.rank() == 3) mask = expand_dims(mask, 1);
    if (mask.rank() > 4)
      fail(name(), "attention_mask " + mask.spec().str() + " must be [batch, T, S] (or broadcast to [batch, heads, T, S])");
    o.mask = mask;
  }
  double rate = training ? options_.dropout : 0.0;
  Tensor attended, probs;
  if (return_scores_) {
    probs = attention_probabilities(heads_second(q), heads_second(k), o);
    Tensor used = probs;
    if (rate > 0) {
      Tensor draw = generator_ ? random::uniform_like(probs, 0.0, 1.0, *generator_) : random::uniform_like(probs, 0.0, 1.0);
      Tensor keep = greater_equal(draw, scalar_like(probs, rate));
      used = where(keep, probs * (1.0 / (1.0 - rate)), zeros_like(probs));
    }
    attended = heads_second(matmul(used, heads_second(v)));
  } else {
    o.dropout = rate;
    o.seed_generator = generator_;
    o.bshd = true;
    attended = scaled_dot_product_attention(q, k, v, o);
  }
  const Shape& ws = wo_.shape();
  Tensor out = matmul(merge_heads(attended, name()), reshape(Tensor(wo_), {ws[0] * ws[1], ws[2]}));
  if (b) out = out + Tensor(bo_);
  if (query_mask.defined()) set_mask(out, query_mask);  // Keras: the output keeps the query's mask
  if (return_scores_) return {out, probs};
  return {out};
}

Tensor MultiHeadAttention::call(const std::vector<Tensor>& inputs, bool training) {
  std::vector<Tensor> outs = attend(inputs, training);
  return outs[0];
}

std::vector<Tensor> MultiHeadAttention::call_multi(const std::vector<Tensor>& inputs, bool training) {
  return attend(inputs, training);
}

std::vector<Tensor> MultiHeadAttention::invoke_with(const Tensor& query, const Tensor& value, const Call& c,
                                                    bool scores) {
  has_key_ = c.key.defined();
  has_mask_ = c.attention_mask.defined();
  causal_ = c.use_causal_mask;
  return_scores_ = scores;
  std::vector<Tensor> in{query, value};
  if (has_key_) in.push_back(c.key);
  if (has_mask_) in.push_back(c.attention_mask);
  return call_outputs(in, c.training);
}

Tensor MultiHeadAttention::operator()(const Tensor& query, const Tensor& value, const Call& c) {
  return invoke_with(query, value, c, false)[0];
}

std::pair<Tensor, Tensor> MultiHeadAttention::call_with_scores(const Tensor& query, const Tensor& value, const Call& c) {
  std::vector<Tensor> outs = invoke_with(query, value, c, true);
  return {outs[0], outs[1]};
}

std::optional<LayerConfig> MultiHeadAttention::get_config() const {
  auto c = base_config(*this, "MultiHeadAttention");
  c.config.set("num_heads", num_heads_);
  c.config.set("key_dim", key_dim_);
  c.config.set("value_dim", value_dim_);
  c.config.set("dropout", options_.dropout);
  c.config.set("use_bias", options_.use_bias);
  c.config.set("output_shape", options_.output_shape ? ConfigValue(*options_.output_shape) : ConfigValue());
  c.config.set("kernel_initializer", options_.kernel_initializer);
  c.config.set("bias_initializer", options_.bias_initializer);
  c.config.set("seed", options_.seed ? ConfigValue(static_cast<std::int64_t>(*options_.seed)) : ConfigValue());
  // The latest call's options (Keras keeps them in the functional graph's call arguments): a
  // loaded model replays the layer with them.
  ConfigMap call;
  call.set("use_causal_mask", causal_);
  call.set("return_attention_scores", return_scores_);
  call.set("attention_mask", has_mask_);
  c.config.set("call_arguments", call);
  return c;
}

std::shared_ptr<MultiHeadAttention> MultiHeadAttention::from_config(const LayerConfig& lc) {
  const ConfigMap& c = lc.config;
  MultiHeadAttentionOptions o;
  if (c.has_value("value_dim")) o.value_dim = c.integer("value_dim");
  if (c.has("dropout")) o.dropout = c.real("dropout");
  if (c.has("use_bias")) o.use_bias = c.flag("use_bias");
  if (c.has_value("output_shape")) {
    const ConfigValue& v = c.at("output_shape");
    if (const auto* list = std::get_if<ConfigList>(&v.value)) {  // Keras may write a tuple
      if (list->size() != 1 || !std::holds_alternative<std::int64_t>((*list)[0].value))
        throw Error(c.where + ": output_shape must be one integer (the output's last dim)");
      o.output_shape = std::get<std::int64_t>((*list)[0].value);
    } else {
      o.output_shape = c.integer("output_shape");
    }
  }
  if (c.has("kernel_initializer")) o.kernel_initializer = c.text("kernel_initializer");
  if (c.has("bias_initializer")) o.bias_initializer = c.text("bias_initializer");
  if (c.has_value("seed")) o.seed = static_cast<std::uint64_t>(c.integer("seed"));
  std::int64_t heads = c.integer("num_heads"), key_dim = c.integer("key_dim");
  if (heads <= 0 || heads > (1 << 20) || key_dim <= 0 || key_dim > (1 << 20))
    throw Error(c.where + ": num_heads and key_dim must be positive (and not huge)");
  auto layer = std::make_shared<MultiHeadAttention>(heads, key_dim, o, c.text("name"));
  if (c.has_value("call_arguments")) {
    ConfigMap call = c.map("call_arguments");
    call.where = c.where + " call_arguments";
    layer->causal_ = call.flag("use_causal_mask");
    layer->return_scores_ = call.flag("return_attention_scores");
    layer->has_mask_ = call.flag("attention_mask");
  }
  return layer;
}

// ---------------------------------------------------------------- PositionalEmbedding
PositionalEmbedding::PositionalEmbedding(std::int64_t vocabulary_size, std::int64_t sequence_length,
                                         std::int64_t embedding_dim, std::string name)
    : Layer(std::move(name)), vocabulary_size_(vocabulary_size), sequence_length_(sequence_length),
      embedding_dim_(embedding_dim) {
  if (vocabulary_size <= 0 || sequence_length <= 0 || embedding_dim <= 0)
    fail("positional_embedding", "vocabulary_size, sequence_length and embedding_dim must be positive");
}

void PositionalEmbedding::build(const Shape&) {
  tokens_ = add_weight("token_embedding/embeddings", Shape{vocabulary_size_, embedding_dim_},
                       random_uniform_initializer(-0.05, 0.05));
  positions_ = add_weight("position_embedding/embeddings", Shape{sequence_length_, embedding_dim_},
                          glorot_uniform_initializer());
}

Tensor PositionalEmbedding::call(const Tensor& ids) {
  if (!is_integer(ids.dtype()) || ids.rank() < 1)
    fail(kWrongType, name(),
         "expects integer ids [batch, seq], got " + ids.spec().str() + " (cast them with ef::cast)");
  std::int64_t seq = ids.shape()[ids.rank() - 1];
  if (seq == kDynamic) fail(name(), "needs a static sequence length, got " + ids.spec().str());
  if (seq > sequence_length_)
    fail(name(), "ids " + ids.spec().str() + " are longer than sequence_length " + std::to_string(sequence_length_));
  Tensor tok = gather(tokens_, ids, 0);
  Tensor pos = slice(Tensor(positions_), {0, 0}, {seq, embedding_dim_}, {1, 1});
  return tok + pos;
}

std::optional<LayerConfig> PositionalEmbedding::get_config() const {
  auto c = base_config(*this, "PositionalEmbedding");
  c.config.set("vocabulary_size", vocabulary_size_);
  c.config.set("sequence_length", sequence_length_);
  c.config.set("embedding_dim", embedding_dim_);
  return c;
}

}  // namespace ef::nn

namespace ef::detail {

void add_attention_layer_factories(std::map<std::string, nn::LayerFactory>& f) {
  f["MultiHeadAttention"] = [](const nn::LayerConfig& lc) -> std::shared_ptr<nn::Layer> {
    return nn::MultiHeadAttention::from_config(lc);
  };
  f["PositionalEmbedding"] = f["TokenAndPositionEmbedding"] = [](const nn::LayerConfig& lc) -> std::shared_ptr<nn::Layer> {
    const nn::ConfigMap& c = lc.config;
    auto dim = [&](const char* key) {
      std::int64_t v = c.integer(key);
      if (v <= 0 || v > (std::int64_t{1} << 31)) throw Error(c.where + ": " + key + " must be a positive size");
      return v;
    };
    return std::make_shared<nn::PositionalEmbedding>(dim("vocabulary_size"), dim("sequence_length"),
                                                     dim("embedding_dim"), c.text("name"));
  };
}

}  // namespace ef::detail
