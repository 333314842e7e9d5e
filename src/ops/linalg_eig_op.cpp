// tf.linalg.eig / eigvals: the eigen-decomposition of general square matrices (LAPACK's zgeev),
// complex results for real or complex input (include/eagerflow/ops/complex.h).
#include <lapacke.h>

#include <complex>

#include "eagerflow/ops/complex.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef {

// [..., n, n] complex128 -> eigenvalues [..., n] and, with vectors, the right eigenvectors as
// the columns of [..., n, n] (each of unit norm, as LAPACK's and TF's).
class Eig : public MergeablePrimitive<Eig> {
 public:
  explicit Eig(bool vectors) : vectors_(vectors) {}
  const char* name() const override { return vectors_ ? "eig" : "eigvals"; }
  bool takes_complex() const override { return true; }
  OpParams parameters() const override { return OpParams().add_flag("vectors", vectors_); }

  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    const Tensor& a = in[0];
    if (a.dtype() != DType::complex128) fail(kWrongType, name(), "computes in complex128, got " + a.spec().str());
    if (a.rank() < 2 || (a.dim(-1) != a.dim(-2) && a.dim(-1) != kDynamic && a.dim(-2) != kDynamic))
      fail(ErrorCode::invalid_argument, name(), "needs square matrices [..., n, n], got " + a.spec().str());
    std::vector<std::int64_t> dims(a.shape().begin(), a.shape().end() - 1);
    std::vector<TensorSpec> out{{DType::complex128, Shape(dims), {}}};
    if (vectors_) out.push_back(a.spec());
    return out;
  }

  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override {
    const Tensor& a = in[0];
    std::int64_t n = a.dim(-1), batch = n ? a.num_elements() / (n * n) : 0;
    out[0] = Tensor::empty(DType::complex128, specs[0].shape);
    if (vectors_) out[1] = Tensor::empty(DType::complex128, specs[1].shape);
    using C = std::complex<double>;
    std::vector<C> work(static_cast<std::size_t>(n * n)), vr(static_cast<std::size_t>(vectors_ ? n * n : 1));
    const C* pa = a.data<C>().data();
    C* w = out[0].mutable_data<C>().data();
    for (std::int64_t b = 0; b < batch; ++b) {
      std::copy(pa + b * n * n, pa + (b + 1) * n * n, work.begin());
      for (const C& v : work)
        if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
          fail(ErrorCode::invalid_argument, name(), "the matrix holds NaN or Inf (matrix " + std::to_string(b) + ")");
      auto* lw = reinterpret_cast<lapack_complex_double*>(w + b * n);
      int info = LAPACKE_zgeev(LAPACK_ROW_MAJOR, 'N', vectors_ ? 'V' : 'N', static_cast<lapack_int>(n),
                               reinterpret_cast<lapack_complex_double*>(work.data()), static_cast<lapack_int>(n), lw,
                               nullptr, 1, reinterpret_cast<lapack_complex_double*>(vr.data()),
                               static_cast<lapack_int>(vectors_ ? n : 1));
      if (info != 0)
        fail(ErrorCode::invalid_argument, name(), "the eigen-decomposition did not converge (matrix " + std::to_string(b) + ")");
      if (vectors_) std::copy(vr.begin(), vr.end(), out[1].mutable_data<C>().data() + b * n * n);
    }
  }

 private:
  bool vectors_;
};

namespace linalg {
namespace {
Tensor as_complex128(const Tensor& a) {
  if (!is_inexact(a.dtype())) fail(kWrongType, "linalg.eig", "takes floating or complex matrices, got " + a.spec().str());
  return cast(a, DType::complex128);
}
// The dtype TF gives: complex64 for float32/complex64 input, complex128 for float64/complex128.
DType result_dtype(const Tensor& a) {
  return a.dtype() == DType::float64 || a.dtype() == DType::complex128 ? DType::complex128 : DType::complex64;
}
}  // namespace

std::pair<Tensor, Tensor> eig(const Tensor& a) {
  Tensor in = as_complex128(a);
  std::vector<Tensor> out = dispatch(Eig(true), std::span<const Tensor>(&in, 1));
  DType d = result_dtype(a);
  return {cast(out[0], d), cast(out[1], d)};
}

Tensor eigvals(const Tensor& a) {
  Tensor in = as_complex128(a);
  return cast(dispatch1(Eig(false), std::span<const Tensor>(&in, 1)), result_dtype(a));
}
}  // namespace linalg

void detail::add_eig_factories(detail::OpFactories& f) {
  f["eig"] = [](const OpParams&) { return std::make_shared<Eig>(true); };
  f["eigvals"] = [](const OpParams&) { return std::make_shared<Eig>(false); };
}

void detail::register_eig_rules() {
  register_op_rules<Eig>({.batching = [](const Eig& op, BatchingCall call) { return batching::leading_batch(op, call); },
                          .onnx_unsupported = "ONNX has no complex tensors"});
}

}  // namespace ef
