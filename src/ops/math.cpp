// ef::math (eagerflow/ops/math.h): tf.math functions composed of the op table's ops.
#include "eagerflow/ops/math.h"

#include <limits>
#include <numeric>
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"

namespace ef::math {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_floating(const Tensor& x, const char* op) {
  if (!x.defined()) fail(op, "got an undefined tensor");
  if (!is_floating(x.dtype())) fail(ErrorCode::invalid_argument, op, "expects a floating tensor, got " + x.spec().str());
}

// The axes a reduction covers: every axis when `axes` is empty, else `axes` normalized.
std::vector<int> reduced_axes(const Tensor& x, const std::vector<int>& axes, const char* op) {
  std::vector<int> out;
  if (axes.empty()) {
    out.resize(static_cast<std::size_t>(x.rank()));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  for (int a : axes) out.push_back(normalize_axis(a, x.rank(), op));
  return out;
}

// x reduced with keepdims=true, squeezed when keepdims is false.
Tensor finish(const Tensor& kept, const std::vector<int>& axes, bool keepdims) {
  if (keepdims || axes.empty()) return kept;
  return squeeze(kept, axes);
}

}  // namespace

Tensor is_nan(const Tensor& x) {
  expect_floating(x, "is_nan");
  return not_equal(x, x);
}
Tensor is_inf(const Tensor& x) {
  expect_floating(x, "is_inf");
  return equal(abs(x), scalar_like(x, kInf));
}
Tensor is_finite(const Tensor& x) {
  expect_floating(x, "is_finite");
  return less(abs(x), scalar_like(x, kInf));  // false for inf and NaN
}

Tensor sign(const Tensor& x) {
  // Zero (of either sign) and NaN come from x * 0, which also makes the gradient zeros (as
  // TF's) rather than no gradient at all.
  return where(x > 0, scalar_like(x, 1), where(x < 0, scalar_like(x, -1), x * 0));
}

Tensor reciprocal(const Tensor& x) { return scalar_like(x, 1) / x; }

Tensor log1p(const Tensor& x) {
  expect_floating(x, "log1p");
  // Kahan: with u = 1 + x rounded, log(u) * x / (u - 1) is accurate to a few ulps; u == 1
  // means |x| is below half an ulp of 1, where log1p(x) is x. The divisor is made safe in the
  // branch not taken so that gradients stay finite there.
  Tensor u = x + 1.0;
  Tensor d = u - 1.0;
  Tensor tiny = equal(d, zeros_like(d));
  Tensor safe_d = where(tiny, ones_like(d), d);
  Tensor y = where(tiny, x, log(u) * x / safe_d);
  return where(equal(x, scalar_like(x, kInf)), x, y);  // log1p(inf) = inf, not inf / inf
}

Tensor softplus(const Tensor& x) {
  expect_floating(x, "softplus");
  // log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): exp never overflows, tiny results stay.
  return relu(x) + log1p(exp(-abs(x)));
}

Tensor log_sigmoid(const Tensor& x) { return -softplus(-x); }

Tensor squared_difference(const Tensor& x, const Tensor& y) { return square(x - y); }

Tensor divide_no_nan(const Tensor& x, const Tensor& y) {
  Tensor zero = equal(y, zeros_like(y));
  Tensor safe_y = where(zero, ones_like(y), y);
  return where(zero, zeros_like(x / safe_y), x / safe_y);
}

Tensor multiply_no_nan(const Tensor& x, const Tensor& y) {
  Tensor product = x * y;
  return where(equal(y, zeros_like(y)), zeros_like(product), product);
}

Tensor xlogy(const Tensor& x, const Tensor& y) {
  expect_floating(x, "xlogy");
  Tensor zero = equal(x, zeros_like(x));
  Tensor safe_y = where(zero, ones_like(y), y);
  Tensor product = x * log(safe_y);
  return where(zero, zeros_like(product), product);
}

Tensor logical_xor(const Tensor& x, const Tensor& y) {
  if (x.dtype() != DType::bool_ || y.dtype() != DType::bool_)
    fail(ErrorCode::invalid_argument, "logical_xor", "expects bool tensors, got " + x.spec().str() + " and " + y.spec().str());
  return not_equal(x, y);
}

Tensor reduce_prod(const Tensor& x, std::vector<int> axes, bool keepdims) {
  if (!x.defined()) fail("reduce_prod", "got an undefined tensor");
  std::vector<int> ax = reduced_axes(x, axes, "reduce_prod");
  // Along each axis the reversed cumulative product's first element is the whole product:
  // exact for zeros and signs, and differentiable through cumprod's gradient.
  Tensor p = x;
  Tensor first = tensor(std::vector<std::int32_t>{0}, Shape{1});
  for (int a : ax) {
    if (p.shape()[a] == 0) {  // an empty product is 1 (an empty sum is 0, shaped alike)
      p = sum(p, {a}, /*keepdims=*/true) + 1.0;
      continue;
    }
    p = gather(cumprod(p, a, /*exclusive=*/false, /*reverse=*/true), first, a);
  }
  return finish(p, ax, keepdims);
}

Tensor reduce_logsumexp(const Tensor& x, std::vector<int> axes, bool keepdims) {
  expect_floating(x, "reduce_logsumexp");
  std::vector<int> ax = reduced_axes(x, axes, "reduce_logsumexp");
  // Shifted by the (finite) maximum, as TF: no overflow, and -inf rows stay -inf.
  Tensor m = max(x, ax, /*keepdims=*/true);
  m = stop_gradient(where(is_finite(m), m, zeros_like(m)));
  return finish(log(sum(exp(x - m), ax, /*keepdims=*/true)) + m, ax, keepdims);
}

Tensor reduce_variance(const Tensor& x, std::vector<int> axes, bool keepdims) {
  expect_floating(x, "reduce_variance");
  std::vector<int> ax = reduced_axes(x, axes, "reduce_variance");
  return mean(square(x - mean(x, ax, /*keepdims=*/true)), ax, keepdims);
}

Tensor reduce_std(const Tensor& x, std::vector<int> axes, bool keepdims) {
  return sqrt(reduce_variance(x, std::move(axes), keepdims));
}

Tensor reduce_euclidean_norm(const Tensor& x, std::vector<int> axes, bool keepdims) {
  expect_floating(x, "reduce_euclidean_norm");
  return sqrt(sum(square(x), reduced_axes(x, axes, "reduce_euclidean_norm"), keepdims));
}

Tensor count_nonzero(const Tensor& x, std::vector<int> axes, bool keepdims) {
  if (!x.defined()) fail("count_nonzero", "got an undefined tensor");
  Tensor nonzero = x.dtype() == DType::bool_ ? x : cast(x, DType::bool_);  // NaN counts, as in TF
  return sum(cast(nonzero, DType::int64), reduced_axes(x, axes, "count_nonzero"), keepdims);
}

Tensor l2_normalize(const Tensor& x, std::vector<int> axes, double epsilon) {
  expect_floating(x, "l2_normalize");
  Tensor squares = sum(square(x), reduced_axes(x, axes, "l2_normalize"), /*keepdims=*/true);
  return x * rsqrt(maximum(squares, scalar_like(squares, epsilon)));
}

Tensor linspace(const Tensor& start, const Tensor& stop, std::int64_t num) {
  if (num < 0) fail(ErrorCode::invalid_argument, "linspace", "num must be non-negative, got " + std::to_string(num));
  if (start.rank() != 0 || stop.rank() != 0)
    fail(ErrorCode::unimplemented, "linspace", "takes scalar start and stop, got " + start.spec().str() + " and " + stop.spec().str());
  // Integer endpoints give float64, as TF's (its (stop - start) / n is a true division).
  DType t = is_floating(start.dtype()) ? start.dtype() : DType::float64;
  Tensor a = cast(start, t), b = cast(stop, t);
  if (num == 0) return slice(reshape(a, Shape{1}), {0}, {0});  // TF: an empty result
  if (num == 1) return reshape(a, Shape{1});
  // start + i * (stop - start) / (num - 1) for i < num - 1, then stop itself (as TF).
  Tensor delta = (b - a) / static_cast<double>(num - 1);
  Tensor head = a + arange(0.0, static_cast<double>(num - 1), 1.0, t) * delta;
  return concat({head, reshape(b, Shape{1})}, 0);
}

Tensor eye(std::int64_t rows, std::int64_t columns, DType dtype) {
  if (columns < 0) columns = rows;
  if (rows < 0) fail(ErrorCode::invalid_argument, "eye", "num_rows must be non-negative, got " + std::to_string(rows));
  Tensor r = reshape(arange(rows, DType::int64), Shape{rows, 1});
  Tensor c = reshape(arange(columns, DType::int64), Shape{1, columns});
  return cast(equal(r, c), dtype);
}

Tensor norm(const Tensor& x, const std::string& ord, std::vector<int> axes, bool keepdims) {
  expect_floating(x, "norm");
  bool matrix = axes.size() == 2;
  if (axes.size() > 2) fail(ErrorCode::invalid_argument, "norm", "axis must name one or two axes");
  std::vector<int> ax = reduced_axes(x, axes, "norm");
  if (ord == "fro" && axes.size() == 1) fail(ErrorCode::invalid_argument, "norm", "'fro' is a matrix norm: give two axes");
  if (ord == "euclidean" || ord == "fro") return sqrt(sum(square(x), ax, keepdims));
  if (matrix) {
    // 1: the largest column sum of |x|; inf: the largest row sum (axes as rows, columns).
    int rows = ax[0], cols = ax[1];
    if (ord == "1") return finish(max(sum(abs(x), {rows}, true), {cols}, true), ax, keepdims);
    if (ord == "inf") return finish(max(sum(abs(x), {cols}, true), {rows}, true), ax, keepdims);
    if (ord == "2") fail(ErrorCode::unimplemented, "norm", "the matrix 2-norm (largest singular value) is not supported yet");
    fail(ErrorCode::invalid_argument, "norm", "a matrix norm's ord is 'fro', 'euclidean', 1 or inf, got '" + ord + "'");
  }
  if (ord == "inf") return max(abs(x), ax, keepdims);
  if (ord == "1") return sum(abs(x), ax, keepdims);
  if (ord == "2") return sqrt(sum(square(x), ax, keepdims));
  double p = 0;
  try {
    std::size_t used = 0;
    p = std::stod(ord, &used);
    if (used != ord.size()) p = 0;
  } catch (const std::exception&) {
    p = 0;
  }
  if (!(p > 0)) fail(ErrorCode::invalid_argument, "norm", "ord must be 'euclidean', 'fro', inf or a number > 0, got '" + ord + "'");
  return pow(sum(pow(abs(x), scalar_like(x, p)), ax, keepdims), scalar_like(x, 1.0 / p));
}

Tensor clip_by_norm(const Tensor& x, double clip_norm, std::vector<int> axes) {
  expect_floating(x, "clip_by_norm");
  if (!(clip_norm >= 0)) fail(ErrorCode::invalid_argument, "clip_by_norm", "clip_norm must be >= 0, got " + std::to_string(clip_norm));
  std::vector<int> ax = reduced_axes(x, axes, "clip_by_norm");
  Tensor squares = sum(square(x), ax, /*keepdims=*/true);
  // A zero norm keeps x (TF's safe form: no 0 / 0 in the value or the gradient).
  Tensor positive = squares > 0.0;
  Tensor l2 = where(positive, sqrt(where(positive, squares, ones_like(squares))), squares);
  Tensor c = scalar_like(x, clip_norm);
  return x * c / maximum(l2, c);
}

std::pair<std::vector<Tensor>, Tensor> clip_by_global_norm(const std::vector<Tensor>& xs, double clip_norm) {
  if (!(clip_norm >= 0)) fail(ErrorCode::invalid_argument, "clip_by_global_norm", "clip_norm must be >= 0");
  Tensor total;
  for (const Tensor& x : xs) {
    if (!x.defined()) continue;  // None entries stay None, as in TF
    expect_floating(x, "clip_by_global_norm");
    Tensor s = cast(sum(square(x)), DType::float64);
    total = total.defined() ? total + s : s;
  }
  if (!total.defined()) fail(ErrorCode::invalid_argument, "clip_by_global_norm", "needs at least one tensor");
  Tensor global = sqrt(total);
  Tensor scale = scalar_like(global, clip_norm) / maximum(global, scalar_like(global, clip_norm));
  // An infinite or NaN global norm makes every entry NaN, as TF's.
  scale = where(is_finite(global), scale, scalar_like(global, std::numeric_limits<double>::quiet_NaN()));
  std::vector<Tensor> out;
  for (const Tensor& x : xs) out.push_back(x.defined() ? x * cast(scale, x.dtype()) : Tensor());
  return {out, cast(global, xs.front().defined() ? xs.front().dtype() : DType::float32)};
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing) {
  if (indexing != "xy" && indexing != "ij")
    fail(ErrorCode::invalid_argument, "meshgrid", "indexing must be 'xy' or 'ij', got '" + indexing + "'");
  int n = static_cast<int>(xs.size());
  std::vector<std::int64_t> dims;
  for (const Tensor& x : xs) {
    if (x.rank() != 1) fail(ErrorCode::invalid_argument, "meshgrid", "takes 1-D tensors, got " + x.spec().str());
    dims.push_back(x.shape()[0]);
  }
  bool xy = indexing == "xy" && n >= 2;
  if (xy) std::swap(dims[0], dims[1]);
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) {
    int at = xy && i < 2 ? 1 - i : i;  // the axis input i varies along
    std::vector<std::int64_t> shape(static_cast<std::size_t>(n), 1);
    shape[static_cast<std::size_t>(at)] = xs[static_cast<std::size_t>(i)].shape()[0];
    out.push_back(broadcast_to(reshape(xs[static_cast<std::size_t>(i)], Shape(shape)), Shape(dims)));
  }
  return out;
}

}  // namespace ef::math
