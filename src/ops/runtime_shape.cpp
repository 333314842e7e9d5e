#include <charconv>
// Ops on runtime shapes: shape, size, *_like fills, broadcast_to / broadcast_like and sum_to.
// Inside a trace with dynamic dims they read the shape when the graph runs, so that user code
// and gradient rules never need a concrete dim at trace time.
#include <algorithm>
#include <bit>

#include "ops/element_bytes.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/broadcast.h"
#include "ops/complex_op.h"
#include "ops/primitives.h"
#include "ops/shape_rules.h"
#include "ops/op_factories.h"

namespace ef {

std::vector<TensorSpec> ShapeOf::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (size_) return {{DType::int64, Shape{}, {}}};
  return {{DType::int64, Shape{in[0].rank()}, {}}};
}

void ShapeOf::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  auto o = out[0].mutable_data<std::int64_t>();
  if (size_) o[0] = in[0].num_elements();
  else
    for (int a = 0; a < in[0].rank(); ++a) o[static_cast<std::size_t>(a)] = in[0].shape()[a];
}

const char* FillLike::name() const {
  if (dtype_) return "full_like";
  // By bits: -0.0 is a full_like, so that the printed (and saved) op reads back the same.
  std::uint64_t bits = std::bit_cast<std::uint64_t>(value_);
  return bits == std::bit_cast<std::uint64_t>(0.0) ? "zeros_like" : value_ == 1.0 ? "ones_like" : "full_like";
}

OpParams FillLike::parameters() const {
  // zeros_like and ones_like say their value by name. Reals compare by bits: 0.0 and -0.0
  // fill different tensors.
  if (std::string(name()) != "full_like") return {};
  OpParams p;
  p.add("value", value_);
  if (dtype_) p.add("dtype", *dtype_);
  return p;
}

std::vector<TensorSpec> FillLike::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  return {{dtype_.value_or(in[0].dtype()), in[0].shape(), {}}};
}

void FillLike::eval(std::span<const Tensor>, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = full(specs[0].shape, value_, specs[0].dtype);
}

namespace {

// x's dims right-aligned against `target`: each must be 1 or equal (dynamic dims pass).
void expect_broadcastable(const Primitive& op, const Shape& x, const Shape& target, const std::string& what) {
  bool ok = x.rank() <= target.rank();
  for (int i = x.rank() - 1, o = target.rank() - 1; ok && i >= 0; --i, --o)
    ok = x[i] == 1 || x[i] == target[o] || x[i] == kDynamic || target[o] == kDynamic;
  if (!ok) fail(op.name(), "cannot broadcast " + x.str() + " to " + what);
}

void broadcast_kernel(const Tensor& x, const TensorSpec& spec, Tensor& out) {
  if (x.shape() == spec.shape) {
    out = x;
    return;
  }
  out = Tensor::empty(spec.dtype, spec.shape);
  if (out.num_elements() == 0) return;
  auto strides = cpu::broadcast_strides(x.shape(), spec.shape);
  detail::dispatch_element_bytes(spec.dtype, [&](auto tag) {
    using T = decltype(tag);
    cpu::strided_copy(static_cast<const T*>(x.raw_data()), 0, strides, spec.shape, static_cast<T*>(out.raw_mutable_data()));
  });
}

}  // namespace

OpParams BroadcastTo::parameters() const { return shape_ ? OpParams().add("shape", *shape_) : OpParams(); }

std::vector<TensorSpec> BroadcastTo::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, shape_ ? 1 : 2);
  const Shape& x = in[0].shape();
  if (!shape_) {
    expect_broadcastable(*this, x, in[1].shape(), "the shape of " + in[1].spec().str());
    return {{in[0].dtype(), in[1].shape(), {}}};
  }
  Shape target = *shape_;
  if (target.rank() < x.rank()) fail(name(), "cannot broadcast " + in[0].spec().str() + " to " + target.str());
  for (int o = 0; o < target.rank(); ++o) {
    if (target[o] < kDynamic) fail(name(), "invalid target shape " + target.str());
    int i = x.rank() - target.rank() + o;
    if (target[o] == kDynamic) {
      if (i < 0) fail(name(), "a dynamic target dim needs an input dim to take: " + target.str());
      target[o] = x[i];
    }
  }
  expect_broadcastable(*this, x, target, target.str());
  return {{in[0].dtype(), target, {}}};
}

