#pragma once
// The public ops. Binary ops broadcast like NumPy and need equal dtypes (like TF); a C++
// scalar operand adopts the tensor's dtype.
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

// ---- elementwise ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN propagates
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);

Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact (erf) form, Keras' default
Tensor erf(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x); Tensor asin(const Tensor& x); Tensor acos(const Tensor& x); Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x); Tensor cosh(const Tensor& x); Tensor asinh(const Tensor& x); Tensor acosh(const Tensor& x);
Tensor atanh(const Tensor& x); Tensor expm1(const Tensor& x); Tensor erfc(const Tensor& x);  // NOLINT: one line each family

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor cast(const Tensor& x, DType dtype);
// tf.dtypes.saturate_cast: x clamped to `dtype`'s range (in x's dtype) and cast, so values
// beyond it become its limits instead of wrapping (300.0 -> uint8 255, -1 -> 0); NaN -> 0.
Tensor saturate_cast(const Tensor& x, DType dtype);
// A new handle on the same values (gradients pass through).
Tensor identity(const Tensor& x);
// The same values with no gradient (TF's tf.stop_gradient, JAX's lax.stop_gradient).
Tensor stop_gradient(const Tensor& x);

// ---- reductions (empty axes = all axes; negative axes count from the end) ----
Tensor sum(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor argmax(const Tensor& x, int axis = -1, bool keepdims = false);  // int64
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);

// ---- linear algebra ----
// 2-D, batched with broadcast batch dims, and rank-N x 2-D on the last axis (the Dense case).
// transpose_a / transpose_b multiply by the transpose of the last two axes (as TF's matmul)
// without copying it.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

// ---- convolution and pooling (NHWC inputs, HWIO kernels, float32; padding "valid" or "same") ----
struct Stride2 {
  std::int64_t h = 1, w = 1;
};
Tensor conv2d(const Tensor& x, const Tensor& kernel, Stride2 strides = {1, 1}, const std::string& padding = "valid",
              Stride2 dilation = {1, 1});
Tensor max_pool2d(const Tensor& x, Stride2 pool = {2, 2}, std::optional<Stride2> strides = std::nullopt,
                  const std::string& padding = "valid");
Tensor avg_pool2d(const Tensor& x, Stride2 pool = {2, 2}, std::optional<Stride2> strides = std::nullopt,
                  const std::string& padding = "valid");

// ---- shape ----
Tensor reshape(const Tensor& x, const Shape& shape);  // one -1 allowed; a view when possible
Tensor transpose(const Tensor& x, std::vector<int> perm = {});  // default: reverse axes
inline Tensor permute(const Tensor& x, std::vector<int> perm) { return transpose(x, std::move(perm)); }
Tensor expand_dims(const Tensor& x, int axis);
Tensor squeeze(const Tensor& x, std::vector<int> axes = {});
Tensor concat(const std::vector<Tensor>& xs, int axis);
Tensor stack(const std::vector<Tensor>& xs, int axis = 0);
// Python-style slice per axis: negative indices count from the end, bounds are clamped.
// Axes beyond `begin.size()` are taken whole.
Tensor slice(const Tensor& x, std::vector<std::int64_t> begin, std::vector<std::int64_t> end,
             std::vector<std::int64_t> strides = {});
Tensor gather(const Tensor& x, const Tensor& indices, int axis = 0);
Tensor one_hot(const Tensor& indices, std::int64_t depth, DType dtype = DType::float32);

// ---- runtime shapes ----
// Inside a trace with dynamic dims, shapes are known only when the graph runs; these ops
// work with the runtime shape.
Tensor shape(const Tensor& x);  // int64[rank]
Tensor size(const Tensor& x);   // int64[]: the number of elements
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
Tensor full_like(const Tensor& x, double value);
// NumPy broadcasting to a shape; a kDynamic dim in `shape` keeps x's dim.
Tensor broadcast_to(const Tensor& x, const Shape& shape);
Tensor broadcast_like(const Tensor& x, const Tensor& like);  // to like's runtime shape
// Sums x down to like's runtime shape (the inverse of broadcasting; gradients use it).
Tensor sum_to(const Tensor& x, const Tensor& like);
Tensor reshape_like(const Tensor& x, const Tensor& like);   // same number of elements

