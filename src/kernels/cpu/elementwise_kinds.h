#pragma once
// The kinds of elementwise ops, apart from their math: the vector kernels (compiled once per
// instruction set) include this and nothing with inline code, so that no inline function is
// compiled for AVX-512 in one file and linked into code that runs on a baseline CPU.

namespace ef {

enum class UnaryKind { neg, abs, exp, log, sqrt, rsqrt, square, relu, sigmoid, tanh, gelu, erf, sin, cos,
                       tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, expm1, erfc, logical_not };

enum class BinaryKind { add, sub, mul, div, pow, maximum, minimum, equal, not_equal, less, less_equal,
                        greater, greater_equal, logical_and, logical_or };

}  // namespace ef
