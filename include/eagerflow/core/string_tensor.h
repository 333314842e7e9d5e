#pragma once
// String tensors (DType::string, TF's tf.string): each element is a std::string_view into byte
// buffers the tensor's storage keeps alive (Storage::string_owners). Elements are 16 trivially
// copyable bytes, so the ops that move elements (reshape, transpose, slice, concat, gather) copy
// them as they copy any other dtype; the one dispatch point then gives each string output the
// owners of its string inputs (detail::keep_string_bytes). Ops that make new strings write them
// with a StringTensorBuilder.
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

// Collects strings (copied into one buffer) and makes the string tensor that holds them.
class StringTensorBuilder {
 public:
  StringTensorBuilder() = default;
  explicit StringTensorBuilder(std::size_t count) { spans_.reserve(count); }
  void append(std::string_view s);
  std::size_t size() const { return spans_.size(); }
  // The tensor of the appended strings in order; an ef::Error when their count does not fill `shape`.
  Tensor finish(const Shape& shape) &&;

 private:
  std::string bytes_;
  std::vector<std::pair<std::size_t, std::size_t>> spans_;  // (offset, length) into bytes_
};

Tensor string_tensor(const std::vector<std::string>& values, const Shape& shape);
inline Tensor string_tensor(const std::vector<std::string>& values) {
  return string_tensor(values, Shape{static_cast<std::int64_t>(values.size())});
}
Tensor string_scalar(std::string_view value);
// The elements of a concrete string tensor, copied (row-major).
std::vector<std::string> string_values(const Tensor& t);

namespace detail {
// Gives each concrete string output the byte owners of the string inputs (its elements may be
// views copied from theirs). Called after every kernel, eager or replayed.
void keep_string_bytes(std::span<const Tensor> inputs, std::span<const Tensor> outputs);
// The ef::Error for an op that does not take string tensors.
[[noreturn]] void strings_not_taken(const char* op, const std::string& inputs);
}  // namespace detail

}  // namespace ef
