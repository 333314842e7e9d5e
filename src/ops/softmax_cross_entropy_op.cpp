// Sparse softmax cross-entropy from logits as one op: a pass over each row forward (max,
// exp, sum: the row's logsumexp, minus the label's logit) and one for the gradient, instead of
// one_hot, log_softmax, a product and a sum forward and about as many ops backward.
#include "ops/softmax_cross_entropy_op.h"

#include <cmath>
#include <limits>
#include <vector>

#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/ops/op_rules.h"
#include "ops/rules/builtin_rules.h"
#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/core/error.h"
#include "eagerflow/nn/cross_entropy.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "ops/op_factories.h"

namespace ef {
namespace {

constexpr const char* kOp = "sparse_softmax_cross_entropy";

bool dims_differ(std::int64_t a, std::int64_t b) { return a != b && a != kDynamic && b != kDynamic; }

// logits [..., C] float and labels [...] integer of the same leading dims.
void check_logits_labels(const char* op, const Tensor& logits, const Tensor& labels, std::span<const Tensor> all) {
  if (logits.dtype() != DType::float32 && logits.dtype() != DType::float64)
    fail(kWrongType, op, "expects float32 or float64 logits, got " + describe(all));
  if (labels.dtype() != DType::int32 && labels.dtype() != DType::int64)
    fail(kWrongType, op, "expects int32 or int64 labels (class indices), got " + describe(all));
  bool ok = logits.rank() >= 1 && labels.rank() == logits.rank() - 1;
  for (int a = 0; ok && a < labels.rank(); ++a) ok = !dims_differ(labels.shape()[a], logits.shape()[a]);
  if (!ok)
    fail(op, "labels " + labels.spec().str() + " must have the shape of logits " + logits.spec().str() +
                 " without its last (class) axis");
}

// The rows' labels as indices, each checked against C (before any parallel work).
template <class L>
void check_labels(const char* op, const L* labels, std::int64_t rows, std::int64_t classes, const Tensor& t) {
  for (std::int64_t r = 0; r < rows; ++r)
    if (labels[r] < 0 || labels[r] >= classes)
      fail(op, "label " + std::to_string(labels[r]) + " at flat position " + std::to_string(r) + " of " + t.spec().str() +
                   " is outside the valid range [0, " + std::to_string(classes) + ")");
}

std::int64_t label_at(const Tensor& labels, std::int64_t r) {
  return labels.dtype() == DType::int64 ? labels.data<std::int64_t>()[static_cast<std::size_t>(r)]
                                        : labels.data<std::int32_t>()[static_cast<std::size_t>(r)];
}

void check_runtime(const char* op, const Tensor& logits, const Tensor& labels, std::span<const Tensor> all) {
  for (int a = 0; a < labels.rank(); ++a)
    if (labels.shape()[a] != logits.shape()[a])
      fail(op, "labels must have the shape of logits without the class axis: " + describe(all));
  std::int64_t rows = labels.num_elements(), classes = logits.shape()[logits.rank() - 1];
  if (labels.dtype() == DType::int64) check_labels(op, labels.data<std::int64_t>().data(), rows, classes, labels);
  else check_labels(op, labels.data<std::int32_t>().data(), rows, classes, labels);
}

// A per-thread scratch row (kept, so a replay allocates nothing).
template <class T>
T* scratch_row(std::int64_t n) {
  thread_local std::vector<T> row;
  if (row.size() < static_cast<std::size_t>(n)) row.resize(static_cast<std::size_t>(n));
  return row.data();
}

void forward_f32(const float* x, const Tensor& labels, std::int64_t rows, std::int64_t c, float* loss, float* lse) {
  const auto& vk = cpu::vec::kernels();
  cpu::parallel_for(rows, c * 4, [&](std::int64_t b, std::int64_t e) {
    float* t = scratch_row<float>(c);
    for (std::int64_t r = b; r < e; ++r) {
      const float* xr = x + r * c;
      float m = vk.max_f32(xr, c);
      if (std::isinf(m)) m = 0;  // all -inf (or a +inf): avoid inf - inf, as softmax
      vk.binary_f32(BinaryKind::sub, xr, 0, 1, &m, 0, 0, t, 1, c);
      vk.unary_f32(UnaryKind::exp, t, t, c);
      float l = m + static_cast<float>(std::log(vk.sum_f32(t, c)));
      lse[r] = l;
      loss[r] = l - xr[label_at(labels, r)];
    }
  });
}

void forward_f64(const double* x, const Tensor& labels, std::int64_t rows, std::int64_t c, double* loss, double* lse) {
  cpu::parallel_for(rows, c * 4, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const double* xr = x + r * c;
      double m = -std::numeric_limits<double>::infinity();
      for (std::int64_t j = 0; j < c; ++j) m = std::isnan(xr[j]) || std::isnan(m) ? NAN : std::max(m, xr[j]);
      if (std::isinf(m)) m = 0;
      double s = 0;
      for (std::int64_t j = 0; j < c; ++j) s += std::exp(xr[j] - m);
      double l = m + std::log(s);
      lse[r] = l;
      loss[r] = l - xr[label_at(labels, r)];
    }
  });
}

