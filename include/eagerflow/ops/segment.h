#pragma once
// TF's segment reductions (tf.math.segment_* and unsorted_segment_*), composed of the
// tensor_scatter_nd ops (src/ops/segment.cpp): they trace, differentiate and vmap as those do.
// segment_ids [d0, ..., dr-1] label the leading dims of data; the result is
// [num_segments] + data.shape[r:]. Include this header on its own (not part of eagerflow.h).
#include <cstdint>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::math {

// kind: "sum", "mean", "max", "min", "prod" or "sqrt_n". Negative ids are dropped; an id >=
// num_segments is an INVALID_ARGUMENT error. Empty segments hold 0 (sum, mean, sqrt_n), 1 (prod),
// the dtype's lowest value (max) or its highest (min), as TF's.
Tensor unsorted_segment_reduce(const std::string& kind, const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments);
// The sorted form: 1-D ids, non-decreasing; num_segments = the last id + 1 (read from the ids,
// so they must be concrete: in a trace, use the unsorted form with num_segments). Empty segments
// hold 0 for every kind, as TF's.
Tensor segment_reduce(const std::string& kind, const Tensor& data, const Tensor& segment_ids);

}  // namespace ef::math
