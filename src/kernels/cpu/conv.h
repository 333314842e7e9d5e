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
  // bfloat16 tensors (x, w, y, bias and their gradients) on oneDNN's bfloat16 primitives; only
  // where native_bfloat16() (kernels/cpu/gemm.h). The pointers are then to 16-bit values.
  bool bf16 = false;
  // conv2d_forward applies relu to its output inside the convolution (oneDNN's post-op), for
  // bfloat16, where the fused op rounds once anyway: no second pass over the output.
  bool relu = false;
};

// bias [f] (or null) is added inside the convolution; dbias (or null) is dy summed over
// batch, height and width, computed with dw.
// float32 data, or bfloat16 when g.bf16.
void conv2d_forward(const ConvGeometry& g, const void* x, const void* w, const void* bias, void* y);
void conv2d_backward_data(const ConvGeometry& g, const void* dy, const void* w, void* dx);
void conv2d_backward_weights(const ConvGeometry& g, const void* x, const void* dy, void* dw, void* dbias);

enum class PoolKind { max, average };
struct PoolGeometry {
  std::int64_t n, h, w, c;
  std::int64_t kh, kw, oh, ow, sh, sw;
  std::int64_t pt, pl, pb, pr;
  PoolKind kind;
  bool bf16 = false;  // pool2d_forward on bfloat16 x and y (only where native_bfloat16())
};

void pool2d_forward(const PoolGeometry& g, const void* x, void* y);
// Max pooling of bfloat16 (16-bit values) on any CPU: the bits of each window's first maximum
// (src/kernels/cpu/max_pool_bf16.cpp).
void max_pool2d_forward_bf16(const PoolGeometry& g, const std::uint16_t* x, std::uint16_t* y);
// dx from dy. Max pooling finds each window's maxima again in the same pass that routes dy
// to them (src/kernels/cpu/max_pool_grad.cpp), with no forward pass for a workspace.
void pool2d_backward(const PoolGeometry& g, const float* x, const float* dy, float* dx);
// relu_mask: route dy only to maxima > 0 (the gradient through a relu before the pooling).
void max_pool2d_backward(const PoolGeometry& g, const float* x, const float* dy, float* dx, bool relu_mask = false);
// The same on bfloat16 (16-bit values) for windows that do not overlap: each dx element is dy's
// value or 0, routed without arithmetic (the float32 kernel's bits, rounded). Returns false,
// doing nothing, for overlapping windows (their gradients add up).
bool max_pool2d_backward_bf16(const PoolGeometry& g, const std::uint16_t* x, const std::uint16_t* dy, std::uint16_t* dx,
                              bool relu_mask = false);

void release_conv_caches();

}  // namespace ef::cpu