void backward_f32(const float* x, const Tensor& labels, const float* lse, const float* g, std::int64_t rows,
                  std::int64_t c, float* dx) {
  const auto& vk = cpu::vec::kernels();
  cpu::parallel_for(rows, c * 3, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      float* d = dx + r * c;
      vk.binary_f32(BinaryKind::sub, x + r * c, 0, 1, lse + r, 0, 0, d, 1, c);
      vk.unary_f32(UnaryKind::exp, d, d, c);
      vk.binary_f32(BinaryKind::mul, d, 0, 1, g + r, 0, 0, d, 1, c);
      d[label_at(labels, r)] -= g[r];
    }
  });
}

void backward_f64(const double* x, const Tensor& labels, const double* lse, const double* g, std::int64_t rows,
                  std::int64_t c, double* dx) {
  cpu::parallel_for(rows, c * 3, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      for (std::int64_t j = 0; j < c; ++j) dx[r * c + j] = std::exp(x[r * c + j] - lse[r]) * g[r];
      dx[r * c + label_at(labels, r)] -= g[r];
    }
  });
}

}  // namespace

std::vector<TensorSpec> SparseSoftmaxCrossEntropy::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  check_logits_labels(name(), in[0], in[1], in);
  TensorSpec rows{in[0].dtype(), in[1].shape(), {}};
  return {rows, rows};
}

void SparseSoftmaxCrossEntropy::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                                     std::span<Tensor> out) const {
  const Tensor &logits = in[0], &labels = in[1];
  check_runtime(name(), logits, labels, in);
  for (int i = 0; i < 2; ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  std::int64_t rows = labels.num_elements(), c = logits.shape()[logits.rank() - 1];
  if (rows == 0) return;
  if (logits.dtype() == DType::float32)
    forward_f32(logits.data<float>().data(), labels, rows, c, out[0].mutable_data<float>().data(),
                out[1].mutable_data<float>().data());
  else
    forward_f64(logits.data<double>().data(), labels, rows, c, out[0].mutable_data<double>().data(),
                out[1].mutable_data<double>().data());
}

std::vector<Tensor> SparseSoftmaxCrossEntropy::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                                   std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  std::vector<Tensor> grads(2);
  if (!needed[0]) return grads;
  Tensor dloss = cot[0].defined() ? cot[0] : zeros_like(out[0]);
  Tensor d = dispatch1(SparseSoftmaxCrossEntropyGrad(), {in[0], in[1], out[1], dloss});
  if (cot[1].defined())  // d lse / d logits = softmax(logits)
    d = d + exp(in[0] - expand_dims(out[1], -1)) * expand_dims(cot[1], -1);
  grads[0] = d;
  return grads;
}

std::vector<TensorSpec> SparseSoftmaxCrossEntropyGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 4);
  check_logits_labels(name(), in[0], in[1], in);
  for (int i = 2; i < 4; ++i) {
    const Tensor& t = in[static_cast<std::size_t>(i)];
    bool ok = t.dtype() == in[0].dtype() && t.rank() == in[1].rank();
    for (int a = 0; ok && a < t.rank(); ++a) ok = !dims_differ(t.shape()[a], in[1].shape()[a]);
    if (!ok) fail(name(), std::string(i == 2 ? "lse " : "dloss ") + t.spec().str() + " should have the labels' shape and the logits' dtype: " + describe(in));
  }
  return {in[0].spec()};
}

void SparseSoftmaxCrossEntropyGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                                         std::span<Tensor> out) const {
  const Tensor &logits = in[0], &labels = in[1];
  check_runtime(name(), logits, labels, in);
  if (in[2].shape() != labels.shape() || in[3].shape() != labels.shape())
    fail(name(), "lse and dloss must have the labels' shape: " + describe(in));
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::int64_t rows = labels.num_elements(), c = logits.shape()[logits.rank() - 1];
  if (rows == 0) return;
  if (logits.dtype() == DType::float32)
    backward_f32(logits.data<float>().data(), labels, in[2].data<float>().data(), in[3].data<float>().data(), rows, c,
                 out[0].mutable_data<float>().data());
  else
    backward_f64(logits.data<double>().data(), labels, in[2].data<double>().data(), in[3].data<double>().data(), rows,
                 c, out[0].mutable_data<double>().data());
}

