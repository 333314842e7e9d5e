#pragma once
// Rows of tensors without copies, and the slices source (which batch reads a range at a time).
#include "data/dataset_internal.h"

namespace ef::data::detail {

// Rows [begin, end) of t sharing its storage; drop_axis: one row without its batch axis.
Tensor rows_view(const Tensor& t, std::int64_t begin, std::int64_t end, bool drop_axis);
// [parts.size(), ...] from equally shaped parts (one copy).
Tensor stacked(const std::vector<const Tensor*>& parts, const TensorSpec& like);

struct SlicesNode final : Node {
  SlicesNode(ElementSpec s, std::vector<Tensor> t, std::int64_t n);
  std::int64_t cardinality() const override { return rows; }
  std::unique_ptr<IteratorImpl> iterate() const override;
  static const std::vector<Tensor>* tensors_of(const Node& n);  // null when n is not a SlicesNode
  std::vector<Tensor> tensors;
  std::int64_t rows;
};

}  // namespace ef::data::detail
