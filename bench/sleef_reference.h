#pragma once
#include <cstdint>

namespace ef_bench {
enum class ReferenceFn { exp, log, tanh, sigmoid, gelu, erf };
void sleef_unary_loop(ReferenceFn fn, const float* x, float* out, std::int64_t n);
void chain15_loop(const float* x, const float* y, float* out, std::int64_t n);
}  // namespace ef_bench
