// TF's array functions composed of ops: slices, gathers, comparisons. The value-dependent ones
// read their input on the host, which a trace cannot do.
#include "eagerflow/ops/array_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/scatter_nd.h"

namespace ef {
namespace {

std::int64_t static_dim(const Tensor& x, int axis, const char* op) {
  std::int64_t d = x.shape()[axis];
  if (d == kDynamic) fail(ErrorCode::unimplemented, op, "needs a known size along axis " + std::to_string(axis) + ", got " + x.spec().str());
  return d;
}

void eager_only(const Tensor& x, const char* op, const char* alternative) {
  if (x.is_symbolic())
    fail(ErrorCode::unimplemented, op,
         std::string("its result's shape depends on the values, which a traced function knows only when it runs; ") + alternative);
}

// x[begin:end] along axis (Python-style bounds).
Tensor slice_axis(const Tensor& x, int axis, std::int64_t begin, std::int64_t end) {
  std::vector<std::int64_t> b(static_cast<std::size_t>(x.rank()), 0), e(static_cast<std::size_t>(x.rank()));
  for (int d = 0; d < x.rank(); ++d) e[static_cast<std::size_t>(d)] = x.shape()[d] == kDynamic ? std::numeric_limits<std::int64_t>::max() : x.shape()[d];
  b[static_cast<std::size_t>(axis)] = begin;
  e[static_cast<std::size_t>(axis)] = end;
  return slice(x, b, e);
}

}  // namespace

Tensor reverse(const Tensor& x, const std::vector<int>& axes) {
  Tensor y = x;
  std::vector<int> seen;
  for (int a : axes) {
    int ax = normalize_axis(a, x.rank(), "reverse");
    if (std::find(seen.begin(), seen.end(), ax) != seen.end()) fail("reverse", "axis " + std::to_string(a) + " is given twice");
    seen.push_back(ax);
    std::int64_t n = static_dim(x, ax, "reverse");
    y = gather(y, arange(static_cast<double>(n - 1), -1.0, -1.0, DType::int64), ax);
  }
  return y;
}

Tensor roll(const Tensor& x, const std::vector<std::int64_t>& shifts, const std::vector<int>& axes) {
  if (shifts.size() != axes.size()) fail("roll", "shift and axis must have the same length");
  Tensor y = x;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    int ax = normalize_axis(axes[i], x.rank(), "roll");
    std::int64_t n = static_dim(x, ax, "roll");
    if (n == 0) continue;
    std::int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    y = concat({slice_axis(y, ax, n - s, n), slice_axis(y, ax, 0, n - s)}, ax);
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, std::int64_t num, int axis) {
  int ax = normalize_axis(axis, x.rank(), "split");
  std::int64_t n = static_dim(x, ax, "split");
  if (num <= 0 || n % num != 0)
    fail("split", "cannot split dim " + std::to_string(n) + " of " + x.spec().str() + " into " + std::to_string(num) + " equal parts");
  return split(x, std::vector<std::int64_t>(static_cast<std::size_t>(num), n / num), ax);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, int axis) {
  int ax = normalize_axis(axis, x.rank(), "split");
  std::int64_t n = static_dim(x, ax, "split");
  std::vector<std::int64_t> s = sizes;
  std::int64_t known = 0, unknown = 0;
  for (std::int64_t v : s) {
    if (v == -1) ++unknown;
    else if (v < 0) fail("split", "sizes must be >= 0 (or one -1), got " + std::to_string(v));
    else known += v;
  }
  if (unknown > 1) fail("split", "at most one size can be -1");
  for (std::int64_t& v : s)
    if (v == -1) v = n - known;
  std::int64_t total = 0;
  for (std::int64_t v : s) total += v;
  if (total != n || (unknown && n - known < 0))
    fail("split", "sizes add up to " + std::to_string(total) + ", not dim " + std::to_string(n) + " of " + x.spec().str());
  std::vector<Tensor> out;
  std::int64_t at = 0;
  for (std::int64_t v : s) {
    out.push_back(slice_axis(x, ax, at, at + v));
    at += v;
  }
  return out;
}

std::vector<Tensor> unstack(const Tensor& x, int axis) {
  int ax = normalize_axis(axis, x.rank(), "unstack");
  std::int64_t n = static_dim(x, ax, "unstack");
  std::vector<Tensor> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(squeeze(slice_axis(x, ax, i, i + 1), {ax}));
  return out;
}

Tensor sequence_mask(const Tensor& lengths, std::int64_t maxlen, DType dtype) {
  if (!is_integer(lengths.dtype())) fail(kWrongType, "sequence_mask", "lengths must be integers, got " + lengths.spec().str());
  if (maxlen < 0) {
    eager_only(lengths, "sequence_mask", "give maxlen");
    std::vector<std::int64_t> v = cast(lengths, DType::int64).to_vector<std::int64_t>();
    maxlen = v.empty() ? 0 : std::max<std::int64_t>(0, *std::max_element(v.begin(), v.end()));
  }
  Tensor positions = arange(maxlen, DType::int64);
  Tensor mask = less(positions, expand_dims(cast(lengths, DType::int64), -1));
  return dtype == DType::bool_ ? mask : cast(mask, dtype);
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool right, DType out_type) {
  if (sorted_sequence.rank() < 1 || values.rank() != sorted_sequence.rank())
    fail("searchsorted", "sorted_sequence and values must have the same rank >= 1 (rows in the last axis), got " +
                             sorted_sequence.spec().str() + " and " + values.spec().str());
  // count of elements < v (left) or <= v (right) in the row: a comparison matrix summed.
  Tensor seq = expand_dims(sorted_sequence, -2);  // [..., 1, n]
  Tensor v = expand_dims(values, -1);               // [..., m, 1]
  Tensor before = right ? less_equal(seq, v) : less(seq, v);
  return cast(sum(cast(before, DType::int64), {-1}), out_type);
}

Tensor boolean_mask(const Tensor& x, const Tensor& mask, int axis) {
  eager_only(mask, "boolean_mask", "multiply by the mask or use ef::where instead");
  if (mask.dtype() != DType::bool_) fail(kWrongType, "boolean_mask", "mask must be bool, got " + mask.spec().str());
  int ax = normalize_axis(axis, x.rank(), "boolean_mask");
  int k = mask.rank();
  if (k == 0 || ax + k > x.rank()) fail("boolean_mask", "mask " + mask.spec().str() + " does not fit " + x.spec().str() + " at axis " + std::to_string(axis));
  for (int d = 0; d < k; ++d)
    if (mask.shape()[d] != x.shape()[ax + d])
      fail("boolean_mask", "mask " + mask.spec().str() + " must match dims " + std::to_string(ax) + ".." + std::to_string(ax + k - 1) + " of " + x.spec().str());
  // Flatten the masked dims into one, then gather the kept positions.
  std::vector<std::int64_t> dims(x.shape().begin(), x.shape().begin() + ax);
  std::int64_t flat = 1;
  for (int d = 0; d < k; ++d) flat *= x.shape()[ax + d];
  dims.push_back(flat);
  dims.insert(dims.end(), x.shape().begin() + ax + k, x.shape().end());
  std::vector<bool> m = mask.to_vector<bool>();
  std::vector<std::int64_t> kept;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i]) kept.push_back(static_cast<std::int64_t>(i));
  return gather(reshape(x, Shape(dims)), tensor(kept, Shape{static_cast<std::int64_t>(kept.size())}), ax);
}

