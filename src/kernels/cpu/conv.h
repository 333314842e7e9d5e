#pragma once
// 2-D convolution and pooling on oneDNN, NHWC activations and HWIO kernels (Keras' layouts),
// float32. Forward and both backward passes are oneDNN primitives, cached per thread and
// geometry (a bounded cache, dropped with the others by allocator::release_cached).
#include <array>
#include <cstdint>

namespace ef::cpu {

struct ConvGeometry {
  std::int64_t n, h, w, c;        // input
  std::int64_t kh, kw, f;         // kernel (HWIO: kh, kw, c, f)
  std::int64_t oh, ow;            // output
  std::int64_t sh, sw, dh, dw;    // strides, dilations (1 = none)
  std::int64_t pt, pl, pb, pr;    // padding top/left/bottom/right
};

void conv2d_forward(const ConvGeometry& g, const float* x, const float* w, float* y);
void conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx);
void conv2d_backward_weights(const ConvGeometry& g, const float* x, const float* dy, float* dw);

enum class PoolKind { max, average };
struct PoolGeometry {
  std::int64_t n, h, w, c;
  std::int64_t kh, kw, oh, ow, sh, sw;
  std::int64_t pt, pl, pb, pr;
  PoolKind kind;
};

void pool2d_forward(const PoolGeometry& g, const float* x, float* y);
// dx from dy; max pooling re-runs the forward pass for oneDNN's workspace (where the maxima were).
void pool2d_backward(const PoolGeometry& g, const float* x, const float* dy, float* dx);

void release_conv_caches();

}  // namespace ef::cpu
