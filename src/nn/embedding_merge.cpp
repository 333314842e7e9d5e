#include "eagerflow/nn/embedding_merge.h"

#include "eagerflow/nn/recurrent.h"  // set_mask

#include "eagerflow/ops/ops.h"

namespace ef::nn {

Embedding::Embedding(std::int64_t input_dim, std::int64_t output_dim, std::string name)
    : Layer(std::move(name)), input_dim_(input_dim), output_dim_(output_dim) {
  if (input_dim <= 0 || output_dim <= 0) fail("embedding", "input_dim and output_dim must be positive");
}

void Embedding::build(const Shape&) {
  embeddings_ = add_weight("embeddings", Shape{input_dim_, output_dim_}, embeddings_initializer);
}

Tensor Embedding::call(const Tensor& ids) {
  if (!is_integer(ids.dtype()))
    fail(kWrongType, name(), "expects integer ids, got " + ids.spec().str() + " (cast them with ef::cast)");
  // Keras casts other integer ids (uint8, int16 ..) to int32 first.
  Tensor out = gather(embeddings_, is_index_dtype(ids.dtype()) ? ids : cast(ids, DType::int32), 0);  // an id out of [0, input_dim) is an ef::Error naming it
  if (mask_zero) set_mask(out, not_equal(ids, zeros_like(ids)));
  return out;
}

void Add::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < 2) fail(name(), "needs at least 2 inputs, got " + std::to_string(shapes.size()));
}

Tensor Add::call(const std::vector<Tensor>& inputs, bool) {
  if (inputs.size() < 2) fail(name(), "needs at least 2 inputs, got " + std::to_string(inputs.size()));
  Tensor s = inputs[0];
  for (std::size_t i = 1; i < inputs.size(); ++i) s = s + inputs[i];
  return s;
}

void Concatenate::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < 2) fail(name(), "needs at least 2 inputs, got " + std::to_string(shapes.size()));
}

Tensor Concatenate::call(const std::vector<Tensor>& inputs, bool) {
  if (inputs.size() < 2) fail(name(), "needs at least 2 inputs, got " + std::to_string(inputs.size()));
  return concat(inputs, axis_);
}

}  // namespace ef::nn
