#pragma once
// Shape: a list of dims; a dim of -1 (kDynamic) is unknown until a graph runs.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "eagerflow/core/dtype.h"

namespace ef {

inline constexpr std::int64_t kDynamic = -1;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  int rank() const { return static_cast<int>(dims_.size()); }
  std::int64_t operator[](int axis) const { return dims_[static_cast<std::size_t>(axis)]; }
  std::int64_t& operator[](int axis) { return dims_[static_cast<std::size_t>(axis)]; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::vector<std::int64_t>& dims() { return dims_; }
  bool is_static() const;
  // Product of dims; only meaningful for static shapes.
  std::int64_t num_elements() const;
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }
  // True when every static dim of `this` equals the concrete dim of `concrete`.
  bool accepts(const Shape& concrete) const;
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }

  std::string str() const;         // "[60,28,28]", "[?,28,28]"
  std::string tuple_str() const;   // "(60, 28, 28)" like TF's shape=(...)

 private:
  std::vector<std::int64_t> dims_;
};

// Normalizes a possibly negative axis for a tensor of `rank`; throws naming `op`.
int normalize_axis(int axis, int rank, const char* op);

struct TensorSpec {
  DType dtype = DType::float32;
  Shape shape;
  std::string name;  // optional; used by input signatures and printing
  bool operator==(const TensorSpec& o) const { return dtype == o.dtype && shape == o.shape; }
  std::string str() const;  // "float32[60,28,28]"
};

}  // namespace ef
