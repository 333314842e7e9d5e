#include "eagerflow/core/string_tensor.h"

#include <algorithm>

namespace ef {

void StringTensorBuilder::append(std::string_view s) {
  spans_.emplace_back(bytes_.size(), s.size());
  bytes_.append(s);
}

Tensor StringTensorBuilder::finish(const Shape& shape) && {
  if (!shape.is_static() || static_cast<std::int64_t>(spans_.size()) != shape.num_elements())
    fail("string_tensor", std::to_string(spans_.size()) + " strings do not fill shape " + shape.str());
  Tensor t = Tensor::empty(DType::string, shape);
  if (spans_.empty()) return t;
  // The views are made only now: appending may have moved the buffer.
  auto owner = std::make_shared<const std::string>(std::move(bytes_));
  auto* out = static_cast<std::string_view*>(t.impl().storage->data);
  for (std::size_t i = 0; i < spans_.size(); ++i) out[i] = std::string_view(owner->data() + spans_[i].first, spans_[i].second);
  t.impl().storage->string_owners.push_back(std::move(owner));
  return t;
}

Tensor string_tensor(const std::vector<std::string>& values, const Shape& shape) {
  StringTensorBuilder b(values.size());
  for (const auto& v : values) b.append(v);
  return std::move(b).finish(shape);
}

Tensor string_scalar(std::string_view value) {
  StringTensorBuilder b(1);
  b.append(value);
  return std::move(b).finish(Shape{});
}

std::vector<std::string> string_values(const Tensor& t) {
  auto d = t.data<std::string_view>();
  return std::vector<std::string>(d.begin(), d.end());
}

namespace detail {

void keep_string_bytes(std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  for (const Tensor& o : outputs) {
    if (!o.defined() || o.dtype() != DType::string || !o.impl().storage) continue;
    Storage& to = *o.impl().storage;
    // An output that is a view of an input holds only that input's elements, and its storage
    // may be shared (other threads may read it): it is left as it is.
    bool view = std::any_of(inputs.begin(), inputs.end(), [&](const Tensor& i) {
      return i.defined() && i.impl().storage.get() == &to;
    });
    if (view) continue;
    for (const Tensor& i : inputs) {
      if (!i.defined() || i.dtype() != DType::string || !i.impl().storage) continue;
      const Storage& from = *i.impl().storage;
      for (const auto& owner : from.string_owners)
        if (std::find(to.string_owners.begin(), to.string_owners.end(), owner) == to.string_owners.end())
          to.string_owners.push_back(owner);
    }
  }
}

void strings_not_taken(const char* op, const std::string& inputs) {
  fail(kWrongType, op,
       "does not take string tensors, got " + inputs +
           " (string tensors go to the ef::strings functions, and to the ops that move elements: reshape, "
           "transpose, slice, concat, stack, gather; ef::strings::to_number converts)");
}

}  // namespace detail
}  // namespace ef