void BroadcastTo::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  // Dynamic dims are resolved here, against concrete shapes.
  expect_broadcastable(*this, in[0].shape(), specs[0].shape, specs[0].shape.str());
  broadcast_kernel(in[0], specs[0], out[0]);
}

std::vector<Tensor> BroadcastTo::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                     const std::vector<bool>&) const {
  std::vector<Tensor> g{sum_to(cot[0], in[0])};
  if (!shape_) g.emplace_back();
  return g;
}

std::vector<TensorSpec> SumTo::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_broadcastable(*this, in[1].shape(), in[0].shape(), in[0].spec().str() + " (sum_to reduces " +
                                                                in[0].spec().str() + " to the shape of " + in[1].spec().str() + ")");
  return {{in[0].dtype(), in[1].shape(), {}}};
}

void SumTo::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape &x = in[0].shape(), &target = specs[0].shape;
  if (x == target) {
    out[0] = in[0];
    return;
  }
  expect_broadcastable(*this, target, x, x.str());
  std::vector<int> axes;
  int lead = x.rank() - target.rank();
  for (int a = 0; a < x.rank(); ++a)
    if (a < lead || (target[a - lead] == 1 && x[a] != 1)) axes.push_back(a);
  // A kernel may call ops: nothing here is recorded (dispatch runs eagerly inside kernels).
  Tensor s = axes.empty() ? in[0] : sum(in[0], axes, /*keepdims=*/true);
  out[0] = reshape(s, target);
}

std::vector<Tensor> SumTo::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                               const std::vector<bool>&) const {
  return {broadcast_like(cot[0], in[0]), Tensor()};
}

Tensor shape(const Tensor& x) { return dispatch1(ShapeOf(false), {x}); }
Tensor size(const Tensor& x) { return dispatch1(ShapeOf(true), {x}); }
Tensor zeros_like(const Tensor& x) { return dispatch1(FillLike(0.0, std::nullopt), {x}); }
Tensor ones_like(const Tensor& x) { return dispatch1(FillLike(1.0, std::nullopt), {x}); }
Tensor full_like(const Tensor& x, double value) { return dispatch1(FillLike(value, std::nullopt), {x}); }
Tensor broadcast_to(const Tensor& x, const Shape& shape) { return dispatch1(BroadcastTo(shape), {x}); }
Tensor broadcast_like(const Tensor& x, const Tensor& like) {
  if (x.defined() && like.defined() && x.shape() == like.shape() && x.shape().is_static()) return x;
  return dispatch1(BroadcastTo(std::nullopt), {x, like});
}
Tensor sum_to(const Tensor& x, const Tensor& like) {
  // The common case in gradients (no broadcasting happened) records nothing.
  if (x.defined() && like.defined() && x.shape() == like.shape() && x.shape().is_static()) return x;
  if (x.defined() && detail::complex_input(x)) [[unlikely]]
    return detail::by_parts(x, [&](const Tensor& part) { return dispatch1(SumTo(), {part, like}); });
  return dispatch1(SumTo(), {x, like});
}


void detail::add_runtime_shape_factories(detail::OpFactories& f) {
  f["shape"] = [](const OpParams&) { return std::make_shared<ShapeOf>(false); };
  f["size"] = [](const OpParams&) { return std::make_shared<ShapeOf>(true); };
  f["zeros_like"] = [](const OpParams&) { return std::make_shared<FillLike>(0.0, std::nullopt); };
  f["ones_like"] = [](const OpParams&) { return std::make_shared<FillLike>(1.0, std::nullopt); };
  f["full_like"] = [](const OpParams& p) {
    return std::make_shared<FillLike>(p.real("value"), p.has("dtype") ? std::optional(p.dtype("dtype")) : std::nullopt);
  };
  f["broadcast_to"] = [](const OpParams& p) { return std::make_shared<BroadcastTo>(p.shape("shape")); };
  f["broadcast_like"] = [](const OpParams&) { return std::make_shared<BroadcastTo>(std::nullopt); };
  f["sum_to"] = [](const OpParams&) { return std::make_shared<SumTo>(); };
}

}  // namespace ef
