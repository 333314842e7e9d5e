// gather_nd and tensor_scatter_nd_{update,add,sub,min,max}: index rows of k coordinates address
// slices of a tensor's trailing dims. scatter_nd is tensor_scatter_nd_add into zeros; batch_dims
// of gather_nd prepends the batch coordinates to the index rows.
#include "ops/scatter_nd_op.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/scatter_nd.h"
#include "ops/op_factories.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

bool dims_differ(std::int64_t a, std::int64_t b) { return a != b && a != kDynamic && b != kDynamic; }

std::string dims_text(const Shape& s, int upto) {
  std::string t = "[";
  for (int d = 0; d < upto; ++d) t += (d ? ", " : "") + std::to_string(s[d]);
  return t + "]";
}

// The index depth k (indices' last dim), checked against the indexed tensor's rank.
int index_depth(const char* op, const Tensor& indices, const Tensor& x) {
  if (indices.dtype() != DType::int32 && indices.dtype() != DType::int64)
    fail(kWrongType, op, "indices must be int32 or int64, got " + indices.spec().str());
  if (indices.rank() < 1) fail(op, "indices must have rank >= 1 (rows of coordinates), got " + indices.spec().str());
  std::int64_t k = indices.shape()[indices.rank() - 1];
  if (k == kDynamic) fail(ErrorCode::unimplemented, op, "the indices' last dim (the index depth) must be known: " + indices.spec().str());
  if (k > x.rank())
    fail(op, "index depth " + std::to_string(k) + " (the indices' last dim) is more than the rank of " + x.spec().str());
  return static_cast<int>(k);
}

// indices.shape[:-1] + x.shape[k:]: the shape of the gathered slices (and of the updates).
std::vector<std::int64_t> slices_shape(const Tensor& indices, const Shape& x, int k) {
  std::vector<std::int64_t> dims(indices.shape().begin(), indices.shape().end() - 1);
  dims.insert(dims.end(), x.begin() + k, x.end());
  return dims;
}

// Each index row's offset into x, in slices of prod(x.shape[k:]) elements; a coordinate out of
// range fails with the row, as TF's message ("indices[1] = [5, 0] does not index into param
// shape [4, 3]").
std::vector<std::int64_t> row_offsets(const char* op, const Tensor& indices, const Shape& x, int k, const char* what) {
  std::int64_t rows = 1;  // prod(indices.shape[:-1])
  for (int d = 0; d < indices.rank() - 1; ++d) rows *= indices.shape()[d];
  std::vector<std::int64_t> strides(static_cast<std::size_t>(k), 1);
  for (int d = k - 2; d >= 0; --d) strides[static_cast<std::size_t>(d)] = strides[static_cast<std::size_t>(d) + 1] * x[d + 1];
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(rows));
  auto coordinate = [&](std::int64_t i) {
    return indices.dtype() == DType::int32 ? std::int64_t{indices.data<std::int32_t>()[static_cast<std::size_t>(i)]}
                                           : indices.data<std::int64_t>()[static_cast<std::size_t>(i)];
  };
  for (std::int64_t r = 0; r < rows; ++r) {
    std::int64_t at = 0;
    for (int j = 0; j < k; ++j) {
      std::int64_t v = coordinate(r * k + j);
      if (v < 0 || v >= x[j]) {
        std::string row = "[";
        for (int c = 0; c < k; ++c) row += (c ? ", " : "") + std::to_string(coordinate(r * k + c));
        fail(op, "indices[" + std::to_string(r) + "] = " + row + "] does not index into " + what + " shape " + dims_text(x, x.rank()));
      }
      at += v * strides[static_cast<std::size_t>(j)];
    }
    offsets[static_cast<std::size_t>(r)] = at;
  }
  return offsets;
}

std::int64_t slice_size(const Shape& x, int k) {
  std::int64_t n = 1;
  for (int d = k; d < x.rank(); ++d) n *= x[d];
  return n;
}

constexpr const char* kModeNames[] = {"tensor_scatter_nd_update", "tensor_scatter_nd_add", "tensor_scatter_nd_sub",
                                      "tensor_scatter_nd_min", "tensor_scatter_nd_max"};

}  // namespace

