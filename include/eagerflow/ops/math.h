#pragma once
// ef::math: TensorFlow's tf.math functions that are compositions of the op table's ops (so they
// trace, differentiate, vmap, save and export as those ops do), with TF's semantics. `axes`
// empty means every axis, as for ef::sum.
#include <string>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::math {

// Elementwise tests (floating x; TF's is_nan / is_inf / is_finite): bool results.
Tensor is_nan(const Tensor& x);
Tensor is_inf(const Tensor& x);
Tensor is_finite(const Tensor& x);
// -1, 0 or 1 (NaN stays NaN); its gradient is zero, as TF's.
Tensor sign(const Tensor& x);
Tensor reciprocal(const Tensor& x);
// log(1 + x), accurate for tiny x (Kahan's form), and its TF relatives.
Tensor log1p(const Tensor& x);
Tensor softplus(const Tensor& x);     // log(1 + exp(x)) without overflow
Tensor log_sigmoid(const Tensor& x);  // -softplus(-x)
Tensor squared_difference(const Tensor& x, const Tensor& y);
// x / y, and 0 where y is 0 (even where x is inf or NaN).
Tensor divide_no_nan(const Tensor& x, const Tensor& y);
// x * y, and 0 where y is 0.
Tensor multiply_no_nan(const Tensor& x, const Tensor& y);
// x * log(y), and 0 where x is 0.
Tensor xlogy(const Tensor& x, const Tensor& y);
Tensor logical_xor(const Tensor& x, const Tensor& y);

// Reductions.
Tensor reduce_prod(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor reduce_logsumexp(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor reduce_variance(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);  // population
Tensor reduce_std(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
Tensor reduce_euclidean_norm(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// The number of nonzero (true, NaN) elements, int64.
Tensor count_nonzero(const Tensor& x, std::vector<int> axes = {}, bool keepdims = false);
// x / sqrt(max(sum(x^2, axes), epsilon)).
Tensor l2_normalize(const Tensor& x, std::vector<int> axes = {}, double epsilon = 1e-12);

// tf.linspace: `num` values from start to stop inclusive (stop exactly), of start's floating
// dtype (float64 for integers, as TF); num = 1 gives [start], 0 an empty tensor.
Tensor linspace(const Tensor& start, const Tensor& stop, std::int64_t num);
// tf.eye: ones on the diagonal of a [rows, columns] matrix (square when columns < 0).
Tensor eye(std::int64_t rows, std::int64_t columns = -1, DType dtype = DType::float32);
// tf.norm for vectors (ord "euclidean"/"fro", 1, inf or any p > 0 over one axis, or over every
// element when axes is empty) and matrices (axes of two: "fro", "euclidean", 1, inf).
Tensor norm(const Tensor& x, const std::string& ord = "euclidean", std::vector<int> axes = {}, bool keepdims = false);
// tf.clip_by_norm: x scaled so that its L2 norm over `axes` is at most clip_norm.
Tensor clip_by_norm(const Tensor& x, double clip_norm, std::vector<int> axes = {});
// tf.clip_by_global_norm: every tensor scaled by clip_norm / max(global norm, clip_norm);
// returns the clipped tensors and the global norm.
std::pair<std::vector<Tensor>, Tensor> clip_by_global_norm(const std::vector<Tensor>& xs, double clip_norm);
// tf.meshgrid: N-D coordinate grids of 1-D inputs; "xy" (Cartesian, the first two axes
// swapped) or "ij" (matrix) indexing.
std::vector<Tensor> meshgrid(const std::vector<Tensor>& xs, const std::string& indexing = "xy");

}  // namespace ef::math
