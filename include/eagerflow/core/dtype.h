#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <string_view>
#include <type_traits>

namespace ef {

enum class DType : std::uint8_t { float32, float64, int32, int64, bool_ };

constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::bool_: return 1;
  }
  return 0;
}

// Long form for errors and printing ("float32"), short form for graphs ("f32").
std::string_view name_of(DType t);
std::string_view short_name_of(DType t);
constexpr bool is_floating(DType t) { return t == DType::float32 || t == DType::float64; }
constexpr bool is_integer(DType t) { return t == DType::int32 || t == DType::int64; }

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <class T> inline constexpr DType dtype_v = dtype_of<std::remove_cv_t<T>>::value;

// Calls fn with a value of the C++ type behind a dtype: dispatch_dtype(t, [&](auto tag) {
// using T = decltype(tag); ... }).
template <class Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    case DType::int32: return fn(std::int32_t{});
    case DType::int64: return fn(std::int64_t{});
    case DType::bool_: return fn(bool{});
  }
  return fn(float{});
}

// The one rule for turning a number into a dtype (ef::cast, ef::full, C++ scalar operands,
// arange): floats to integers saturate at the type's limits and NaN becomes 0, instead of the
// undefined behaviour of a plain C++ conversion; to bool, nonzero is true.
template <class To, class From>
To saturate_cast(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    double d = static_cast<double>(v);
    if (d != d) return To(0);
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace ef
