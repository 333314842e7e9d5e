#pragma once
// The scalar math of the elementwise ops: integer and bool dtypes, and binary ops of a few
// elements (where it rounds exactly as the vector kernels do). Floating-point tensors go
// through the vector kernels (kernels/cpu/vec_math.h), eager and fused alike.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cpu/elementwise_kinds.h"

namespace ef {


inline const char* unary_name(UnaryKind k) {
  switch (k) {
    case UnaryKind::neg: return "neg";
    case UnaryKind::abs: return "abs";
    case UnaryKind::exp: return "exp";
    case UnaryKind::log: return "log";
    case UnaryKind::sqrt: return "sqrt";
    case UnaryKind::rsqrt: return "rsqrt";
    case UnaryKind::square: return "square";
    case UnaryKind::relu: return "relu";
    case UnaryKind::sigmoid: return "sigmoid";
    case UnaryKind::tanh: return "tanh";
    case UnaryKind::gelu: return "gelu";
    case UnaryKind::erf: return "erf";
    case UnaryKind::sin: return "sin";
    case UnaryKind::cos: return "cos";
    case UnaryKind::tan: return "tan";
    case UnaryKind::asin: return "asin";
    case UnaryKind::acos: return "acos";
    case UnaryKind::atan: return "atan";
    case UnaryKind::sinh: return "sinh";
    case UnaryKind::cosh: return "cosh";
    case UnaryKind::asinh: return "asinh";
    case UnaryKind::acosh: return "acosh";
    case UnaryKind::atanh: return "atanh";
    case UnaryKind::expm1: return "expm1";
    case UnaryKind::erfc: return "erfc";
    case UnaryKind::logical_not: return "logical_not";
  }
  return "?";
}

template <class T>
T unary_value(UnaryKind k, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return !x;  // only logical_not reaches here
  } else {
    if constexpr (std::is_integral_v<T>) {  // wrap around instead of overflowing (INT_MIN)
      using U = std::make_unsigned_t<T>;
      switch (k) {
        case UnaryKind::neg: return static_cast<T>(U(0) - static_cast<U>(x));
        case UnaryKind::abs: return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;
        case UnaryKind::square: return static_cast<T>(static_cast<U>(x) * static_cast<U>(x));
        default: break;
      }
    }
    switch (k) {
      case UnaryKind::neg: return -x;
      case UnaryKind::abs: return x < 0 ? -x : x;
      case UnaryKind::square: return x * x;
      case UnaryKind::relu: return x > 0 ? x : (x != x ? x : T(0));  // NaN stays NaN
      default: break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      switch (k) {
        case UnaryKind::exp: return std::exp(x);
        case UnaryKind::log: return std::log(x);
        case UnaryKind::sqrt: return std::sqrt(x);
        case UnaryKind::rsqrt: return T(1) / std::sqrt(x);
        case UnaryKind::sigmoid: {
          if (x >= 0) return T(1) / (T(1) + std::exp(-x));
          T e = std::exp(x);
          return e / (T(1) + e);
        }
        case UnaryKind::tanh: return std::tanh(x);
        case UnaryKind::gelu:  // x * Phi(x), Phi from erfc (no cancellation for x < 0); 0 at -inf
          return x == -std::numeric_limits<T>::infinity() ? T(-0.0)
                                                          : T(0.5) * x * std::erfc(x * T(-0.70710678118654752440));
        case UnaryKind::erf: return std::erf(x);
        case UnaryKind::sin: return std::sin(x);
        case UnaryKind::cos: return std::cos(x);
        case UnaryKind::tan: return std::tan(x);
        case UnaryKind::asin: return std::asin(x);
        case UnaryKind::acos: return std::acos(x);
        case UnaryKind::atan: return std::atan(x);
        case UnaryKind::sinh: return std::sinh(x);
        case UnaryKind::cosh: return std::cosh(x);
        case UnaryKind::asinh: return std::asinh(x);
        case UnaryKind::acosh: return std::acosh(x);
        case UnaryKind::atanh: return std::atanh(x);
        case UnaryKind::expm1: return std::expm1(x);
        case UnaryKind::erfc: return std::erfc(x);
        default: break;
      }
    }
    return x;
  }
}