Tensor where_coordinates(const Tensor& condition) {
  eager_only(condition, "where", "use the three-argument where(condition, x, y)");
  std::vector<bool> m = cast(condition, DType::bool_).to_vector<bool>();
  std::vector<std::int64_t> coords;
  std::int64_t rows = 0;
  const Shape& s = condition.shape();
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (!m[i]) continue;
    ++rows;
    std::vector<std::int64_t> c(static_cast<std::size_t>(s.rank()));
    std::int64_t rest = static_cast<std::int64_t>(i);
    for (int d = s.rank() - 1; d >= 0; --d) {
      c[static_cast<std::size_t>(d)] = rest % s[d];
      rest /= s[d];
    }
    coords.insert(coords.end(), c.begin(), c.end());
  }
  return tensor(coords, Shape{rows, s.rank()});
}

Unique unique(const Tensor& x, DType out_idx) {
  eager_only(x, "unique", "there is no traced form");
  if (x.rank() != 1) fail("unique", "takes a 1-D tensor, got " + x.spec().str());
  if (out_idx != DType::int32 && out_idx != DType::int64) fail(kWrongType, "unique", "out_idx must be int32 or int64");
  std::vector<double> v = cast(x, DType::float64).to_vector<double>();
  if (x.dtype() == DType::int64) {  // exact keys beyond 2^53
    std::vector<std::int64_t> iv = x.to_vector<std::int64_t>();
    v.assign(iv.begin(), iv.end());
  }
  std::map<double, std::int64_t> first;
  std::vector<std::int64_t> order, idx, count;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::int64_t at = static_cast<std::int64_t>(order.size());
    if (!std::isnan(v[i])) {  // each NaN is its own value (NaN != NaN), and no map key
      auto [it, fresh] = first.emplace(v[i], at);
      at = it->second;
    }
    if (at == static_cast<std::int64_t>(order.size())) {
      order.push_back(static_cast<std::int64_t>(i));
      count.push_back(0);
    }
    idx.push_back(at);
    ++count[static_cast<std::size_t>(at)];
  }
  auto n = static_cast<std::int64_t>(order.size());
  Tensor y = gather(x, tensor(order, Shape{n}), 0);
  return {y, cast(tensor(idx, Shape{static_cast<std::int64_t>(idx.size())}), out_idx), cast(tensor(count, Shape{n}), out_idx)};
}

}  // namespace ef
