#pragma once
#include <cstddef>
#include <cstdint>
#include <array>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "eagerflow/core/bfloat16.h"
#include "eagerflow/core/float16.h"

namespace ef {

// bfloat16 and float16 are storage dtypes (core/bfloat16.h, core/float16.h): ops compute in
// float32 for them and round their results back (src/ops/bfloat16_dispatch.cpp).
// string: TF's tf.string, elements std::string_views (eagerflow/core/string_tensor.h).
enum class DType : std::uint8_t { float32, float64, int32, int64, bool_, bfloat16, float16, string = 13 };
inline constexpr std::array<DType, 8> all_dtypes{DType::float32, DType::float64, DType::int32, DType::int64,
                                                 DType::bool_,   DType::bfloat16, DType::float16, DType::string};
constexpr bool is_storage_float(DType t) { return t == DType::bfloat16 || t == DType::float16; }

constexpr std::size_t size_of(DType t) {
  switch (t) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::bool_: return 1;
    case DType::bfloat16: return 2;
    case DType::float16: return 2;
    case DType::string: return 16;  // a std::string_view
  }
  return 0;
}

// Long form for errors and printing ("float32"), short form for graphs ("f32").
std::string_view name_of(DType t);
std::string_view short_name_of(DType t);
// The dtype of a long or short name ("bfloat16", "bf16"), or nullopt.
std::optional<DType> dtype_named(std::string_view name);
constexpr bool is_floating(DType t) {
  return t == DType::float32 || t == DType::float64 || t == DType::bfloat16 || t == DType::float16;
}
constexpr bool is_integer(DType t) { return t == DType::int32 || t == DType::int64; }

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::bfloat16; };
template <> struct dtype_of<float16> { static constexpr DType value = DType::float16; };
template <> struct dtype_of<std::string_view> { static constexpr DType value = DType::string; };
template <class T> inline constexpr DType dtype_v = dtype_of<std::remove_cv_t<T>>::value;

// The ef::Errors for a kernel asked to compute in bfloat16 (a storage dtype), or on strings.
[[noreturn]] void bfloat16_not_computed(const char* what);
[[noreturn]] void string_not_computed(const char* what);

// Calls fn with a value of the C++ type behind a dtype: dispatch_dtype(t, [&](auto tag) {
// using T = decltype(tag); ... }). Kernels are not instantiated for bfloat16: it throws an
// ef::Error for it (ops convert bfloat16 to float32 before their kernels run).
template <class Fn>
decltype(auto) dispatch_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    case DType::int32: return fn(std::int32_t{});
    case DType::int64: return fn(std::int64_t{});
    case DType::bool_: return fn(bool{});
    case DType::bfloat16:
    case DType::float16: bfloat16_not_computed("dispatch_dtype");
    case DType::string: string_not_computed("dispatch_dtype");
  }
  return fn(float{});
}
// dispatch_dtype with bfloat16 too (as ef::bfloat16), for code that only moves or converts
// elements (printing, filling, copying).
template <class Fn>
decltype(auto) dispatch_storage_dtype(DType t, Fn&& fn) {
  if (t == DType::bfloat16) return fn(bfloat16{});
  if (t == DType::float16) return fn(float16{});
  return dispatch_dtype(t, static_cast<Fn&&>(fn));
}

// The one rule for turning a number into a dtype (ef::cast, ef::full, C++ scalar operands,
// arange): floats to integers saturate at the type's limits and NaN becomes 0, instead of the
// undefined behaviour of a plain C++ conversion; to bool, nonzero is true.
template <class To, class From>
To saturate_cast(From v) {
  if constexpr (std::is_same_v<From, bfloat16> || std::is_same_v<From, float16>) {
    return saturate_cast<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bfloat16> || std::is_same_v<To, float16>) {
    if constexpr (std::is_same_v<From, bool>) return To(v ? 1.0f : 0.0f);
    else if constexpr (std::is_same_v<From, float>) return To(v);
    else return To(static_cast<double>(v));  // one rounding (int64 and float64 alike)
  } else if constexpr (std::is_same_v<To, bool>) {
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
