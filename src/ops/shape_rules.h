#pragma once
// Shape rules shared by several ops.
#include <span>
#include <vector>

#include "eagerflow/ops/primitive.h"

namespace ef {

// NumPy broadcasting; a dynamic dim against a static one takes the static one unless that is 1.
// Returns false when the shapes cannot broadcast.
bool try_broadcast(std::span<const Shape> shapes, Shape& out);
// The same for an op's inputs; throws naming the op and the input specs.
Shape broadcast_shapes(const Primitive& op, std::span<const Tensor> inputs);
// Which axes of a rank-`rank` input a reduction over `axes` removes (no axes: all of them);
// an axis out of range or listed twice throws naming the op.
std::vector<bool> reduced_axes_mask(const std::vector<int>& axes, int rank, const char* op);

}  // namespace ef