// The gradient op composed from ef ops (lse recomputed from the logits, so the lse input gets
// no gradient): differentiating it gives second order.
std::vector<Tensor> SparseSoftmaxCrossEntropyGrad::vjp(std::span<const Tensor> in, std::span<const Tensor>,
                                                       std::span<const Tensor> cot, const std::vector<bool>& needed) const {
  std::vector<Tensor> grads(in.size());
  if (!cot[0].defined()) return grads;
  std::int64_t c = in[0].shape()[in[0].rank() - 1];
  if (c == kDynamic) fail(name(), "second-order gradients need a known class count: " + describe(in));
  std::vector<Tensor> x{identity(in[0]), identity(in[3])};  // fresh handles to watch
  GradientTape tape;
  tape.watch(x);
  Tensor p = softmax(x[0], -1);
  Tensor d = (p - one_hot(in[1], c, in[0].dtype())) * expand_dims(x[1], -1);
  std::vector<Tensor> g = tape.gradient(sum(d * cot[0]), x, GradientOptions{UnconnectedGradients::zero, {}});
  if (needed[0]) grads[0] = g[0];
  if (needed[3]) grads[3] = g[1];
  return grads;
}

// vmap: rows are independent, so batched logits and labels run in one call (an unbatched one
// spread over a static batch).
static std::optional<std::vector<Batched>> softmax_cross_entropy_batching_rule(const Primitive& op,
                                                                                        std::span<const Batched> in,
                                                                                        std::int64_t batch) {
  if (!dynamic_cast<const SparseSoftmaxCrossEntropy*>(&op) && !dynamic_cast<const SparseSoftmaxCrossEntropyGrad*>(&op))
    return std::nullopt;
  std::vector<Tensor> xs;
  for (const Batched& b : in) {
    if (b.batched) {
      xs.push_back(b.t);
      continue;
    }
    if (batch == kDynamic) return std::nullopt;
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), b.t.shape().begin(), b.t.shape().end());
    xs.push_back(broadcast_to(expand_dims(b.t, 0), Shape(dims)));
  }
  std::vector<Batched> out;
  for (Tensor& t : dispatch(op, xs)) out.push_back({t, true});
  return out;
}

void detail::add_softmax_cross_entropy_factories(detail::OpFactories& f) {
  f[kOp] = [](const OpParams&) { return std::make_shared<SparseSoftmaxCrossEntropy>(); };
  f["sparse_softmax_cross_entropy_grad"] = [](const OpParams&) { return std::make_shared<SparseSoftmaxCrossEntropyGrad>(); };
}

namespace nn {

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  return dispatch(SparseSoftmaxCrossEntropy(), std::vector<Tensor>{logits, labels})[0];
}

}  // namespace nn
}  // namespace ef

namespace ef {

void detail::register_softmax_cross_entropy_rules() {
  auto batching = [](const Primitive& op, BatchingCall call) {
    return softmax_cross_entropy_batching_rule(op, call.inputs, call.batch);
  };
  register_op_rules<SparseSoftmaxCrossEntropy>({
      .batching = batching,
      .onnx = [](const SparseSoftmaxCrossEntropy&, onnx::Lowering& to) {
        // -log_softmax(logits)[label] (LogSoftmax, GatherElements at the unsqueezed labels) and
        // the rows' ReduceLogSumExp.
        std::string logp = to.fresh("ce_logp"), at = to.fresh("ce_labels"), picked = to.fresh("ce_picked");
        std::string sq = to.fresh("ce_sq"), last = to.ints({-1});
        to.node("LogSoftmax", {to.input(0)}, {logp}, {{"axis", -1}});
        to.node("Unsqueeze", {to.input(1), last}, {at});
        to.node("GatherElements", {logp, at}, {picked}, {{"axis", -1}});
        to.node("Squeeze", {picked, last}, {sq});
        to.node("Neg", {sq}, {to.output(0)});
        to.node("ReduceLogSumExp", {to.input(0)}, {to.output(1)}, {{"axes", std::vector<std::int64_t>{-1}}, {"keepdims", 0}});
      },
  });
  register_op_rules<SparseSoftmaxCrossEntropyGrad>(
      {.batching = batching, .onnx_unsupported = "a gradient op: exported graphs run inference only"});
}

}  // namespace ef