// ---------------------------------------------------------------- gather_nd
std::vector<TensorSpec> GatherNd::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  int k = index_depth(name(), in[1], in[0]);
  return {{in[0].dtype(), Shape(slices_shape(in[1], in[0].shape(), k)), {}}};
}

void GatherNd::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  int k = index_depth(name(), in[1], x);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::vector<std::int64_t> offsets = row_offsets(name(), in[1], x.shape(), k, "param");
  std::size_t bytes = static_cast<std::size_t>(slice_size(x.shape(), k)) * size_of(x.dtype());
  if (out[0].num_elements() == 0 || bytes == 0) return;
  const char* p = static_cast<const char*>(x.raw_data());
  char* o = static_cast<char*>(out[0].raw_mutable_data());
  for (std::size_t r = 0; r < offsets.size(); ++r) std::memcpy(o + r * bytes, p + static_cast<std::size_t>(offsets[r]) * bytes, bytes);
}

std::vector<Tensor> GatherNd::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                  const std::vector<bool>&) const {
  return {tensor_scatter_nd_add(zeros_like(in[0]), in[1], cot[0]), Tensor()};
}

// ---------------------------------------------------------------- tensor_scatter_nd
const char* TensorScatterNd::name() const { return kModeNames[static_cast<int>(mode_)]; }
OpParams TensorScatterNd::parameters() const { return OpParams(); }

std::vector<TensorSpec> TensorScatterNd::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  const Tensor &x = in[0], &updates = in[2];
  int k = index_depth(name(), in[1], x);
  if (updates.dtype() != x.dtype())
    fail(kWrongType, name(), "updates " + updates.spec().str() + " must have the tensor's dtype: " + x.spec().str());
  if (x.dtype() == DType::bool_ && mode_ != ScatterMode::update)
    fail(kWrongType, name(), "bool tensors take only tensor_scatter_nd_update, got " + x.spec().str());
  std::vector<std::int64_t> want = slices_shape(in[1], x.shape(), k);
  bool fits = updates.rank() == static_cast<int>(want.size());
  for (int d = 0; fits && d < updates.rank(); ++d) fits = !dims_differ(updates.shape()[d], want[static_cast<std::size_t>(d)]);
  if (!fits)
    fail(name(), "updates " + updates.spec().str() + " must have shape indices.shape[:-1] + tensor.shape[" + std::to_string(k) +
                     ":] = " + Shape(want).str() + " (indices " + in[1].spec().str() + ", tensor " + x.spec().str() + ")");
  return {{x.dtype(), x.shape(), {}}};
}

void TensorScatterNd::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor &x = in[0], &updates = in[2];
  int k = index_depth(name(), in[1], x);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::size_t total = static_cast<std::size_t>(x.num_elements()) * size_of(x.dtype());
  if (total) std::memcpy(out[0].raw_mutable_data(), x.raw_data(), total);
  std::vector<std::int64_t> offsets = row_offsets(name(), in[1], x.shape(), k, "tensor");
  std::int64_t n = slice_size(x.shape(), k);
  if (n == 0 || offsets.empty()) return;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* o = out[0].mutable_data<T>().data();
    const T* u = updates.data<T>().data();
    for (std::size_t r = 0; r < offsets.size(); ++r) {
      T* dst = o + offsets[r] * n;
      const T* src = u + static_cast<std::int64_t>(r) * n;
      switch (mode_) {
        case ScatterMode::update: std::copy(src, src + n, dst); break;
        case ScatterMode::add:
          if constexpr (!std::is_same_v<T, bool>) for (std::int64_t e = 0; e < n; ++e) dst[e] += src[e];
          break;
        case ScatterMode::sub:
          if constexpr (!std::is_same_v<T, bool>) for (std::int64_t e = 0; e < n; ++e) dst[e] -= src[e];
          break;
        case ScatterMode::min:
          for (std::int64_t e = 0; e < n; ++e) dst[e] = std::min(dst[e], src[e]);
          break;
        case ScatterMode::max:
          for (std::int64_t e = 0; e < n; ++e) dst[e] = std::max(dst[e], src[e]);
          break;
      }
    }
  });
}

