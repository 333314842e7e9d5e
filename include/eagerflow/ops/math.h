#pragma once
// ef::math: TensorFlow's tf.math functions that are compositions of the op table's ops (so they
// trace, differentiate, vmap, save and export as those ops do), with TF's semantics. `axes`
// empty means every axis, as for ef::sum.
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

}  // namespace ef::math
