#include <algorithm>

#include "eagerflow/ops/ops.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/vec_math.h"
#include "eagerflow/trace/recorder.h"
#include "ops/interpreters.h"
#include "ops/fused.h"
#include "ops/primitives.h"
#include "ops/rules/builtin_rules.h"
#include "eagerflow/ops/op_rules.h"

namespace ef {
namespace {

class FusedDense : public PrimitiveBase<FusedDense> {
 public:
  FusedDense(bool has_bias, std::optional<UnaryKind> activation) : has_bias_(has_bias), activation_(activation) {}
  const char* name() const override { return "fused_dense"; }
  std::string attrs() const override {
    return std::string("bias=") + (has_bias_ ? "True" : "False") +
           (activation_ ? std::string(" activation=") + unary_name(*activation_) : "");
  }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, has_bias_ ? 3 : 2);
    const Tensor &x = in[0], &w = in[1];
    if (x.dtype() != DType::float32 || w.dtype() != DType::float32 || x.rank() < 2 || w.rank() != 2 ||
        (has_bias_ && (in[2].dtype() != DType::float32 || in[2].rank() != 1)))
      fail(name(), "expects float32 x (rank >= 2), w (rank 2) and bias (rank 1): " + describe(in));
    std::int64_t k = x.shape()[x.rank() - 1];
    if (k != w.shape()[0] && k != kDynamic && w.shape()[0] != kDynamic)
      fail(name(), "inner dimensions differ: " + describe(in, " x "));
    std::vector<std::int64_t> dims = x.shape().dims();
    dims.back() = w.shape()[1];
    return {{DType::float32, Shape(std::move(dims)), {}}};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    const Tensor &x = in[0], &w = in[1];
    std::int64_t k = w.shape()[0], n = w.shape()[1];
    if (has_bias_ && in[2].shape()[0] != n)
      fail(name(), "bias " + in[2].spec().str() + " does not match " + std::to_string(n) + " output features");
    out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
    std::int64_t rows = x.num_elements() / std::max<std::int64_t>(k, 1);
    if (out[0].num_elements() == 0) return;
    if (k == 0) {  // no products: the result is post(bias) (or post(0))
      Tensor base = has_bias_ ? add(zeros(specs[0].shape), in[2]) : zeros(specs[0].shape);
      out[0] = activate(base);
      return;
    }
    // The bias joins oneDNN's GEMM (bit-equal to a separate add); the activation runs on the
    // vector kernels the unfused op uses, over the output while it is still in cache, so a
    // fused Dense gives the unfused numbers exactly.
    float* y = out[0].mutable_data<float>().data();
    cpu::gemm_f32(x.data<float>().data(), w.data<float>().data(), y, 1, rows, k, n, false, false,
                  has_bias_ ? in[2].data<float>().data() : nullptr, false, false, &w.impl().storage);
    if (activation_) {
      const auto& vk = cpu::vec::kernels();
      UnaryKind act = *activation_;
      cpu::parallel_for(rows * n, 8, [&](std::int64_t b, std::int64_t e) { vk.unary_f32(act, y + b, y + b, e - b); });
    }
  }

 private:
  Tensor activate(const Tensor& t) const { return activation_ ? dispatch1(Unary(*activation_), {t}) : t; }
  bool has_bias_;
  std::optional<UnaryKind> activation_;
};

}  // namespace

std::shared_ptr<Primitive> make_fused_dense(bool has_bias, std::optional<UnaryKind> activation) {
  return std::make_shared<FusedDense>(has_bias, activation);
}

// The activation runs on ef's own vector kernels (not oneDNN's post-ops, whose relu drops
// NaN and whose tanh/erf differ from ef's), so every float activation fuses.
bool fusible_activation(UnaryKind k) {
  return k == UnaryKind::relu || k == UnaryKind::sigmoid || k == UnaryKind::tanh || k == UnaryKind::gelu;
}

std::optional<UnaryKind> fusible_activation_named(const std::string& name) {
  for (UnaryKind k : {UnaryKind::relu, UnaryKind::sigmoid, UnaryKind::tanh, UnaryKind::gelu})
    if (name == unary_name(k)) return k;
  return std::nullopt;
}

bool eager_fusion_allowed() { return !trace::active_recorder() && !detail::tapes_recording(); }

Tensor eager_dense(const Tensor& x, const Tensor& kernel, const Tensor* bias, std::optional<UnaryKind> activation) {
  // Only where nothing would record the composed ops: a trace keeps its graph of primitive
  // ops (the fusion pass fuses it later) and a tape needs their gradients.
  if (!eager_fusion_allowed() || x.is_symbolic() || x.dtype() != DType::float32 || x.rank() < 2 ||
      kernel.dtype() != DType::float32 || (bias && bias->dtype() != DType::float32))
    return Tensor();
  if (activation && !fusible_activation(*activation)) return Tensor();
  FusedDense op(bias != nullptr, activation);
  if (bias) return dispatch1(op, {x, kernel, *bias});
  return dispatch1(op, {x, kernel});
}

void detail::register_fused_dense_rules() {
  register_op_rules<FusedDense>({.runs_per_example = true, .onnx_unsupported = "made by graph optimization, which ONNX export does not run"});
}

}  // namespace ef
