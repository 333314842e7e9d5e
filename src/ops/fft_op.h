#pragma once
// tf.signal's FFTs as one op (src/ops/fft_op.cpp): complex to complex (forward or inverse),
// real to complex (rfft) and complex to real (irfft), over the innermost 1 to 3 axes. Kernels in
// double precision (src/kernels/cpu/fft.h) whatever the dtype; gradients are FFTs too.
#include <cstdint>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef {

enum class FftKind : std::uint8_t { c2c, r2c, c2r };

class Fft : public MergeablePrimitive<Fft> {
 public:
  // lengths: the transform's points per axis (rank of them) for r2c and c2r; empty for c2c.
  Fft(FftKind kind, int rank, bool inverse, std::vector<std::int64_t> lengths);
  const char* name() const override;
  bool takes_complex() const override { return true; }
  OpParams parameters() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  FftKind kind_;
  int rank_;
  bool inverse_;
  std::vector<std::int64_t> lengths_;
};

}  // namespace ef