// ---- ops for sequence models (issue 18; src/ops/tri_clip_round.cpp, pad_tile.cpp,
// cumulative.cpp, sort_ops.cpp, einsum.cpp) ----
// Lower / upper triangle of the last two axes (NumPy's tril/triu with offset k); the rest is 0.
Tensor tril(const Tensor& x, std::int64_t k = 0);
Tensor triu(const Tensor& x, std::int64_t k = 0);
// clip_by_value: min(max(x, lo), hi); the gradient passes where lo <= x <= hi.
Tensor clip(const Tensor& x, double min_value, double max_value);
Tensor clip(const Tensor& x, const Tensor& min_value, const Tensor& max_value);  // broadcasting bounds
// Rounding (no gradient, as TF); round is half to even (NumPy, TF). Integers pass unchanged.
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);
// Boolean reductions (nonzero is true), bool results; empty axes = all axes.
Tensor any(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor all(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// tf.pad / np.pad: paddings[i] = {before, after} for axis i (missing trailing axes: none);
// mode "constant" (with constant_value), "reflect" (edge not repeated) or "symmetric".
Tensor pad(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings,
           const std::string& mode = "constant", double constant_value = 0.0);
// tf.tile: one multiple per axis.
Tensor tile(const Tensor& x, std::vector<std::int64_t> multiples);
// np.repeat / keras.ops.repeat: each element `repeats` times along axis (no axis: of the
// flattened tensor), or element i repeats[i] times.
Tensor repeat(const Tensor& x, std::int64_t repeats, std::optional<int> axis = std::nullopt);
Tensor repeat(const Tensor& x, std::vector<std::int64_t> repeats, std::optional<int> axis = std::nullopt);
// tf.math.cumsum / cumprod with TF's exclusive and reverse. cumprod's gradient is exact with
// zeros too (no division, unlike TF's rule); its second derivative divides by x.
Tensor cumsum(const Tensor& x, int axis = 0, bool exclusive = false, bool reverse = false);
Tensor cumprod(const Tensor& x, int axis = 0, bool exclusive = false, bool reverse = false);
// Einstein summation (NumPy's rules: "ij,jk->ik", implicit output, "..." broadcasting), lowered
// to transposes, reshapes, sums and batched matmuls.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
inline Tensor einsum(const std::string& equation, const Tensor& a) { return einsum(equation, std::vector<Tensor>{a}); }
inline Tensor einsum(const std::string& equation, const Tensor& a, const Tensor& b) {
  return einsum(equation, std::vector<Tensor>{a, b});
}
// Sorting along an axis, stable (equal values keep their order; NaN last ascending).
Tensor sort(const Tensor& x, int axis = -1, bool descending = false);
Tensor argsort(const Tensor& x, int axis = -1, bool descending = false);  // int64
// tf.math.top_k over the last axis: the k largest values (largest first) and their int32
// indices; equal values: the lower index first. Gradient: the values' cotangents scattered back.
struct TopKResult {
  Tensor values, indices;
};
TopKResult top_k(const Tensor& x, std::int64_t k = 1);
// np.take_along_axis (indices int32/int64, x's shape except along axis).
Tensor take_along_axis(const Tensor& x, const Tensor& indices, int axis);
// where with a scalar branch (adopting the other branch's dtype), or two (of `dtype`).
Tensor where(const Tensor& condition, const Tensor& a, double b);
Tensor where(const Tensor& condition, double a, const Tensor& b);
Tensor where(const Tensor& condition, double a, double b, DType dtype = DType::float32);

// ---- operators ----
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& x) { return neg(x); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return less(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return less_equal(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return greater(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return greater_equal(a, b); }

// A C++ number next to a tensor becomes a scalar of the tensor's dtype.
template <class S> concept Scalar = std::is_arithmetic_v<S>;
Tensor scalar_like(const Tensor& like, double value);
template <Scalar S> Tensor operator+(const Tensor& a, S s) { return add(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator+(S s, const Tensor& a) { return add(scalar_like(a, s), a); }
template <Scalar S> Tensor operator-(const Tensor& a, S s) { return sub(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator-(S s, const Tensor& a) { return sub(scalar_like(a, s), a); }
template <Scalar S> Tensor operator*(const Tensor& a, S s) { return mul(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator*(S s, const Tensor& a) { return mul(scalar_like(a, s), a); }
template <Scalar S> Tensor operator/(const Tensor& a, S s) { return div(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator/(S s, const Tensor& a) { return div(scalar_like(a, s), a); }
template <Scalar S> Tensor operator<(const Tensor& a, S s) { return less(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator>(const Tensor& a, S s) { return greater(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator<=(const Tensor& a, S s) { return less_equal(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator>=(const Tensor& a, S s) { return greater_equal(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator==(const Tensor& a, S s) { return equal(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator==(S s, const Tensor& a) { return equal(scalar_like(a, s), a); }
template <Scalar S> Tensor operator!=(const Tensor& a, S s) { return not_equal(a, scalar_like(a, s)); }
template <Scalar S> Tensor operator!=(S s, const Tensor& a) { return not_equal(scalar_like(a, s), a); }

}  // namespace ef