inline const char* binary_name(BinaryKind k) {
  switch (k) {
    case BinaryKind::add: return "add";
    case BinaryKind::sub: return "sub";
    case BinaryKind::mul: return "mul";
    case BinaryKind::div: return "div";
    case BinaryKind::pow: return "pow";
    case BinaryKind::maximum: return "maximum";
    case BinaryKind::minimum: return "minimum";
    case BinaryKind::equal: return "equal";
    case BinaryKind::not_equal: return "not_equal";
    case BinaryKind::less: return "less";
    case BinaryKind::less_equal: return "less_equal";
    case BinaryKind::greater: return "greater";
    case BinaryKind::greater_equal: return "greater_equal";
    case BinaryKind::logical_and: return "logical_and";
    case BinaryKind::logical_or: return "logical_or";
  }
  return "?";
}

constexpr bool is_comparison(BinaryKind k) { return k >= BinaryKind::equal && k <= BinaryKind::greater_equal; }
constexpr bool is_logical(BinaryKind k) { return k == BinaryKind::logical_and || k == BinaryKind::logical_or; }

template <class T>
T int_pow(T base, T exp) {
  if (exp < 0) return base == 1 ? T(1) : (base == -1 ? (exp % 2 ? T(-1) : T(1)) : T(0));
  // Unsigned arithmetic wraps on overflow instead of being undefined.
  using U = std::make_unsigned_t<T>;
  U r = 1, b = static_cast<U>(base);
  for (U e = static_cast<U>(exp); e; e >>= 1) {
    if (e & 1) r *= b;
    b *= b;
  }
  return static_cast<T>(r);
}

// Integer arithmetic wraps around (two's complement), like NumPy and TF, instead of being
// undefined behaviour; INT_MIN / -1 wraps too (on x86 it would trap).
template <class T> using Wide = std::make_unsigned_t<T>;
template <class T> T wrap_add(T a, T b) { return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b)); }
template <class T> T wrap_sub(T a, T b) { return static_cast<T>(static_cast<Wide<T>>(a) - static_cast<Wide<T>>(b)); }
template <class T> T wrap_mul(T a, T b) { return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b)); }

template <BinaryKind K, class T>
auto binary_value(T a, T b) {
  constexpr bool boolean_result = K >= BinaryKind::equal;
  constexpr bool wrapping = std::is_integral_v<T> && !std::is_same_v<T, bool>;
  if constexpr (std::is_same_v<T, bool> && !boolean_result) return a;  // never dispatched
  else if constexpr (wrapping && K == BinaryKind::add) return wrap_add(a, b);
  else if constexpr (wrapping && K == BinaryKind::sub) return wrap_sub(a, b);
  else if constexpr (wrapping && K == BinaryKind::mul) return wrap_mul(a, b);
  else if constexpr (wrapping && K == BinaryKind::div) return b == T(-1) ? wrap_sub(T(0), a) : static_cast<T>(a / b);
  else if constexpr (K == BinaryKind::add) return static_cast<T>(a + b);
  else if constexpr (K == BinaryKind::sub) return static_cast<T>(a - b);
  else if constexpr (K == BinaryKind::mul) return static_cast<T>(a * b);
  else if constexpr (K == BinaryKind::div) return static_cast<T>(a / b);
  else if constexpr (K == BinaryKind::pow) {
    if constexpr (std::is_floating_point_v<T>) return static_cast<T>(std::pow(a, b));
    else return int_pow(a, b);
  } else if constexpr (K == BinaryKind::maximum) return (a != a) ? a : (b != b ? b : (a > b ? a : b));
  else if constexpr (K == BinaryKind::minimum) return (a != a) ? a : (b != b ? b : (a < b ? a : b));
  else if constexpr (K == BinaryKind::equal) return a == b;
  else if constexpr (K == BinaryKind::not_equal) return a != b;
  else if constexpr (K == BinaryKind::less) return a < b;
  else if constexpr (K == BinaryKind::less_equal) return a <= b;
  else if constexpr (K == BinaryKind::greater) return a > b;
  else if constexpr (K == BinaryKind::greater_equal) return a >= b;
  else if constexpr (K == BinaryKind::logical_and) return static_cast<bool>(a && b);
  else return static_cast<bool>(a || b);
}


}  // namespace ef
