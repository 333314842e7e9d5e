#pragma once
// Keras' image reshaping layers, NHWC (channels_last): UpSampling2D and ZeroPadding2D.
#include <string>

#include "eagerflow/nn/layer.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {

// Repeats rows size.h times and columns size.w times: [n, h, w, c] -> [n, h*sh, w*sw, c].
// interpolation "nearest" (Keras' default) or "bilinear" (half-pixel centers, as Keras'
// image.resize). Height and width must be known.
class UpSampling2D : public Layer {
 public:
  explicit UpSampling2D(Stride2 size = {2, 2}, std::string interpolation = "nearest", std::string name = "");
  Stride2 size() const { return size_; }
  const std::string& interpolation() const { return interpolation_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  Stride2 size_;
  std::string interpolation_;
};

// Zeros around the image: [n, h, w, c] -> [n, top + h + bottom, left + w + right, c].
struct Padding2D {
  std::int64_t top = 1, bottom = 1, left = 1, right = 1;
};
class ZeroPadding2D : public Layer {
 public:
  // Keras' padding: an int (all four sides), a pair (symmetric height, symmetric width), or
  // ((top, bottom), (left, right)). Negative padding is an error.
  explicit ZeroPadding2D(std::int64_t padding = 1, std::string name = "");
  ZeroPadding2D(std::int64_t height, std::int64_t width, std::string name = "");
  explicit ZeroPadding2D(Padding2D padding, std::string name = "");
  const Padding2D& padding() const { return padding_; }
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  Padding2D padding_;
};

}  // namespace ef::nn
