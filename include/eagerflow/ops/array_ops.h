#pragma once
// TensorFlow's array functions that are compositions of ops (src/ops/array_ops.cpp): reverse,
// roll, split, unstack, sequence_mask, searchsorted; and those whose result shape depends on
// the values (boolean_mask, where's coordinates, unique), which run eagerly only (inside a
// trace they are an UNIMPLEMENTED error naming the traced alternative). Include this header on
// its own (it is not part of eagerflow.h).
#include <cstdint>
#include <optional>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

Tensor reverse(const Tensor& x, const std::vector<int>& axes);
// Elements shifted by shifts[i] along axes[i], wrapping around (negative: towards the front).
Tensor roll(const Tensor& x, const std::vector<std::int64_t>& shifts, const std::vector<int>& axes);
// Equal parts (num must divide the dim) or parts of the given sizes (one may be -1: the rest).
std::vector<Tensor> split(const Tensor& x, std::int64_t num, int axis = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, int axis = 0);
std::vector<Tensor> unstack(const Tensor& x, int axis = 0);
// [..., maxlen]: position j < lengths[...]; maxlen < 0: the largest length (read eagerly).
Tensor sequence_mask(const Tensor& lengths, std::int64_t maxlen = -1, DType dtype = DType::bool_);
// Per row of the last axis: the index where each value would be inserted to keep the sequence
// sorted (before equal elements for "left", after them for "right").
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right = false, DType out_type = DType::int32);
// Eager only: the elements (or slices along `axis`) where mask is true.
Tensor boolean_mask(const Tensor& x, const Tensor& mask, int axis = 0);
// Eager only: int64 coordinates [N, rank] of the true (non-zero) elements, in row-major order.
Tensor where_coordinates(const Tensor& condition);
// Eager only: the distinct elements of a 1-D tensor in order of first appearance, the index of
// each element's value among them, and how often each appears.
struct Unique {
  Tensor y, idx, count;
};
Unique unique(const Tensor& x, DType out_idx = DType::int32);

}  // namespace ef
