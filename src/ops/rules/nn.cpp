// vmap and ONNX rules of matmul, convolution, pooling and variables (src/ops/primitives.h).
#include "eagerflow/ops/onnx_lowering.h"
#include "eagerflow/variable.h"
#include "ops/primitives.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef {

namespace batching {

namespace {
// [B, N, ...] -> [B*N, ...]; nullopt when the example's dims are not static.
std::optional<Tensor> merge_batch(const Tensor& t) {
  std::vector<std::int64_t> dims{-1};
  for (int i = 2; i < t.rank(); ++i) {
    if (t.shape()[i] == kDynamic || t.shape()[i] == 0) return std::nullopt;
    dims.push_back(t.shape()[i]);
  }
  return reshape(t, Shape(dims));
}
}  // namespace

BatchingResult image_batch(const Primitive& op, BatchingCall call, std::vector<bool> merged) {
  if (!call.specs[0].shape.is_static()) return std::nullopt;
  std::vector<Tensor> xs;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const Batched& in = call.inputs[i];
    if (in.batched != merged[i]) return std::nullopt;
    if (!merged[i]) {
      xs.push_back(in.t);
      continue;
    }
    auto m = merge_batch(in.t);
    if (!m) return std::nullopt;
    xs.push_back(*m);
  }
  return one(reshape(dispatch1(op, xs), batch_shape(call.batch, call.specs[0].shape)));
}

}  // namespace batching

namespace detail {
namespace {

constexpr const char* kGradientOp = "a gradient op: exported graphs run inference only";

template <class Op>
std::function<BatchingResult(const Op&, BatchingCall)> image_rule(std::vector<bool> merged) {
  return [merged](const Op& op, BatchingCall call) { return batching::image_batch(op, call, merged); };
}

// NHWC <-> NCHW around ONNX's channel-first convolution and pooling.
std::string to_nchw(onnx::Lowering& to, const std::string& x) {
  std::string out = to.fresh("nchw");
  to.node("Transpose", {x}, {out}, {{"perm", std::vector<std::int64_t>{0, 3, 1, 2}}});
  return out;
}
void from_nchw(onnx::Lowering& to, const std::string& x, const std::string& out) {
  to.node("Transpose", {x}, {out}, {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}});
}

void lower_matmul(const MatMul& m, onnx::Lowering& to) {
  auto transpose_last = [&](const std::string& x, int rank) {
    std::vector<std::int64_t> perm;
    for (int i = 0; i < rank; ++i) perm.push_back(i);
    std::swap(perm[static_cast<std::size_t>(rank - 1)], perm[static_cast<std::size_t>(rank - 2)]);
    std::string t = to.fresh("t");
    to.node("Transpose", {x}, {t}, {{"perm", perm}});
    return t;
  };
  std::string a = to.input(0), b = to.input(1);
  if (m.transpose_a()) a = transpose_last(a, to.input_spec(0).shape.rank());
  if (m.transpose_b()) b = transpose_last(b, to.input_spec(1).shape.rank());
  to.node("MatMul", {a, b}, {to.output()});
}

void lower_conv(const Conv2D& c, onnx::Lowering& to) {
  // x NHWC -> NCHW; w HWIO -> OIHW.
  std::string x = to_nchw(to, to.input(0)), w = to.fresh("w_oihw"), y = to.fresh("y_nchw");
  to.node("Transpose", {to.input(1)}, {w}, {{"perm", std::vector<std::int64_t>{3, 2, 0, 1}}});
  const Conv2DParams& p = c.params();
  to.node("Conv", {x, w}, {y},
          {{"strides", std::vector<std::int64_t>{p.sh, p.sw}},
           {"dilations", std::vector<std::int64_t>{p.dh, p.dw}},
           {"auto_pad", p.same ? "SAME_UPPER" : "VALID"}});
  from_nchw(to, y, to.output());
}

void lower_pool(const Pool2D& pool, onnx::Lowering& to) {
  const Pool2DParams& p = pool.params();
  std::string x = to_nchw(to, to.input(0)), y = to.fresh("y_nchw");
  std::vector<onnx::Attribute> attrs{{"kernel_shape", std::vector<std::int64_t>{p.kh, p.kw}},
                                     {"strides", std::vector<std::int64_t>{p.sh, p.sw}},
                                     {"auto_pad", p.same ? "SAME_UPPER" : "VALID"}};
  if (!p.max) attrs.emplace_back("count_include_pad", 0);  // TF's averages leave padding out
  to.node(p.max ? "MaxPool" : "AveragePool", {x}, {y}, std::move(attrs));
  from_nchw(to, y, to.output());
}

}  // namespace

void register_nn_rules() {
  register_op_rules<MatMul>({
      .batching = [](const MatMul& op, BatchingCall call) { return batching::broadcasting(op, call); },
      .onnx = lower_matmul,
  });
  register_op_rules<Conv2D>({.batching = image_rule<Conv2D>({true, false}), .onnx = lower_conv});
  register_op_rules<Conv2DBackpropInput>({.batching = image_rule<Conv2DBackpropInput>({true, false, true}), .onnx_unsupported = kGradientOp});
  register_op_rules<Conv2DBackpropFilter>({.runs_per_example = true, .onnx_unsupported = kGradientOp});
  register_op_rules<Pool2D>({.batching = image_rule<Pool2D>({true}), .onnx = lower_pool});
  register_op_rules<Pool2DGrad>({.batching = image_rule<Pool2DGrad>({true, true}), .onnx_unsupported = kGradientOp});
  register_op_rules<ReadVariable>({
      .runs_per_example = true,  // no inputs: never batched
      .onnx = [](const ReadVariable& r, onnx::Lowering& to) {
        // The variable's value, as a constant named after it.
        to.rename_output(0, to.constant(r.variable()->read(), r.variable()->name.empty() ? to.fresh("variable") : r.variable()->name));
      },
  });
  register_op_rules<AssignVariable>({
      .batching = [](const AssignVariable& a, BatchingCall call) -> BatchingResult {
        fail(ErrorCode::unimplemented, "vmap",
             "cannot assign a batched value " + call.inputs[0].t.spec().str() + " to variable '" + a.variable()->name +
                 "' (each example would write its own value); assign outside ef::vmap");
      },
      .onnx_unsupported = "a variable assignment: exported graphs run inference only",
  });
}

}  // namespace detail
}  // namespace ef