std::vector<Tensor> TensorScatterNd::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                         std::span<const Tensor> cot, const std::vector<bool>&) const {
  const Tensor &x = in[0], &indices = in[1], &updates = in[2], &g = cot[0];
  switch (mode_) {
    case ScatterMode::add: return {g, Tensor(), gather_nd(g, indices)};
    case ScatterMode::sub: return {g, Tensor(), -gather_nd(g, indices)};
    case ScatterMode::update:
      // Overwritten entries of the tensor get no gradient; each update gets its place's.
      return {tensor_scatter_nd_update(g, indices, zeros_like(updates)), Tensor(), gather_nd(g, indices)};
    case ScatterMode::min:
    case ScatterMode::max: {
      // The gradient goes to every value equal to the result, shared among ties (as TF's).
      Tensor y = out[0];
      Tensor x_hits = cast(equal(x, y), x.dtype());
      Tensor u_hits = cast(equal(updates, gather_nd(y, indices)), x.dtype());
      Tensor count = x_hits + tensor_scatter_nd_add(zeros_like(x), indices, u_hits);
      return {g * x_hits / count, Tensor(), gather_nd(g / count, indices) * u_hits};
    }
  }
  return {Tensor(), Tensor(), Tensor()};
}

void detail::add_scatter_nd_factories(detail::OpFactories& f) {
  f["gather_nd"] = [](const OpParams&) { return std::make_shared<GatherNd>(); };
  for (ScatterMode m : {ScatterMode::update, ScatterMode::add, ScatterMode::sub, ScatterMode::min, ScatterMode::max})
    f[kModeNames[static_cast<int>(m)]] = [m](const OpParams&) { return std::make_shared<TensorScatterNd>(m); };
}

namespace {

// Each example's batch index as a leading coordinate of its index rows: [B, ..., k] -> [B, ..., 1 + k].
Tensor with_batch_coordinate(const Tensor& indices) {
  std::vector<std::int64_t> at(static_cast<std::size_t>(indices.rank()), 1), rows = indices.shape().dims();
  at[0] = indices.shape()[0];
  rows.back() = 1;
  Tensor coordinate = broadcast_to(reshape(arange(indices.shape()[0], indices.dtype()), Shape(at)), Shape(rows));
  return concat({coordinate, indices}, -1);
}

// Batched gathers and scatters are one op over the whole batch, the batch index a coordinate
// of the rows; the per-example loop only where a shape is known only at run time.
BatchingResult batch_gather_nd(const GatherNd&, BatchingCall call) {
  const Batched &params = call.inputs[0], &indices = call.inputs[1];
  if (!params.batched) return batching::one(gather_nd(params.t, indices.t));  // rows of the batch first
  if (call.batch == kDynamic || !indices.t.shape().is_static()) return std::nullopt;
  Tensor rows = batching::materialize(GatherNd(), indices, call.batch);
  return batching::one(gather_nd(params.t, with_batch_coordinate(rows)));
}

BatchingResult batch_tensor_scatter_nd(const TensorScatterNd& op, BatchingCall call) {
  if (call.batch == kDynamic || !call.inputs[1].t.shape().is_static()) return std::nullopt;
  std::vector<Tensor> xs;
  for (const Batched& b : call.inputs) xs.push_back(batching::materialize(op, b, call.batch));
  xs[1] = with_batch_coordinate(xs[1]);
  return batching::one(dispatch1(op, {xs[0], xs[1], xs[2]}));
}

}  // namespace

