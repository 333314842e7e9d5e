#pragma once
// 1-D convolution and pooling, as Keras: inputs [batch, steps, channels]. They run on the 2-D
// ops (conv2d, max_pool2d, avg_pool2d on oneDNN) over [batch, 1, steps, channels], which costs
// two reshapes and nothing else.
#include <optional>

#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/nn/layer.h"

namespace ef::nn {

struct Conv1DOptions {
  std::int64_t strides = 1;
  // "valid", "same" or "causal" (the output at step t sees inputs up to t only: the input is
  // padded on the left by dilation_rate * (kernel_size - 1) zeros).
  std::string padding = "valid";
  std::int64_t dilation_rate = 1;
  ActivationFn activation;
  bool use_bias = true;
  Initializer kernel_initializer = glorot_uniform_initializer();
  Initializer bias_initializer = zeros_initializer();
};

// Conv1D(filters, kernel_size): kernel [kernel_size, in_channels, filters], bias [filters].
class Conv1D : public Layer {
 public:
  Conv1D(std::int64_t filters, std::int64_t kernel_size, Conv1DOptions options = {}, std::string name = "");
  Variable kernel() const { return kernel_; }
  Variable bias() const { return bias_; }
  const Conv1DOptions& options() const { return options_; }
  std::optional<LayerConfig> get_config() const override;
  bool casts_integer_inputs() const override { return true; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs) override;

 private:
  std::int64_t filters_, kernel_size_;
  Conv1DOptions options_;
  Variable kernel_, bias_;
};

// MaxPooling1D / AveragePooling1D(pool_size = 2, strides = pool_size, padding "valid" or "same").
class Pooling1D : public Layer {
 public:
  std::optional<LayerConfig> get_config() const override;

 protected:
  Pooling1D(bool max, std::int64_t pool_size, std::optional<std::int64_t> strides, std::string padding, std::string name);
  Tensor call(const Tensor& inputs) override;

 private:
  bool max_;
  std::int64_t pool_;
  std::optional<std::int64_t> strides_;
  std::string padding_;
};

class MaxPooling1D : public Pooling1D {
 public:
  explicit MaxPooling1D(std::int64_t pool_size = 2, std::optional<std::int64_t> strides = std::nullopt,
                        std::string padding = "valid", std::string name = "")
      : Pooling1D(true, pool_size, strides, std::move(padding), std::move(name)) {}
};

class AveragePooling1D : public Pooling1D {
 public:
  explicit AveragePooling1D(std::int64_t pool_size = 2, std::optional<std::int64_t> strides = std::nullopt,
                            std::string padding = "valid", std::string name = "")
      : Pooling1D(false, pool_size, strides, std::move(padding), std::move(name)) {}
};

// The mean or maximum over the steps ([batch, steps, channels] -> [batch, channels]; keepdims
// keeps the steps axis as 1). GlobalAveragePooling1D honours a Keras mask on its input
// (eagerflow/nn/recurrent.h: masked steps do not count), as Keras does.
class GlobalPooling1D : public Layer {
 public:
  std::optional<LayerConfig> get_config() const override;

 protected:
  GlobalPooling1D(bool max, bool keepdims, std::string name) : Layer(std::move(name)), max_(max), keepdims_(keepdims) {}
  Tensor call(const Tensor& inputs) override;

 private:
  bool max_, keepdims_;
};

class GlobalAveragePooling1D : public GlobalPooling1D {
 public:
  explicit GlobalAveragePooling1D(bool keepdims = false, std::string name = "")
      : GlobalPooling1D(false, keepdims, std::move(name)) {}
};

class GlobalMaxPooling1D : public GlobalPooling1D {
 public:
  explicit GlobalMaxPooling1D(bool keepdims = false, std::string name = "") : GlobalPooling1D(true, keepdims, std::move(name)) {}
};

// The maximum over height and width: [batch, h, w, c] -> [batch, c] ([batch, 1, 1, c] with keepdims).
class GlobalMaxPooling2D : public Layer {
 public:
  explicit GlobalMaxPooling2D(bool keepdims = false, std::string name = "") : Layer(std::move(name)), keepdims_(keepdims) {}
  std::optional<LayerConfig> get_config() const override;

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  bool keepdims_;
};

}  // namespace ef::nn
