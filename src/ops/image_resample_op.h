#pragma once
// (x float32, index int64 [taps, out], weight float32 [taps, out]) -> x resampled along `axis`:
// out[..., o, ...] = sum over t of weight[t, o] * x[..., index[t, o], ...]. One pass of
// ef::image::resize (src/ops/image_resample_op.cpp).
#include "eagerflow/ops/primitive.h"

namespace ef {

class ImageResample : public MergeablePrimitive<ImageResample> {
 public:
  explicit ImageResample(int axis) : axis_(axis) {}
  const char* name() const override { return "image_resample"; }
  OpParams parameters() const override;
  int axis() const { return axis_; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  int axis_;
};

}  // namespace ef
