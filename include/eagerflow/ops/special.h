#pragma once
// Special functions of tf.math as compositions of ops (src/ops/special.cpp), so that they trace,
// vmap and differentiate (the gradient of lgamma is digamma's value, of erfinv its closed form
// through the composition). Float32 and float64; accurate to a few ulp of float64. Include this
// header on its own (it is not part of eagerflow.h).
#include "eagerflow/core/tensor.h"

namespace ef::math {

Tensor lgamma(const Tensor& x);   // log|Gamma(x)|; +inf at 0 and the negative integers
Tensor digamma(const Tensor& x);  // d/dx lgamma(x)
Tensor lbeta(const Tensor& x);    // log|B(x)| over the last axis: sum(lgamma(x)) - lgamma(sum(x))
Tensor erfinv(const Tensor& y);   // erf(erfinv(y)) = y for y in (-1, 1); +-inf at +-1, NaN outside
Tensor ndtri(const Tensor& p);    // the standard normal quantile: sqrt(2) erfinv(2p - 1)
Tensor erfcinv(const Tensor& y);  // erfinv(1 - y)

}  // namespace ef::math
