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
// float32 for them and round their results back (src/ops/bfloat16_dispatch.cpp). TF's other
// integers (uint8 .. uint64) are storage dtypes by the same rule: ops compute in int32 (8 and
// 16 bits) or int64 (uint32, uint64) and wrap their results back. The values are fixed (the
// vector kernels, saved files and graphs name dtypes by them): new ones are appended.
// string: TF's tf.string, elements std::string_views (eagerflow/core/string_tensor.h).
// complex64/complex128: std::complex<float>/<double>, interleaved (real, imaginary) as NumPy's
// and TF's (their dtype_of is in eagerflow/core/complex_dtype.h, which brings <complex>). The
// generic kernels are not instantiated for them either: the complex ops (eagerflow/ops/complex.h)
// compute on them, and ops that only move elements take them.
enum class DType : std::uint8_t {
  float32, float64, int32, int64, bool_, bfloat16, float16,
  uint8 = 7, int8 = 8, int16 = 9, uint16 = 10, uint32 = 11, uint64 = 12, string = 13,
  complex64 = 14, complex128 = 15
};
inline constexpr std::array<DType, 16> all_dtypes{
    DType::float32, DType::float64, DType::int32,  DType::int64,  DType::bool_,     DType::bfloat16,
    DType::float16, DType::uint8,   DType::int8,   DType::int16,  DType::uint16,    DType::uint32,
    DType::uint64,  DType::string,  DType::complex64, DType::complex128};
constexpr bool is_complex(DType t) { return t == DType::complex64 || t == DType::complex128; }
// The real dtype of a complex one's parts (float32 for complex64), and the complex dtype whose
// parts a real one is (complex64 for float32 and the 16-bit floats, complex128 otherwise).
constexpr DType real_dtype_of(DType t) {
  return t == DType::complex64 ? DType::float32 : t == DType::complex128 ? DType::float64 : t;
}
constexpr DType complex_dtype_of(DType t) {
  return is_complex(t) ? t : t == DType::float64 ? DType::complex128 : DType::complex64;
}
constexpr bool is_storage_float(DType t) { return t == DType::bfloat16 || t == DType::float16; }
// The integers kernels are not instantiated for (they compute in compute_dtype_of).
constexpr bool is_storage_int(DType t) {
  return t == DType::uint8 || t == DType::int8 || t == DType::int16 || t == DType::uint16 || t == DType::uint32 ||
         t == DType::uint64;
}
constexpr bool is_storage_dtype(DType t) { return is_storage_float(t) || is_storage_int(t); }
// The dtype an op that does not take a storage dtype as it is computes in: float32 for the
// 16-bit floats; int32 for the 8- and 16-bit integers (exact, and the cast back wraps as TF's
// own narrow arithmetic does); int64 for uint32 (exact) and uint64 (two's complement: sums,
// differences and products wrap to the same bits, but values from 2^63 compare and divide as
// negative numbers there).
constexpr DType compute_dtype_of(DType t) {
  if (is_storage_float(t)) return DType::float32;
  if (t == DType::uint32 || t == DType::uint64) return DType::int64;
  if (is_storage_int(t)) return DType::int32;
  return t;
}
constexpr bool is_unsigned(DType t) {
  return t == DType::uint8 || t == DType::uint16 || t == DType::uint32 || t == DType::uint64;
}

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
    case DType::uint8: return 1;
    case DType::int8: return 1;
    case DType::int16: return 2;
    case DType::uint16: return 2;
    case DType::uint32: return 4;
    case DType::uint64: return 8;
    case DType::complex64: return 8;
    case DType::complex128: return 16;
  }
  return 0;
}

// Long form for errors and printing ("float32", TF's names), short form for graphs ("f32", "u8").
std::string_view name_of(DType t);
std::string_view short_name_of(DType t);
// The dtype of a long or short name ("bfloat16", "bf16"), or nullopt.
std::optional<DType> dtype_named(std::string_view name);
constexpr bool is_floating(DType t) {
  return t == DType::float32 || t == DType::float64 || t == DType::bfloat16 || t == DType::float16;
}
// Floating or complex (NumPy's "inexact"): the dtypes gradients flow through.
constexpr bool is_inexact(DType t) { return is_floating(t) || is_complex(t); }
// Any integer dtype (TF's DType.is_integer).
constexpr bool is_integer(DType t) { return t == DType::int32 || t == DType::int64 || is_storage_int(t); }
// The integers that index (gather, scatter, Python subscripts): kernels read int32 and int64.
constexpr bool is_index_dtype(DType t) { return t == DType::int32 || t == DType::int64; }

