// One resampling pass of ef::image::resize as an op: out[..., o, ...] = sum over taps t of
// weight[t, o] * x[..., index[t, o], ...] along one axis. The kernel walks each output row once
// (the composition of gathers, broadcast products and sums it replaces made five passes over
// memory, with 12-byte copies for the width axis of an RGB image); the sum runs in the same order
// with the same roundings, so results equal the composition's bit for bit. Its gradient is the
// gathers' (a scatter-add per tap).
#include <cstring>

#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "ops/image_resample_op.h"
#include "ops/op_factories.h"
#include "ops/primitives.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef {

OpParams ImageResample::parameters() const { return OpParams().add("axis", axis_); }

std::vector<TensorSpec> ImageResample::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  const Tensor &x = in[0], &index = in[1], &weight = in[2];
  if (x.dtype() != DType::float32) fail(kWrongType, name(), "takes float32 images, got " + x.spec().str());
  if (index.dtype() != DType::int64 || weight.dtype() != DType::float32 || index.rank() != 2 || index.shape() != weight.shape())
    fail(name(), "takes int64 index and float32 weight taps of one shape [taps, out], got " + describe(in));
  int a = normalize_axis(axis_, x.rank(), name());
  std::vector<std::int64_t> dims = x.shape().dims();
  dims[static_cast<std::size_t>(a)] = index.shape()[1];
  return {{DType::float32, Shape(std::move(dims)), {}}};
}

void ImageResample::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor& x = in[0];
  out[0] = Tensor::empty(DType::float32, specs[0].shape);
  if (out[0].num_elements() == 0) return;
  int a = normalize_axis(axis_, x.rank(), name());
  std::int64_t outer = 1, inner = 1, n = x.shape()[a];
  for (int d = 0; d < a; ++d) outer *= x.shape()[d];
  for (int d = a + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  const std::int64_t taps = in[1].shape()[0], m = in[1].shape()[1];
  const std::int64_t* index = in[1].data<std::int64_t>().data();
  const float* weight = in[2].data<float>().data();
  for (std::int64_t i = 0; i < taps * m; ++i)
    if (index[i] < 0 || index[i] >= n)
      fail(name(), "tap index " + std::to_string(index[i]) + " is out of range for axis " + std::to_string(a) + " of " +
                       x.spec().str());
  const float* src = x.data<float>().data();
  float* dst = out[0].mutable_data<float>().data();
  for (std::int64_t r = 0; r < outer; ++r) {
    const float* xr = src + r * n * inner;
    float* yr = dst + r * m * inner;
    for (std::int64_t o = 0; o < m; ++o) {
      float* y = yr + o * inner;
      const float* x0 = xr + index[o] * inner;
      const float w0 = weight[o];
      for (std::int64_t j = 0; j < inner; ++j) y[j] = x0[j] * w0;
      for (std::int64_t t = 1; t < taps; ++t) {
        const float* xt = xr + index[t * m + o] * inner;
        const float wt = weight[t * m + o];
        for (std::int64_t j = 0; j < inner; ++j) {
          const float term = xt[j] * wt;  // rounded on its own, as the composition's product was
          y[j] = y[j] + term;
        }
      }
    }
  }
}

std::vector<Tensor> ImageResample::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                       const std::vector<bool>& needed) const {
  if (!needed[0]) return {Tensor(), Tensor(), Tensor()};
  const Tensor& x = in[0];
  int a = normalize_axis(axis_, x.rank(), name());
  std::vector<std::int64_t> weight_dims(static_cast<std::size_t>(x.rank() - a), 1);
  weight_dims[0] = in[1].shape()[1];
  Tensor grad;
  for (std::int64_t t = 0; t < in[1].shape()[0]; ++t) {
    Tensor index = reshape(slice(in[1], {t, 0}, {t + 1, in[1].shape()[1]}), Shape{in[1].shape()[1]});
    Tensor weight = reshape(slice(in[2], {t, 0}, {t + 1, in[2].shape()[1]}), Shape(weight_dims));
    Tensor g = dispatch1(GatherGrad(a), {cot[0] * weight, index, x});
    grad = grad.defined() ? grad + g : g;
  }
  return {grad, Tensor(), Tensor()};
}

void detail::add_image_resample_factories(detail::OpFactories& f) {
  f["image_resample"] = [](const OpParams& p) { return std::make_shared<ImageResample>(p.axis("axis")); };
}

void detail::register_image_resample_rules() {
  register_op_rules<ImageResample>(
      {.batching = [](const ImageResample& op, BatchingCall call) -> BatchingResult {
         // Images batched, taps shared: the same pass one axis further in.
         if (call.inputs[1].batched || call.inputs[2].batched) return std::nullopt;
         Tensor x = batching::materialize(op, call.inputs[0], call.batch);
         int a = normalize_axis(op.axis(), x.rank() - 1, op.name());
         return batching::one(dispatch1(ImageResample(a + 1), {x, call.inputs[1].t, call.inputs[2].t}));
       },
       .onnx = [](const ImageResample& op, onnx::Lowering& to) {
         // A Gather of the x rows per tap, times its weights, summed (the composition it replaces).
         const TensorSpec& xs = to.input_spec(0);
         int a = normalize_axis(op.axis(), xs.shape.rank(), op.name());
         std::int64_t taps = to.input_spec(1).shape[0];
         std::vector<std::int64_t> weight_dims(static_cast<std::size_t>(xs.shape.rank() - a), 1);
         weight_dims[0] = -1;
         std::string total;
         for (std::int64_t t = 0; t < taps; ++t) {
           std::string k = to.ints({t}), idx = to.fresh("tap_index"), w = to.fresh("tap_weight"), wr = to.fresh("tap_weight_r"),
                       g = to.fresh("tap_rows"), term = to.fresh("tap_term");
           to.node("Gather", {to.input(1), k}, {idx}, {{"axis", 0}});
           to.node("Gather", {to.input(2), k}, {w}, {{"axis", 0}});
           to.node("Reshape", {w, to.ints(weight_dims)}, {wr});
           to.node("Squeeze", {idx, to.ints({0})}, {idx + "_s"});
           to.node("Gather", {to.input(0), idx + "_s"}, {g}, {{"axis", a}});
           to.node("Mul", {g, wr}, {term});
           if (total.empty()) {
             total = term;
           } else {
             std::string sum = t + 1 == taps ? to.output() : to.fresh("tap_sum");
             to.node("Add", {total, term}, {sum});
             total = sum;
           }
         }
         if (taps == 1) to.node("Identity", {total}, {to.output()});
       }});
}

}  // namespace ef
