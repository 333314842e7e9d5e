#include <algorithm>

#include "eagerflow/ops/ops.h"
#include "kernels/cpu/gemm.h"
#include "ops/fused.h"
#include "ops/primitives.h"

namespace ef {
namespace {

cpu::PostOp post_op_of(std::optional<UnaryKind> a) {
  if (!a) return cpu::PostOp::none;
  switch (*a) {
    case UnaryKind::relu: return cpu::PostOp::relu;
    case UnaryKind::sigmoid: return cpu::PostOp::sigmoid;
    case UnaryKind::tanh: return cpu::PostOp::tanh;
    case UnaryKind::gelu: return cpu::PostOp::gelu;
    default: return cpu::PostOp::none;
  }
}

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
    cpu::gemm_f32(x.data<float>().data(), w.data<float>().data(), out[0].mutable_data<float>().data(), 1, rows, k, n,
                  false, false, has_bias_ ? in[2].data<float>().data() : nullptr, post_op_of(activation_));
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

// relu is not fused: oneDNN's relu post-op turns NaN into 0, where ef::relu keeps NaN (so
// would eager Dense), and replay must equal eager. sigmoid, tanh and gelu keep NaN.
bool fusible_activation(UnaryKind k) { return k == UnaryKind::sigmoid || k == UnaryKind::tanh || k == UnaryKind::gelu; }

}  // namespace ef
