#pragma once
// Shape: a list of dims; a dim of -1 (kDynamic) is unknown until a graph runs.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "eagerflow/core/dtype.h"

namespace ef {

inline constexpr std::int64_t kDynamic = -1;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.size()); }
  explicit Shape(const std::vector<std::int64_t>& dims) { assign(dims.data(), dims.size()); }
  Shape(const Shape&) = default;
  Shape& operator=(const Shape&) = default;
  // A moved-from shape is the scalar shape [] (its heap dims went to the new owner).
  Shape(Shape&& o) noexcept : rank_(o.rank_), heap_(std::move(o.heap_)) {
    std::memcpy(inline_, o.inline_, sizeof inline_);  // not a loop: GCC 12 -Warray-bounds false positive
    o.rank_ = 0;
    o.heap_.clear();
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      rank_ = o.rank_;
      heap_ = std::move(o.heap_);
      for (int i = 0; i < kInline; ++i) inline_[i] = o.inline_[i];
      o.rank_ = 0;
      o.heap_.clear();
    }
    return *this;
  }

  int rank() const { return rank_; }
  std::int64_t operator[](int axis) const { return data()[axis]; }
  std::int64_t& operator[](int axis) { return data()[axis]; }
  std::vector<std::int64_t> dims() const { return {begin(), end()}; }
  bool is_static() const;
  // Product of dims; only meaningful for static shapes.
  std::int64_t num_elements() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  // True when every static dim of `this` equals the concrete dim of `concrete`.
  bool accepts(const Shape& concrete) const;
  const std::int64_t* begin() const { return data(); }
  const std::int64_t* end() const { return data() + rank_; }

  std::string str() const;         // "[60,28,28]", "[?,28,28]"
  std::string tuple_str() const;   // "(60, 28, 28)" like TF's shape=(...)

 private:
  // Shapes are copied into every tensor and spec: up to kInline dims live inline, so copying
  // one does not allocate.
  static constexpr int kInline = 6;
  void assign(const std::int64_t* d, std::size_t n) {
    rank_ = static_cast<int>(n);
    if (rank_ > kInline) heap_.assign(d, d + n);
    else
      for (std::size_t i = 0; i < n; ++i) inline_[i] = d[i];
  }
  const std::int64_t* data() const { return rank_ > kInline ? heap_.data() : inline_; }
  std::int64_t* data() { return rank_ > kInline ? heap_.data() : inline_; }

  int rank_ = 0;
  std::int64_t inline_[kInline] = {};
  std::vector<std::int64_t> heap_;
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
