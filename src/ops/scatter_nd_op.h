#pragma once
// gather_nd and the tensor_scatter_nd family as two ops (src/ops/scatter_nd_op.cpp), public as
// ef::gather_nd, ef::scatter_nd and ef::tensor_scatter_nd_* (eagerflow/ops/ops.h).
#include "eagerflow/ops/primitive.h"

namespace ef {

// (params, indices [..., k] int32/int64) -> params' slices at the index rows: shape
// indices.shape[:-1] + params.shape[k:]. An index out of range is an INVALID_ARGUMENT error.
class GatherNd : public MergeablePrimitive<GatherNd> {
 public:
  const char* name() const override { return "gather_nd"; }
  bool takes_bfloat16() const override { return true; }  // it copies bytes
  bool takes_strings() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

// How tensor_scatter_nd combines an update with what is there; repeated indices apply in order
// (update: the last one stays, as TF's CPU kernel).
enum class ScatterMode : unsigned char { update, add, sub, min, max };

// (tensor, indices [..., k], updates [indices.shape[:-1] + tensor.shape[k:]]) -> a copy of
// tensor with the updates combined in at the index rows.
class TensorScatterNd : public MergeablePrimitive<TensorScatterNd> {
 public:
  explicit TensorScatterNd(ScatterMode mode) : mode_(mode) {}
  bool is_index_input(std::size_t i) const override { return i == 1; }
  const char* name() const override;
  OpParams parameters() const override;
  ScatterMode mode() const { return mode_; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  ScatterMode mode_;
};

}  // namespace ef
