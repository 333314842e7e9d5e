#pragma once
// Layer normalization over the last axis of a [rows, cols] row-major array, forward and
// backward in one pass each (src/kernels/cpu/layer_norm.cpp). Every row is computed on its own,
// and dgamma/dbeta add per-block partial sums in a fixed order, so results do not depend on
// the thread count.
#include <cstdint>

namespace ef::cpu {

// y = (x - mean) * rstd * gamma + beta with mean and rstd = 1 / sqrt(var + epsilon) per row
// (var the biased variance); mean and rstd are written per row.
void layer_norm_forward(const float* x, const float* gamma, const float* beta, double epsilon, std::int64_t rows,
                        std::int64_t cols, float* y, float* mean, float* rstd);
void layer_norm_forward(const double* x, const double* gamma, const double* beta, double epsilon, std::int64_t rows,
                        std::int64_t cols, double* y, double* mean, double* rstd);

// From the forward's mean and rstd: dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy gamma
// and xhat = (x - mean) rstd; dgamma = sum over rows of dy xhat; dbeta = sum over rows of dy.
void layer_norm_backward(const float* x, const float* gamma, const float* mean, const float* rstd, const float* dy,
                         std::int64_t rows, std::int64_t cols, float* dx, float* dgamma, float* dbeta);
void layer_norm_backward(const double* x, const double* gamma, const double* mean, const double* rstd,
                         const double* dy, std::int64_t rows, std::int64_t cols, double* dx, double* dgamma,
                         double* dbeta);

}  // namespace ef::cpu
