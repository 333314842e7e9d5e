#include "eagerflow/nn/conv_transpose.h"

#include <cmath>
#include <limits>

#include "core/checked.h"
#include "eagerflow/ops/primitive.h"
#include "ops/primitives.h"

namespace ef::nn {

Conv2DTranspose::Conv2DTranspose(std::int64_t filters, Stride2 kernel_size, Conv2DTransposeOptions options, std::string name)
    : Layer(std::move(name)), filters_(filters), kernel_size_(kernel_size), options_(std::move(options)) {
  if (filters <= 0) fail("conv2d_transpose", "filters must be positive, got " + std::to_string(filters));
  if (kernel_size.h <= 0 || kernel_size.w <= 0)
    fail("conv2d_transpose", "kernel_size must be positive, got (" + std::to_string(kernel_size.h) + ", " +
                                 std::to_string(kernel_size.w) + ")");
  if (options_.strides.h <= 0 || options_.strides.w <= 0)
    fail("conv2d_transpose", "strides must be positive, got (" + std::to_string(options_.strides.h) + ", " +
                                 std::to_string(options_.strides.w) + ")");
  if (options_.padding != "valid" && options_.padding != "same")
    fail("conv2d_transpose", "padding must be \"valid\" or \"same\", got \"" + options_.padding + "\"");
  if (options_.activity_regularizer) set_activity_regularizer(options_.activity_regularizer);
}

std::int64_t Conv2DTranspose::output_length(std::int64_t in, std::int64_t kernel, std::int64_t stride, bool same) {
  // Checked: strides and inputs are user sizes, and a wrapped product would be a small size.
  std::optional<std::int64_t> n = checked_mul(in, stride);
  std::int64_t extra = same ? 0 : std::max<std::int64_t>(kernel - stride, 0);
  if (!n || *n > std::numeric_limits<std::int64_t>::max() - extra)
    fail("conv2d_transpose", "the output length of an input of " + std::to_string(in) + " with stride " + std::to_string(stride) +
                                 " and kernel " + std::to_string(kernel) + " does not fit int64");
  return *n + extra;
}

void Conv2DTranspose::build(const Shape& s) {
  if (s.rank() != 4)
    fail(name(), "expects inputs of rank 4 [batch, height, width, channels], got shape " + s.str());
  std::int64_t channels = s[3];
  if (channels == kDynamic) fail(name(), "the channel dim of the input must be known to build, got " + s.str());
  kernel_ = add_weight("kernel", Shape{kernel_size_.h, kernel_size_.w, filters_, channels}, options_.kernel_initializer);
  if (options_.use_bias) bias_ = add_weight("bias", Shape{filters_}, options_.bias_initializer);
  if (options_.kernel_regularizer) set_weight_regularizer(kernel_, options_.kernel_regularizer);
  if (options_.kernel_constraint) set_weight_constraint(kernel_, options_.kernel_constraint);
  if (options_.use_bias && options_.bias_regularizer) set_weight_regularizer(bias_, options_.bias_regularizer);
  if (options_.use_bias && options_.bias_constraint) set_weight_constraint(bias_, options_.bias_constraint);
}

Tensor Conv2DTranspose::call(const Tensor& inputs) {
  // bfloat16: a mixed precision policy's compute dtype (the op computes in float32 for it).
  if (inputs.rank() != 4 || (inputs.dtype() != DType::float32 && !is_storage_float(inputs.dtype())))
    fail(name(), "expects float32 (or bfloat16/float16) inputs of rank 4 [batch, height, width, channels], got " +
                     inputs.spec().str());
  std::int64_t channels = kernel_.shape()[3];
  if (inputs.shape()[3] != channels)
    fail(name(), "input " + inputs.spec().str() + " has " + std::to_string(inputs.shape()[3]) +
                     " channels; the layer was built for " + std::to_string(channels) + " (kernel " + kernel_.shape().str() + ")");
  std::int64_t h = inputs.shape()[1], w = inputs.shape()[2];
  if (h == kDynamic || w == kDynamic) fail(name(), "needs a known height and width, got " + inputs.spec().str());
  if (h == 0 || w == 0) fail(name(), "needs a nonempty image, got " + inputs.spec().str());
  bool same = options_.padding == "same";
  std::int64_t oh = output_length(h, kernel_size_.h, options_.strides.h, same);
  std::int64_t ow = output_length(w, kernel_size_.w, options_.strides.w, same);
  // The transposed convolution is the input gradient of the convolution of an [n, oh, ow,
  // filters] image (whose forward output is [n, h, w, channels]); the op reads only the shape
  // of its third input, made here with the (possibly dynamic) batch of the inputs.
  constexpr std::int64_t kEnd = std::numeric_limits<std::int64_t>::max();
  Tensor one = sum(zeros_like(slice(inputs, {0, 0, 0, 0}, {kEnd, 1, 1, 1})), {1, 2, 3}, /*keepdims=*/true);
  Tensor like = broadcast_to(one, Shape{kDynamic, oh, ow, filters_});
  Conv2DParams p{options_.strides.h, options_.strides.w, 1, 1, same};
  Tensor y = dispatch1(Conv2DBackpropInput(p), {inputs, kernel_, like});
  if (options_.use_bias) y = y + Tensor(bias_);
  return options_.activation(y);
}

}  // namespace ef::nn