// The smallest and largest value of an integer or bool dtype, as doubles (int64's and
// uint64's largest round up to 2^63 and 2^64).
constexpr double min_of(DType t) {
  switch (t) {
    case DType::int8: return -128.0;
    case DType::int16: return -32768.0;
    case DType::int32: return -2147483648.0;
    case DType::int64: return -9223372036854775808.0;
    default: return 0.0;
  }
}
constexpr double max_of(DType t) {
  switch (t) {
    case DType::uint8: return 255.0;
    case DType::int8: return 127.0;
    case DType::int16: return 32767.0;
    case DType::uint16: return 65535.0;
    case DType::int32: return 2147483647.0;
    case DType::uint32: return 4294967295.0;
    case DType::int64: return 9223372036854775807.0;
    case DType::uint64: return 18446744073709551615.0;
    case DType::bool_: return 1.0;
    default: return 0.0;
  }
}

template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::float64; };
template <> struct dtype_of<std::int32_t> { static constexpr DType value = DType::int32; };
template <> struct dtype_of<std::int64_t> { static constexpr DType value = DType::int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::bool_; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::bfloat16; };
template <> struct dtype_of<float16> { static constexpr DType value = DType::float16; };
template <> struct dtype_of<std::string_view> { static constexpr DType value = DType::string; };
template <> struct dtype_of<std::uint8_t> { static constexpr DType value = DType::uint8; };
template <> struct dtype_of<std::int8_t> { static constexpr DType value = DType::int8; };
template <> struct dtype_of<std::int16_t> { static constexpr DType value = DType::int16; };
template <> struct dtype_of<std::uint16_t> { static constexpr DType value = DType::uint16; };
template <> struct dtype_of<std::uint32_t> { static constexpr DType value = DType::uint32; };
template <> struct dtype_of<std::uint64_t> { static constexpr DType value = DType::uint64; };
template <class T> inline constexpr DType dtype_v = dtype_of<std::remove_cv_t<T>>::value;

// The ef::Errors for a kernel asked to compute in bfloat16 (a storage dtype), or on strings.
[[noreturn]] void bfloat16_not_computed(const char* what);
[[noreturn]] void string_not_computed(const char* what);
[[noreturn]] void complex_not_computed(const char* what);

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
    case DType::float16:
    case DType::uint8:
    case DType::int8:
    case DType::int16:
    case DType::uint16:
    case DType::uint32:
    case DType::uint64: bfloat16_not_computed("dispatch_dtype");
    case DType::string: string_not_computed("dispatch_dtype");
    case DType::complex64:
    case DType::complex128: complex_not_computed("dispatch_dtype");
  }
  return fn(float{});
}
// dispatch_dtype with the storage dtypes too (ef::bfloat16, ef::float16, std::uint8_t ..
// std::uint64_t), for code that only moves or converts elements (printing, filling, copying).
template <class Fn>
decltype(auto) dispatch_storage_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::bfloat16: return fn(bfloat16{});
    case DType::float16: return fn(float16{});
    case DType::uint8: return fn(std::uint8_t{});
    case DType::int8: return fn(std::int8_t{});
    case DType::int16: return fn(std::int16_t{});
    case DType::uint16: return fn(std::uint16_t{});
    case DType::uint32: return fn(std::uint32_t{});
    case DType::uint64: return fn(std::uint64_t{});
    default: return dispatch_dtype(t, static_cast<Fn&&>(fn));
  }
}

// The one rule for turning a number into a dtype (ef::cast, ef::full, C++ scalar operands,
// arange): floats to int32 and int64 saturate at the type's limits and NaN becomes 0, instead
// of the undefined behaviour of a plain C++ conversion; floats to TF's narrow and unsigned
// integers wrap as tf.cast does (below); integers to integers wrap (two's complement, as
// TF and NumPy: 300 -> uint8 44); to bool, nonzero is true. (TF's clamping conversion is
// ef::saturate_cast(Tensor, DType), eagerflow/ops/ops.h.)
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
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                       (sizeof(To) < 4 || std::is_unsigned_v<To>)) {
    // TF's narrow and unsigned integers: truncated toward zero through a signed integer (int32
    // for 8 and 16 bits, int64 for uint32 and uint64), whose bits are then kept (-1.0 -> 255,
    // 300.0 -> 44, as tf.cast). NaN and values outside that integer give 0 (TF's x86 kernels
    // give the conversion's "indefinite" bits there, differently from float32 and float64).
    double d = static_cast<double>(v);
    if (d != d) return To(0);
    d = d < 0 ? -__builtin_floor(-d) : __builtin_floor(d);
    if constexpr (sizeof(To) < 4) {
      if (d >= 2147483648.0 || d < -2147483648.0) return To(0);
      return static_cast<To>(static_cast<std::int32_t>(d));
    } else {
      if constexpr (sizeof(To) == 8)
        if (d >= 9223372036854775808.0 && d < 18446744073709551616.0) return static_cast<To>(d);
      if (d >= 9223372036854775808.0 || d < -9223372036854775808.0) return To(0);
      return static_cast<To>(static_cast<std::int64_t>(d));
    }
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
