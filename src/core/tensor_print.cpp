// TF/NumPy-style printing: Tensor([[1. 2.]], shape=(1, 2), dtype=float32), with big tensors
// summarized as "[0. 1. 2. ... 7. 8. 9.]" (NumPy's threshold of 1000 and 3 edge items).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "eagerflow/core/complex_dtype.h"
#include "eagerflow/core/tensor.h"

namespace ef {
namespace {

constexpr std::int64_t kThreshold = 1000;
constexpr std::int64_t kEdge = 3;
// NumPy's limit on dims (64 since NumPy 2). The nested form recurses once per axis and writes
// rank - axis newlines between rows: a deeper tensor prints its values as one flat list (the
// shape is printed beside them), so that printing never overflows the stack or grows
// quadratically in the rank.
constexpr int kMaxNestedRank = 64;

// The digits after the point that the shortest exact form of v needs in scientific notation
// (1.23425e+03: 5), at most 8: NumPy prints every element of a tensor with the largest.
template <class T>
int scientific_digits(T v) {
  if (!std::isfinite(v)) return 0;
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, end);
  auto dot = s.find('.'), e = s.find('e');
  return dot == std::string::npos ? 0 : std::min(8, static_cast<int>(e - dot - 1));
}

std::string format_float(double v, int precision, int scientific_precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[400];
  if (scientific_precision >= 0) {
    // NumPy's form: 1.e-09, 1.5e+300, -1.23425e+03.
    std::snprintf(buf, sizeof buf, "%.*e", scientific_precision, v);
    std::string s = buf;
    if (scientific_precision == 0) s.insert(s.find('e'), ".");
    return s;
  }
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  std::string s = buf;
  // Trim trailing zeros but keep the point: 1.50000 -> 1.5, 2.000 -> 2.
  if (auto dot = s.find('.'); dot != std::string::npos) {
    while (s.size() > dot + 1 && s.back() == '0') s.pop_back();
  }
  return s;
}

// As Python writes a bytes object (b'it\'s' is b"it's"): TF prints string tensors this way.
std::string bytes_literal(std::string_view v) {
  char quote = v.find('\'') != std::string_view::npos && v.find('"') == std::string_view::npos ? '"' : '\'';
  std::string out = "b";
  out += quote;
  static const char* hex = "0123456789abcdef";
  for (unsigned char c : v) {
    if (c == '\\' || c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else out += static_cast<char>(c);
  }
  out += quote;
  return out;
}

struct Formatter {
  const Tensor& t;
  bool summarize;
  Shape shape;  // as printed: t's, or flat when t is deeper than kMaxNestedRank
  int scientific = -1;  // digits after the point in scientific notation; -1: positional
  std::size_t width = 0;                  // ints, bools: right-aligned to this width
  std::size_t int_width = 0, frac_width = 0;  // floats: NumPy aligns on the decimal point
  bool as_tf_print = false;  // strings as tf.print writes them: bare scalars, "quoted" in arrays

  void measure(const std::string& e) {
    if (t.dtype() == DType::string) return;  // NumPy and TF do not pad strings
    if (!is_floating(t.dtype()) || scientific >= 0) { width = std::max(width, e.size()); return; }
    auto dot = e.find('.');
    if (dot == std::string::npos) { int_width = std::max(int_width, e.size()); return; }
    int_width = std::max(int_width, dot);
    frac_width = std::max(frac_width, e.size() - dot - 1);
  }
  std::string aligned(const std::string& e) const {
    if (t.dtype() == DType::string) return e;
    if (!is_floating(t.dtype()) || scientific >= 0) return std::string(width - e.size(), ' ') + e;
    auto dot = e.find('.');
    std::size_t left = dot == std::string::npos ? e.size() : dot;
    std::size_t right = dot == std::string::npos ? 0 : e.size() - dot - 1;
    std::string out = std::string(int_width > left ? int_width - left : 0, ' ') + e;
    std::size_t pad = frac_width - right + (dot == std::string::npos ? 1 : 0);
    return out + std::string(pad, ' ');
  }

  std::string element(std::int64_t flat) const {
    if (is_complex(t.dtype())) {  // NumPy's 1.+2.j
      auto i = static_cast<std::size_t>(flat);
      std::complex<double> v = t.dtype() == DType::complex64 ? std::complex<double>(t.data<std::complex<float>>()[i])
                                                             : t.data<std::complex<double>>()[i];
      return format_float(v.real(), 8, scientific) + (std::signbit(v.imag()) ? "-" : "+") +
             format_float(std::abs(v.imag()), 8, scientific) + "j";
    }
    if (t.dtype() == DType::string) {
      std::string_view v = t.data<std::string_view>()[static_cast<std::size_t>(flat)];
      if (!as_tf_print) return bytes_literal(v);
      return t.rank() == 0 ? std::string(v) : "\"" + std::string(v) + "\"";
    }
    return dispatch_storage_dtype(t.dtype(), [&](auto tag) -> std::string {  // uint8 .. uint64 too
      using T = decltype(tag);
      T v = t.data<T>()[static_cast<std::size_t>(flat)];
      if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
      else if constexpr (std::is_floating_point_v<T>) return format_float(static_cast<double>(v), 8, scientific);
      else if constexpr (std::is_integral_v<T>) return std::to_string(v);  // (int8 as a number, not a char)
      else return format_float(static_cast<double>(static_cast<float>(v)), 8, scientific);  // (16-bit floats: converted before)
    });
  }

  // Calls fn(flat index) for exactly the elements write() prints.
  template <class Fn>
  void visit(int axis, std::int64_t base, Fn&& fn) const {
    const Shape& s = shape;
    if (axis == s.rank()) {
      fn(base);
      return;
    }
    std::int64_t n = s[axis], stride = 1;
    for (int a = axis + 1; a < s.rank(); ++a) stride *= s[a];
    bool cut = summarize && n > 2 * kEdge;
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdge) i = n - kEdge;
      visit(axis + 1, base + i * stride, fn);
    }
  }