void detail::register_scatter_nd_rules() {
  // ONNX wants int64 coordinates.
  auto int64_indices = [](onnx::Lowering& to) {
    if (to.input_spec(1).dtype == DType::int64) return to.input(1);
    std::string cast = to.fresh("nd_indices");
    to.node("Cast", {to.input(1)}, {cast}, {{"to", onnx::dtype_code(DType::int64)}});
    return cast;
  };
  register_op_rules<GatherNd>({.batching = batch_gather_nd, .onnx = [int64_indices](const GatherNd&, onnx::Lowering& to) {
                                 to.node("GatherND", {to.input(0), int64_indices(to)}, {to.output()});
                               }});
  register_op_rules<TensorScatterNd>(
      {.batching = batch_tensor_scatter_nd, .onnx = [int64_indices](const TensorScatterNd& op, onnx::Lowering& to) {
         std::string updates = to.input(2);
         switch (op.mode()) {
           case ScatterMode::update: to.node("ScatterND", {to.input(0), int64_indices(to), updates}, {to.output()}); return;
           case ScatterMode::sub:
             updates = to.fresh("nd_negated");
             to.node("Neg", {to.input(2)}, {updates});
             [[fallthrough]];
           case ScatterMode::add:
             to.node("ScatterND", {to.input(0), int64_indices(to), updates}, {to.output()}, {{"reduction", std::string("add")}});
             return;
           case ScatterMode::min:
           case ScatterMode::max: to.unsupported("ONNX's ScatterND takes min and max from opset 18; eagerflow exports opset 17");
         }
       }});
}

// ---------------------------------------------------------------- public functions
Tensor gather_nd(const Tensor& params, const Tensor& indices, int batch_dims) {
  if (batch_dims == 0) return dispatch1(GatherNd(), {params, indices});
  if (batch_dims < 0 || batch_dims >= indices.rank() || batch_dims > params.rank())
    fail("gather_nd", "batch_dims must be in [0, " + std::to_string(std::min(indices.rank() - 1, params.rank())) + "], got " +
                          std::to_string(batch_dims) + " for params " + params.spec().str() + " and indices " + indices.spec().str());
  // Prepend each row's batch coordinates to it, then gather over the whole tensor.
  std::vector<std::int64_t> rows(indices.shape().begin(), indices.shape().end() - 1);
  std::vector<Tensor> columns;
  for (int b = 0; b < batch_dims; ++b) {
    std::int64_t n = params.shape()[b];
    if (n == kDynamic || indices.shape()[b] == kDynamic)
      fail(ErrorCode::unimplemented, "gather_nd", "batch_dims needs known batch dims, got params " + params.spec().str());
    if (indices.shape()[b] != n)
      fail("gather_nd", "batch dim " + std::to_string(b) + " differs: params " + params.spec().str() + ", indices " + indices.spec().str());
    std::vector<std::int64_t> at(rows.size() + 1, 1);
    at[static_cast<std::size_t>(b)] = n;
    std::vector<std::int64_t> full = rows;
    full.push_back(1);
    columns.push_back(broadcast_to(reshape(arange(n, indices.dtype()), Shape(at)), Shape(full)));
  }
  columns.push_back(indices);
  return dispatch1(GatherNd(), {params, concat(columns, -1)});
}

Tensor tensor_scatter_nd_update(const Tensor& t, const Tensor& i, const Tensor& u) { return dispatch1(TensorScatterNd(ScatterMode::update), {t, i, u}); }
Tensor tensor_scatter_nd_add(const Tensor& t, const Tensor& i, const Tensor& u) { return dispatch1(TensorScatterNd(ScatterMode::add), {t, i, u}); }
Tensor tensor_scatter_nd_sub(const Tensor& t, const Tensor& i, const Tensor& u) { return dispatch1(TensorScatterNd(ScatterMode::sub), {t, i, u}); }
Tensor tensor_scatter_nd_min(const Tensor& t, const Tensor& i, const Tensor& u) { return dispatch1(TensorScatterNd(ScatterMode::min), {t, i, u}); }
Tensor tensor_scatter_nd_max(const Tensor& t, const Tensor& i, const Tensor& u) { return dispatch1(TensorScatterNd(ScatterMode::max), {t, i, u}); }

Tensor scatter_nd(const Tensor& indices, const Tensor& updates, const Shape& shape) {
  for (std::int64_t d : shape.dims())
    if (d < 0) fail("scatter_nd", "shape must be known and non-negative, got " + shape.str());
  return tensor_scatter_nd_add(zeros(shape, updates.dtype()), indices, updates);
}

}  // namespace ef
