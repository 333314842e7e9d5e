#pragma once
// TF's gather_nd, scatter_nd and tensor_scatter_nd_* (src/ops/scatter_nd_op.cpp): index rows,
// the indices' last dim k of coordinates each, address slices tensor[i0, ..., ik-1, ...].
// A coordinate out of range is an INVALID_ARGUMENT error; all of them differentiate.
#include "eagerflow/core/tensor.h"

namespace ef {

// params' slices at the index rows: shape indices.shape[:-1] + params.shape[k:]; the first
// batch_dims dims of params and indices are shared (each batch gathers from its own params).
Tensor gather_nd(const Tensor& params, const Tensor& indices, int batch_dims = 0);
// A copy of `tensor` with `updates` (shape indices.shape[:-1] + tensor.shape[k:]) written, added,
// subtracted, min-ed or max-ed at the index rows, repeated rows applied in order.
Tensor tensor_scatter_nd_update(const Tensor& tensor, const Tensor& indices, const Tensor& updates);
Tensor tensor_scatter_nd_add(const Tensor& tensor, const Tensor& indices, const Tensor& updates);
Tensor tensor_scatter_nd_sub(const Tensor& tensor, const Tensor& indices, const Tensor& updates);
Tensor tensor_scatter_nd_min(const Tensor& tensor, const Tensor& indices, const Tensor& updates);
Tensor tensor_scatter_nd_max(const Tensor& tensor, const Tensor& indices, const Tensor& updates);
// Zeros of `shape` with `updates` added at the index rows (repeated rows sum).
Tensor scatter_nd(const Tensor& indices, const Tensor& updates, const Shape& shape);

}  // namespace ef
