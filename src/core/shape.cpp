#include "eagerflow/core/shape.h"

#include <limits>

#include "eagerflow/core/error.h"

namespace ef {

std::string_view name_of(DType t) {
  switch (t) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bool_: return "bool";
    case DType::bfloat16: return "bfloat16";
    case DType::float16: return "float16";
    case DType::string: return "string";
    case DType::uint8: return "uint8";
    case DType::int8: return "int8";
    case DType::int16: return "int16";
    case DType::uint16: return "uint16";
    case DType::uint32: return "uint32";
    case DType::uint64: return "uint64";
    case DType::complex64: return "complex64";
    case DType::complex128: return "complex128";
  }
  return "?";
}

std::string_view short_name_of(DType t) {
  switch (t) {
    case DType::float32: return "f32";
    case DType::float64: return "f64";
    case DType::int32: return "i32";
    case DType::int64: return "i64";
    case DType::bool_: return "bool";
    case DType::bfloat16: return "bf16";
    case DType::float16: return "f16";
    case DType::string: return "str";
    case DType::uint8: return "u8";
    case DType::int8: return "i8";
    case DType::int16: return "i16";
    case DType::uint16: return "u16";
    case DType::uint32: return "u32";
    case DType::uint64: return "u64";
    case DType::complex64: return "c64";
    case DType::complex128: return "c128";
  }
  return "?";
}

std::optional<DType> dtype_named(std::string_view name) {
  for (DType t : all_dtypes)
    if (name == name_of(t) || name == short_name_of(t)) return t;
  return std::nullopt;
}

void string_not_computed(const char* what) {
  fail(kWrongType, what, "does not take string tensors (the ef::strings functions do; ef::strings::to_number converts)");
}

void complex_not_computed(const char* what) {
  fail(kWrongType, what,
       "does not take complex tensors (the complex ops do: ef::real, ef::imag, ef::abs, ef::conj and the "
       "arithmetic of eagerflow/ops/complex.h)");
}

void bfloat16_not_computed(const char* what) {
  fail(kWrongType, what,
       "bfloat16, float16 and the integers other than int32 and int64 are storage dtypes: this kernel does not "
       "compute in them (ef::cast to float32, int32 or int64)");
}

bool Shape::is_static() const {
  for (auto d : *this) if (d < 0) return false;
  return true;
}

std::int64_t Shape::num_elements() const {
  // A zero dim makes an empty tensor whatever the other dims are ([2^60, 0] is valid); the
  // product saturates instead of overflowing.
  for (auto d : *this)
    if (d == 0) return 0;
  std::int64_t n = 1;
  for (auto d : *this)
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<std::int64_t>::max();
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if ((*this)[i] != o[i]) return false;
  return true;
}

bool Shape::accepts(const Shape& concrete) const {
  if (concrete.rank() != rank()) return false;
  for (int i = 0; i < rank(); ++i)
    if ((*this)[i] != kDynamic && (*this)[i] != concrete[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    s += (*this)[i] == kDynamic ? "?" : std::to_string((*this)[i]);
  }
  return s + "]";
}

std::string Shape::tuple_str() const {
  std::string s = "(";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += (*this)[i] == kDynamic ? "None" : std::to_string((*this)[i]);
  }
  if (rank_ == 1) s += ",";
  return s + ")";
}

int normalize_axis(int axis, int rank, const char* op) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(op, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                 std::to_string(rank));
  return a;
}

std::string TensorSpec::str() const { return std::string(name_of(dtype)) + shape.str(); }

}  // namespace ef
