#include "eagerflow/nn/preprocessing.h"

#include <algorithm>

#include "eagerflow/nn/activation_layers.h"
#include "eagerflow/nn/activation_fn.h"
#include "eagerflow/ops/ops.h"

namespace ef::nn {
namespace {
constexpr double kEpsilon = 1e-7;  // Keras' backend.epsilon()

// Keras' compute dtype: float inputs keep theirs, others become float32.
Tensor as_float(const Tensor& x) { return is_floating(x.dtype()) ? x : cast(x, DType::float32); }

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "(";
  for (std::size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
  return s + (axes.size() == 1 ? ",)" : ")");
}
}  // namespace

// ---------------------------------------------------------------- Lambda
Lambda::Lambda(std::function<Tensor(const Tensor&)> fn, std::string name) : Layer(std::move(name)), fn_(std::move(fn)) {
  if (!fn_) fail("lambda", "needs a function");
}

Tensor Lambda::call(const Tensor& inputs) {
  Tensor out = fn_(inputs);
  if (!out.defined()) fail(name(), "the function returned an undefined tensor for input " + inputs.spec().str());
  return out;
}

// ---------------------------------------------------------------- Rescaling
Rescaling::Rescaling(double scale, double offset, std::string name) : Layer(std::move(name)), scale_(scale), offset_(offset) {}

Tensor Rescaling::call(const Tensor& inputs) {
  Tensor x = as_float(inputs);
  return x * scale_ + offset_;
}

// ---------------------------------------------------------------- LeakyReLU, ELU
LeakyReLU::LeakyReLU(double negative_slope, std::string name) : Layer(std::move(name)), slope_(negative_slope) {
  if (!(negative_slope >= 0))
    fail("leaky_re_lu", "negative_slope must be a number >= 0, got " + std::to_string(negative_slope));
}
Tensor LeakyReLU::call(const Tensor& inputs) { return leaky_relu(inputs, slope_); }

ELU::ELU(double alpha, std::string name) : Layer(std::move(name)), alpha_(alpha) {}
Tensor ELU::call(const Tensor& inputs) { return elu(inputs, alpha_); }

// ---------------------------------------------------------------- Normalization
Normalization::Normalization(std::vector<int> axis, std::optional<Tensor> mean, std::optional<Tensor> variance,
                             bool invert, std::string name)
    : Layer(std::move(name)), axis_(std::move(axis)), input_mean_(std::move(mean)), input_variance_(std::move(variance)),
      invert_(invert) {
  if (input_mean_.has_value() != input_variance_.has_value())
    fail("normalization", "when setting values directly, both mean and variance must be set (got only " +
                              std::string(input_mean_ ? "mean" : "variance") + ")");
  if (input_mean_) {
    if (!input_mean_->defined() || !input_variance_->defined()) fail("normalization", "mean and variance must be defined tensors");
    if (input_mean_->shape() != input_variance_->shape())
      fail("normalization", "mean and variance must have the same shape, got mean " + input_mean_->spec().str() +
                                " and variance " + input_variance_->spec().str());
    if (input_mean_->rank() > static_cast<int>(axis_.size()))
      fail("normalization", "the rank of mean must be at most the number of axes " + axes_str(axis_) + ", got mean " +
                                input_mean_->spec().str());
  }
}

void Normalization::build(const Shape& s) {
  if (adapt_mean_.defined() || fixed_mean_.defined()) return;  // built by adapt()
  int ndim = s.rank();
  keep_.clear();
  reduce_.clear();
  for (int a : axis_) {
    if (a < -ndim || a >= ndim)
      fail(name(), "all axis values must be in the range [-ndim, ndim): inputs " + s.str() + " have ndim " +
                       std::to_string(ndim) + ", axis " + axes_str(axis_));
    keep_.push_back(a < 0 ? a + ndim : a);
  }
  std::sort(keep_.begin(), keep_.end());
  keep_.erase(std::unique(keep_.begin(), keep_.end()), keep_.end());
  std::vector<std::int64_t> bshape, stats;
  for (int d = 0; d < ndim; ++d) {
    bool kept = std::find(keep_.begin(), keep_.end(), d) != keep_.end();
    if (kept && s[d] == kDynamic)
      fail(name(), "the kept axes must have a known size: axis " + axes_str(axis_) + ", inputs " + s.str() +
                       " (unknown at index " + std::to_string(d) + ")");
    if (!kept) reduce_.push_back(d);
    bshape.push_back(kept ? s[d] : 1);
    if (kept) stats.push_back(s[d]);
  }
  built_shape_ = s;
  broadcast_shape_ = Shape(bshape);
  stats_shape_ = Shape(stats);
  if (!input_mean_) {
    adapt_mean_ = add_weight("mean", stats_shape_, zeros_initializer(), false);
    adapt_variance_ = add_weight("variance", stats_shape_, ones_initializer(), false);
    count_ = add_weight("count", Shape{}, zeros_initializer(), false, DType::int64);
    return;
  }
  // Given values: a scalar, or the trailing kept axes (Keras' rule), broadcast to the input.
  auto place = [&](const Tensor& v) {
    Tensor t = cast(v, DType::float32);
    if (t.rank() > 0) {
      std::vector<std::int64_t> expanded(ndim, 1);
      for (int i = 1; i <= t.rank(); ++i) expanded[keep_[keep_.size() - i]] = t.shape()[t.rank() - i];
      if (Shape(expanded).num_elements() != t.shape().num_elements())
        fail(name(), "mean/variance " + v.spec().str() + " do not fit the kept axes of inputs " + s.str());
      t = reshape(t, Shape(expanded));
    }
    try {
      return broadcast_to(t, broadcast_shape_) + 0.0f;  // materialized: a constant of its own
    } catch (const Error&) {
      fail(name(), "mean/variance " + v.spec().str() + " do not fit the kept axes of inputs " + s.str() + " (axis " +
                       axes_str(axis_) + ")");
    }
  };
  fixed_mean_ = place(*input_mean_);
  fixed_variance_ = place(*input_variance_);
}

void Normalization::adapt(const Tensor& data) {
  if (!data.defined()) fail(name(), "adapt: the data is an undefined tensor");
  if (data.is_symbolic())
    fail(name(), "adapt: the data " + data.spec().str() + " is symbolic; call adapt eagerly, outside ef::function");
  if (input_mean_) fail(name(), "adapt: the layer was given mean and variance; adapt computes them instead");
  if (data.rank() == 0 || data.shape().num_elements() == 0)
    fail(name(), "adapt: the data " + data.spec().str() + " is empty; adapt needs at least one example");
  if (!adapt_mean_.defined()) build(data.shape());
  if (keep_.empty()) {  // axis=None: one mean and variance over every value, whatever the data's rank (Keras')
    Tensor x = cast(data, DType::float64);
    Tensor m = ef::mean(x);
    adapt_mean_.assign(cast(reshape(m, stats_shape_), adapt_mean_.dtype()));
    adapt_variance_.assign(cast(reshape(ef::mean(square(x - m)), stats_shape_), adapt_variance_.dtype()));
    count_.assign(full(Shape{}, static_cast<double>(data.num_elements()), DType::int64));
    return;
  }
  for (int d : keep_)
    if (d >= data.rank() || data.shape()[d] != built_shape_[d])
      fail(name(), "the layer was built with input shape " + built_shape_.str() +
                       ", but adapt() is called with data of an incompatible shape " + data.spec().str());
  if (data.rank() != built_shape_.rank())
    fail(name(), "the layer was built with input shape " + built_shape_.str() + ", but adapt() is called with data " +
                     data.spec().str());
  // In float64, as NumPy's mean and var (population variance).
  Tensor x = cast(data, DType::float64);
  Tensor m = reduce_.empty() ? x : ef::mean(x, reduce_, /*keepdims=*/true);
  Tensor var = reduce_.empty() ? zeros_like(x) : ef::mean(square(x - m), reduce_, /*keepdims=*/true);
  std::int64_t count = 1;
  for (int d : reduce_) count *= data.shape()[d];
  // Stored in the variables' dtype (float32; float64 under a float64 policy).
  adapt_mean_.assign(cast(reshape(m, stats_shape_), adapt_mean_.dtype()));
  adapt_variance_.assign(cast(reshape(var, stats_shape_), adapt_variance_.dtype()));
  count_.assign(full(Shape{}, static_cast<double>(count), DType::int64));
}

Tensor Normalization::mean() const {
  if (fixed_mean_.defined()) return reshape(fixed_mean_, stats_shape_);
  return adapt_mean_.defined() ? adapt_mean_.value() : Tensor();
}

Tensor Normalization::variance() const {
  if (fixed_variance_.defined()) return reshape(fixed_variance_, stats_shape_);
  return adapt_variance_.defined() ? adapt_variance_.value() : Tensor();
}

Tensor Normalization::call(const Tensor& inputs) {
  if (!keep_.empty() && inputs.rank() != built_shape_.rank())
    fail(name(), "input " + inputs.spec().str() + " does not match the shape the layer was built for, " + built_shape_.str());
  for (int d : keep_)
    if (inputs.shape()[d] != built_shape_[d])
      fail(name(), "input " + inputs.spec().str() + " differs from the built shape " + built_shape_.str() +
                       " on kept axis " + std::to_string(d));
  // Computed in float32 (float64 under a float64 policy) from the float32 statistics; the result
  // in the layer's compute dtype, as Keras gives it (bfloat16 under mixed_bfloat16).
  const DType out = compute_dtype(), work = out == DType::float64 ? DType::float64 : DType::float32;
  Tensor x = cast(inputs, work);
  Tensor m = fixed_mean_.defined() ? fixed_mean_ : reshape(Tensor(adapt_mean_), broadcast_shape_);
  Tensor v = fixed_variance_.defined() ? fixed_variance_ : reshape(Tensor(adapt_variance_), broadcast_shape_);
  if (m.dtype() != work) m = cast(m, work);
  if (v.dtype() != work) v = cast(v, work);
  if (keep_.empty()) {  // axis=None: scalars, for inputs of any rank
    m = reshape(m, Shape{});
    v = reshape(v, Shape{});
  }
  Tensor scale = maximum(sqrt(v), scalar_like(v, kEpsilon));
  Tensor y = invert_ ? m + x * scale : (x - m) / scale;
  return y.dtype() == out || !is_floating(out) ? y : cast(y, out);
}

}  // namespace ef::nn
