// Segment reductions as scatters: each row of data is combined into the row of the result that
// its segment id names (src/ops/scatter_nd_op.cpp does the combining and the gradients).
#include "eagerflow/ops/segment.h"

#include <limits>
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/scatter_nd.h"

namespace ef::math {
namespace {

bool known_kind(const std::string& k) {
  return k == "sum" || k == "mean" || k == "max" || k == "min" || k == "prod" || k == "sqrt_n";
}

double lowest(DType t) {
  if (is_unsigned(t)) return 0.0;
  switch (t) {
    case DType::int8: return std::numeric_limits<std::int8_t>::lowest();
    case DType::int16: return std::numeric_limits<std::int16_t>::lowest();
    case DType::float64: return std::numeric_limits<double>::lowest();
    case DType::int32: return std::numeric_limits<std::int32_t>::lowest();
    case DType::int64: return -9007199254740992.0;  // -2^53: exact as a double
    default: return std::numeric_limits<float>::lowest();
  }
}
double highest(DType t) {
  switch (t) {
    case DType::uint8: return std::numeric_limits<std::uint8_t>::max();
    case DType::int8: return std::numeric_limits<std::int8_t>::max();
    case DType::int16: return std::numeric_limits<std::int16_t>::max();
    case DType::uint16: return std::numeric_limits<std::uint16_t>::max();
    case DType::uint32: return std::numeric_limits<std::uint32_t>::max();
    case DType::uint64: return 9007199254740992.0;
    case DType::float64: return std::numeric_limits<double>::max();
    case DType::int32: return std::numeric_limits<std::int32_t>::max();
    case DType::int64: return 9007199254740992.0;
    default: return std::numeric_limits<float>::max();
  }
}

// data rows scattered with `combine` into `base` ([num_segments] + data.shape[r:]). Negative ids
// go to an extra row that is dropped; ids >= num_segments are moved past it, so the scatter's
// range check reports them.
Tensor scatter_rows(Tensor (*combine)(const Tensor&, const Tensor&, const Tensor&), const Tensor& base, const Tensor& data,
                    const Tensor& ids, std::int64_t n) {
  Tensor id64 = cast(ids, DType::int64);
  Tensor moved = where(id64 < 0.0, full_like(id64, static_cast<double>(n)), where(id64 >= static_cast<double>(n), id64 + 1.0, id64));
  std::vector<std::int64_t> extra_dims = base.shape().dims();
  extra_dims[0] = 1;
  Tensor padded = concat({base, zeros(Shape(extra_dims), base.dtype())}, 0);
  Tensor out;
  try {
    out = combine(padded, expand_dims(moved, -1), data);
  } catch (const Error& e) {
    // Only the range check is about the ids (the moved ones are past the extra row); others pass.
    if (std::string(e.what()).find("does not index into") == std::string::npos) throw;
    fail(ErrorCode::invalid_argument, "unsorted_segment", std::string("a segment id is >= num_segments (") + std::to_string(n) + "): " + e.what());
  }
  return slice(out, {0}, {n});
}

}  // namespace

Tensor unsorted_segment_reduce(const std::string& kind, const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments) {
  const std::string op = "unsorted_segment_" + kind;
  if (!known_kind(kind)) fail(op, "kind must be sum, mean, max, min, prod or sqrt_n");
  if (!data.defined() || !segment_ids.defined()) fail(op, "got an undefined tensor");
  if (segment_ids.dtype() != DType::int32 && segment_ids.dtype() != DType::int64)
    fail(kWrongType, op, "segment_ids must be int32 or int64, got " + segment_ids.spec().str());
  if (num_segments < 0) fail(op, "num_segments must be >= 0, got " + std::to_string(num_segments));
  int r = segment_ids.rank();
  bool prefix = r <= data.rank();
  for (int d = 0; prefix && d < r; ++d) prefix = segment_ids.shape()[d] == data.shape()[d];
  if (!prefix) fail(op, "segment_ids " + segment_ids.spec().str() + " must have the shape of data's leading dims: " + data.spec().str());
  std::vector<std::int64_t> out_dims{num_segments};
  out_dims.insert(out_dims.end(), data.shape().begin() + r, data.shape().end());
  Shape out_shape(out_dims);
  DType t = data.dtype();
  if (kind == "sum") return scatter_rows(tensor_scatter_nd_add, zeros(out_shape, t), data, segment_ids, num_segments);
  if (kind == "max") return scatter_rows(tensor_scatter_nd_max, full(out_shape, lowest(t), t), data, segment_ids, num_segments);
  if (kind == "min") return scatter_rows(tensor_scatter_nd_min, full(out_shape, highest(t), t), data, segment_ids, num_segments);
  // The rest from sums: counts per segment broadcast over the trailing dims.
  Tensor counts = scatter_rows(tensor_scatter_nd_add, zeros(Shape{num_segments}, DType::float64),
                               ones(segment_ids.shape(), DType::float64), segment_ids, num_segments);
  std::vector<std::int64_t> count_dims(out_dims.size(), 1);
  count_dims[0] = num_segments;
  Tensor shaped = reshape(counts, Shape(count_dims));
  Tensor per_row = cast(maximum(shaped, ones_like(shaped)), t);
  if (kind == "mean" || kind == "sqrt_n") {
    Tensor sums = scatter_rows(tensor_scatter_nd_add, zeros(out_shape, t), data, segment_ids, num_segments);
    return kind == "mean" ? sums / per_row : sums / sqrt(per_row);
  }
  // prod: exact with zeros and signs: sign * exp(sum log|x|), 0 where a zero is in the segment.
  if (!is_floating(t)) fail(ErrorCode::unimplemented, op, "prod takes floating data, got " + data.spec().str());
  Tensor zero = data == 0.0;
  Tensor safe = where(zero, ones_like(data), abs(data));
  Tensor logs = scatter_rows(tensor_scatter_nd_add, zeros(out_shape, t), log(safe), segment_ids, num_segments);
  Tensor zeros_in = scatter_rows(tensor_scatter_nd_add, zeros(out_shape, t), cast(zero, t), segment_ids, num_segments);
  Tensor negatives = scatter_rows(tensor_scatter_nd_add, zeros(out_shape, t), cast(data < 0.0, t), segment_ids, num_segments);
  Tensor odd = (negatives - floor(negatives * 0.5) * 2.0) > 0.5;
  Tensor magnitude = exp(logs);
  return where(zeros_in > 0.5, zeros_like(magnitude), where(odd, -magnitude, magnitude));
}

Tensor segment_reduce(const std::string& kind, const Tensor& data, const Tensor& segment_ids) {
  const std::string op = "segment_" + kind;
  if (!segment_ids.defined() || segment_ids.rank() != 1) fail(op, "segment_ids must be 1-D");
  if (segment_ids.is_symbolic())
    fail(ErrorCode::unimplemented, op,
         "the number of segments is read from the ids, which are known only when the function runs; "
         "use unsorted_segment_" + kind + " with num_segments inside a traced function");
  std::vector<std::int64_t> ids = cast(segment_ids, DType::int64).to_vector<std::int64_t>();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0) fail(op, "segment ids must be >= 0, got " + std::to_string(ids[i]) + " at " + std::to_string(i));
    if (i && ids[i] < ids[i - 1]) fail(op, "segment ids must be sorted (non-decreasing), got " + std::to_string(ids[i - 1]) + " then " + std::to_string(ids[i]));
  }
  std::int64_t n = ids.empty() ? 0 : ids.back() + 1;
  Tensor out = unsorted_segment_reduce(kind, data, segment_ids, n);
  if (kind != "max" && kind != "min" && kind != "prod") return out;
  // TF's sorted forms leave empty segments at 0.
  Tensor counts = unsorted_segment_reduce("sum", ones(segment_ids.shape(), DType::float64), segment_ids, n);
  std::vector<std::int64_t> dims(static_cast<std::size_t>(out.rank()), 1);
  dims[0] = n;
  return where(reshape(counts, Shape(dims)) > 0.0, out, zeros_like(out));
}

}  // namespace ef::math
