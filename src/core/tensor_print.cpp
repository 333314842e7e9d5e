// TF/NumPy-style printing: Tensor([[1. 2.]], shape=(1, 2), dtype=float32), with big tensors
// summarized as "[0. 1. 2. ... 7. 8. 9.]" (NumPy's threshold of 1000 and 3 edge items).
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "eagerflow/core/tensor.h"

namespace ef {
namespace {

constexpr std::int64_t kThreshold = 1000;
constexpr std::int64_t kEdge = 3;

std::string format_float(double v, int precision) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  std::string s = buf;
  // Trim trailing zeros but keep the point: 1.50000 -> 1.5, 2.000 -> 2.
  if (auto dot = s.find('.'); dot != std::string::npos) {
    while (s.size() > dot + 1 && s.back() == '0') s.pop_back();
  }
  return s;
}

struct Formatter {
  const Tensor& t;
  bool summarize;
  std::vector<std::string> cells;  // formatted elements, row-major (all of them, or edges)
  std::size_t width = 0;

  std::string element(std::int64_t flat) const {
    return dispatch_dtype(t.dtype(), [&](auto tag) -> std::string {
      using T = decltype(tag);
      T v = t.data<T>()[static_cast<std::size_t>(flat)];
      if constexpr (std::is_same_v<T, bool>) return v ? "True" : "False";
      else if constexpr (std::is_floating_point_v<T>) return format_float(static_cast<double>(v), 8);
      else return std::to_string(v);
    });
  }

  void write(std::ostream& os, int axis, std::int64_t base, int indent) const {
    const Shape& s = t.shape();
    if (axis == s.rank()) {
      std::string e = element(base);
      if (is_floating(t.dtype())) os << e << std::string(width - e.size(), ' ');
      else os << std::string(width - e.size(), ' ') << e;
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

std::string Tensor::str() const {
  std::ostringstream os;
  if (!defined()) return "Tensor(<undefined>)";
  if (is_symbolic()) {
    os << "Tensor(<symbolic>, shape=" << shape().tuple_str() << ", dtype=" << name_of(dtype()) << ")";
    return os.str();
  }
  Formatter f{*this, num_elements() > kThreshold, {}, 0};
  // Common width over all printed elements, so columns line up like NumPy's.
  std::int64_t n = num_elements();
  for (std::int64_t i = 0; i < n; ++i) {
    if (f.summarize && n > 2 * kThreshold && i % 97 != 0 && i > 64 && i < n - 64) continue;
    f.width = std::max(f.width, f.element(i).size());
  }
  os << "Tensor(";
  if (rank() == 0) {
    std::string e = f.element(0);
    if (is_floating(dtype()) && !e.empty() && e.back() == '.') e += '0';  // NumPy scalar: 3.0
    os << e;
  } else {
    f.write(os, 0, 0, 7);
  }
  os << ", shape=" << shape().tuple_str() << ", dtype=" << name_of(dtype()) << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ef