  void write(std::ostream& os, int axis, std::int64_t base, int indent) const {
    const Shape& s = shape;
    if (axis == s.rank()) {
      os << aligned(element(base));
      return;
    }
    std::int64_t n = s[axis];
    std::int64_t stride = 1;
    for (int a = axis + 1; a < s.rank(); ++a) stride *= s[a];
    os << '[';
    bool cut = summarize && n > 2 * kEdge;
    for (std::int64_t i = 0; i < n; ++i) {
      if (cut && i == kEdge) {
        i = n - kEdge;
        os << (axis + 1 == s.rank() ? "..." : "...\n" + std::string(indent + 1, ' '));
        os << (axis + 1 == s.rank() ? " " : "");
      }
      write(os, axis + 1, base + i * stride, indent + 1);
      if (i + 1 < n) {
        if (axis + 1 == s.rank()) os << ' ';
        else os << std::string(static_cast<std::size_t>(s.rank() - axis - 1), '\n') << std::string(indent + 1, ' ');
      }
    }
    os << ']';
  }
};

}  // namespace

namespace {
std::string format_with(const Tensor& t, int indent, bool as_tf_print);
}

std::string format_values(const Tensor& t, int indent) { return format_with(t, indent, false); }

namespace detail {
std::string format_for_print(const Tensor& t, int indent) { return format_with(t, indent, true); }
}  // namespace detail

namespace {
std::string format_with(const Tensor& t, int indent, bool as_tf_print) {
  if (t.is_symbolic()) return "<symbolic " + t.spec().str() + ">";
  if (is_storage_float(t.dtype())) {  // printed as its (exact) float32 values
    Tensor f = Tensor::empty(DType::float32, t.shape());
    auto out = f.mutable_data<float>();
    dispatch_storage_dtype(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      auto in = t.data<T>();
      for (std::size_t i = 0; i < in.size(); ++i) out[i] = static_cast<float>(in[i]);
    });
    return format_values(f, indent);
  }
  std::ostringstream os;
  Formatter f{t, t.num_elements() > kThreshold,
              t.rank() > kMaxNestedRank ? Shape{t.num_elements()} : t.shape()};
  f.as_tf_print = as_tf_print;
  // NumPy's rule: scientific notation when the largest printed magnitude is >= 1e8, the
  // smallest nonzero one < 1e-4, or they are more than 1e3 apart.
  if (is_floating(t.dtype()) && t.num_elements() > 0) {
    double lo = INFINITY, hi = 0;
    f.visit(0, 0, [&](std::int64_t i) {
      double v = dispatch_dtype(t.dtype(), [&](auto tag) -> double {
        using T = decltype(tag);
        if constexpr (std::is_floating_point_v<T>) return std::fabs(static_cast<double>(t.data<T>()[static_cast<std::size_t>(i)]));
        else return 0.0;
      });
      if (std::isfinite(v) && v != 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    });
    if (hi >= 1e8 || (hi > 0 && (lo < 1e-4 || hi / lo > 1e3))) {
      int digits = 0;
      f.visit(0, 0, [&](std::int64_t i) {
        dispatch_dtype(t.dtype(), [&](auto tag) {
          using T = decltype(tag);
          if constexpr (std::is_floating_point_v<T>) digits = std::max(digits, scientific_digits(t.data<T>()[static_cast<std::size_t>(i)]));
        });
      });
      f.scientific = digits;
    }
  }
  // Common width over the printed elements, so columns line up like NumPy's.
  if (t.num_elements() > 0) f.visit(0, 0, [&](std::int64_t i) { f.measure(f.element(i)); });
  if (t.num_elements() == 0 && t.rank() > 0) {
    os << "[]";  // NumPy prints any empty array as [] (its shape follows)
  } else if (t.rank() == 0) {
    std::string e = f.element(0);
    if (is_floating(t.dtype()) && !e.empty() && e.back() == '.') e += '0';  // NumPy scalar: 3.0
    os << e;
  } else {
    f.write(os, 0, 0, indent);
  }
  return os.str();
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "Tensor(<undefined>)";
  std::ostringstream os;
  if (is_symbolic()) {
    os << "Tensor(<symbolic>, shape=" << shape().tuple_str() << ", dtype=" << name_of(dtype()) << ")";
    return os.str();
  }
  if (is_keras_tensor()) {
    os << "<KerasTensor shape=" << shape().tuple_str() << ", dtype=" << name_of(dtype()) << ">";
    return os.str();
  }
  os << "Tensor(" << format_values(*this, 7) << ", shape=" << shape().tuple_str() << ", dtype=" << name_of(dtype()) << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ef
