// matmul: NumPy semantics for rank >= 2 (batch dims broadcast), with TF's transpose_a/b.
// float32 runs on oneDNN; other dtypes use a plain loop (float64 exists for gradient checks,
// not speed).
#include <algorithm>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/gemm.h"
#include "ops/bfloat16_dispatch.h"
#include "ops/elementwise_math.h"
#include "ops/complex_op.h"
#include "ops/primitives.h"
#include "ops/shape_rules.h"
#include "ops/op_factories.h"

namespace ef {
namespace {

// C[m,n] = op(A) op(B); a transposed A is stored [k,m], a transposed B [n,k].
template <class T>
void naive_gemm(const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n, bool ta, bool tb) {
  for (std::int64_t i = 0; i < m; ++i) {
    T* row = c + i * n;
    std::fill(row, row + n, T(0));
    for (std::int64_t p = 0; p < k; ++p) {
      T av = ta ? a[p * m + i] : a[i * k + p];
      for (std::int64_t j = 0; j < n; ++j) {
        T bv = tb ? b[j * k + p] : b[p * n + j];
        if constexpr (std::is_integral_v<T>) row[j] = wrap_add(row[j], wrap_mul(av, bv));  // wraps like TF, no UB
        else row[j] += av * bv;
      }
    }
  }
}

// `b_owner`: the storage B lives in (the GEMM keeps the panels of an unchanged B: weights).
template <class T>
void gemm(const T* a, const T* b, T* c, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n, bool a_bc,
          bool b_bc, bool ta, bool tb, const std::shared_ptr<Storage>* b_owner) {
  if constexpr (std::is_same_v<T, float>) {
    cpu::gemm_f32(a, b, c, batch, m, k, n, a_bc, b_bc, nullptr, ta, tb, b_owner);
  } else {
    for (std::int64_t i = 0; i < batch; ++i)
      naive_gemm(a + (a_bc ? 0 : i * m * k), b + (b_bc ? 0 : i * k * n), c + i * m * n, m, k, n, ta, tb);
  }
}

std::int64_t product_of_batch(const Tensor& t) {
  std::int64_t p = 1;
  for (int d = 0; d + 2 < t.rank(); ++d) p *= t.shape()[d];
  return p;
}

Shape batch_shape(const Primitive& op, std::span<const Tensor> in) {
  std::vector<Shape> batches;
  for (const auto& t : in) batches.emplace_back(std::vector<std::int64_t>(t.shape().begin(), t.shape().end() - 2));
  Shape out;
  if (!try_broadcast(batches, out)) fail(op.name(), "batch dimensions cannot broadcast: " + describe(in, " x "));
  return out;
}

// The (rows, cols) of op(t): the last two dims, swapped when transposed.
std::pair<std::int64_t, std::int64_t> matrix_dims(const Tensor& t, bool transposed) {
  std::int64_t r = t.shape()[t.rank() - 2], c = t.shape()[t.rank() - 1];
  return transposed ? std::pair{c, r} : std::pair{r, c};
}

}  // namespace

bool MatMul::takes_bfloat16() const { return cpu::native_bfloat16(); }

// bfloat16 operands on oneDNN's bfloat16 kernels (AVX512_BF16 / AMX): float32 accumulation and
// one rounding per result, as the float32 path rounds its float32 result once. Returns false
// for a layout it leaves to the float32 path (general batch broadcasting).
bool native_bfloat16_matmul(const Tensor& a, const Tensor& b, Tensor& c, std::int64_t m, std::int64_t k, std::int64_t n,
                            bool ta, bool tb) {
  std::int64_t a_batch = product_of_batch(a), b_batch = product_of_batch(b), batch = product_of_batch(c);
  const void* pa = a.raw_data();
  const void* pb = b.raw_data();
  void* pc = c.raw_mutable_data();
  if (k == 0) {
    std::fill_n(static_cast<std::uint16_t*>(pc), c.num_elements(), std::uint16_t(0));  // +0.0 in bfloat16
    return true;
  }
  if (b_batch == 1 && a_batch == batch && !ta) cpu::gemm_bf16(pa, pb, pc, 1, batch * m, k, n, false, false, ta, tb);
  else if (a_batch == batch && b_batch == batch) cpu::gemm_bf16(pa, pb, pc, batch, m, k, n, false, false, ta, tb);
  else if (a_batch == 1 && b_batch == batch) cpu::gemm_bf16(pa, pb, pc, batch, m, k, n, true, false, ta, tb);
  else if (b_batch == 1 && a_batch == batch) cpu::gemm_bf16(pa, pb, pc, batch, m, k, n, false, true, ta, tb);
  else return false;
  return true;
}

OpParams MatMul::parameters() const { return OpParams().add_flag("transpose_a", ta_).add_flag("transpose_b", tb_); }

std::vector<TensorSpec> MatMul::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  const Tensor &a = in[0], &b = in[1];
  if (a.rank() < 2 || b.rank() < 2) fail(name(), "needs tensors of rank >= 2: " + describe(in, " x "));
  if (a.dtype() != b.dtype()) {
    bool storage = is_storage_dtype(a.dtype()) || is_storage_dtype(b.dtype());
    fail(kWrongType, name(),
         "dtypes differ: " + describe(in, " x ") +
             (storage ? " (" + std::string(name_of(is_storage_dtype(a.dtype()) ? a.dtype() : b.dtype())) +
                            " and float32 do not mix; use ef::cast, or a mixed precision policy that casts a layer's "
                            "inputs and variables)"
                      : std::string()));
  }
  if (a.dtype() == DType::bool_) fail(kWrongType, name(), "does not support bool: " + describe(in, " x "));
  auto [m, ka] = matrix_dims(a, ta_);
  auto [kb, n] = matrix_dims(b, tb_);
  if (ka != kb && ka != kDynamic && kb != kDynamic)
    fail(name(), "inner dimensions differ: " + describe(in, " x ") + (ta_ || tb_ ? " (" + attrs() + ")" : ""));
  std::vector<std::int64_t> dims = batch_shape(*this, in).dims();
  dims.push_back(m);
  dims.push_back(n);
  return {{a.dtype(), Shape(std::move(dims)), {}}};
}

void MatMul::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Tensor &a = in[0], &b = in[1];
  if (is_storage_dtype(a.dtype()) && a.dtype() != DType::bfloat16) {  // float16, uint8 ...: in float32
    out[0] = detail::dispatch_via_float32(*this, in).at(0);
    return;
  }
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  if (out[0].num_elements() == 0) return;  // before multiplying (maybe huge) batch dims
  auto [m, k] = matrix_dims(a, ta_);
  std::int64_t n = matrix_dims(b, tb_).second;
  if (a.dtype() == DType::bfloat16) {
    if (native_bfloat16_matmul(a, b, out[0], m, k, n, ta_, tb_)) return;
    out[0] = detail::dispatch_via_float32(*this, in).at(0);
    return;
  }
  std::int64_t a_batch = product_of_batch(a), b_batch = product_of_batch(b);
  std::int64_t batch = product_of_batch(out[0]);
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pa = a.data<T>().data();
      const T* pb = b.data<T>().data();
      T* pc = out[0].mutable_data<T>().data();
      const std::shared_ptr<Storage>* owner = &b.impl().storage;
      if (k == 0) {
        std::fill(pc, pc + out[0].num_elements(), T(0));
        return;
      }
      if (b_batch == 1 && a_batch == batch && !ta_) {
        // The Dense case: fold a's batch into its rows, one GEMM.
        gemm<T>(pa, pb, pc, 1, batch * m, k, n, false, false, ta_, tb_, owner);
      } else if (a_batch == batch && b_batch == batch) {
        gemm<T>(pa, pb, pc, batch, m, k, n, false, false, ta_, tb_, owner);
      } else if (a_batch == 1 && b_batch == batch) {
        gemm<T>(pa, pb, pc, batch, m, k, n, true, false, ta_, tb_, owner);
      } else if (b_batch == 1 && a_batch == batch) {
        gemm<T>(pa, pb, pc, batch, m, k, n, false, true, ta_, tb_, owner);
      } else {
        // General broadcast of batch dims: walk the output batch, one GEMM each.
        const Shape& os = out[0].shape();
        int br = os.rank() - 2;
        auto offset_of = [&](const Tensor& t, std::int64_t ob, std::int64_t mat) {
          std::int64_t off = 0, stride = 1, rem = ob;
          int tb = t.rank() - 2;
          for (int d = br - 1; d >= 0; --d) {
            std::int64_t idx = rem % os[d];
            rem /= os[d];
            int td = d - (br - tb);
            if (td >= 0) {
              std::int64_t dim = t.shape()[td];
              off += (dim == 1 ? 0 : idx) * stride;
              stride *= dim;
            }
          }
          return off * mat;
        };
        for (std::int64_t ob = 0; ob < batch; ++ob)
          gemm<T>(pa + offset_of(a, ob, m * k), pb + offset_of(b, ob, k * n), pc + ob * m * n, 1, m, k, n, false, false,
                  ta_, tb_, owner);
      }
    }
  });
}

std::vector<Tensor> MatMul::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  const Tensor &a = in[0], &b = in[1], &g = cot[0];
  if (!is_floating(a.dtype())) return {Tensor(), Tensor()};
  Tensor ga, gb;
  // The Dense case (2-D weights, a's batch folded into rows): b's gradient is one 2-D
  // product over all rows, with no batched product and no reduction.
  std::int64_t k = b.shape()[tb_ ? 1 : 0], n = b.shape()[tb_ ? 0 : 1];
  if (b.rank() == 2 && a.rank() > 2 && !ta_ && k != kDynamic && n != kDynamic) {
    if (needed[0]) ga = matmul(g, b, false, !tb_);
    if (needed[1]) {
      Tensor a2 = reshape(a, {-1, k}), g2 = reshape(g, {-1, n});
      gb = tb_ ? matmul(g2, a2, true, false) : matmul(a2, g2, true, false);
    }
    return {ga, gb};
  }
  // C = op(A) op(B): each gradient is one product with transposed operands, reduced over
  // broadcast batch dims.
  if (needed[0]) {
    if (!ta_) ga = matmul(g, b, false, !tb_);  // g op(B)^T
    else ga = matmul(b, g, tb_, true);         // (g op(B)^T)^T = op(B) g^T
    ga = sum_to(ga, a);
  }
  if (needed[1]) {
    if (!tb_) gb = matmul(a, g, !ta_, false);  // op(A)^T g
    else gb = matmul(g, a, true, ta_);         // (op(A)^T g)^T = g^T op(A)
    gb = sum_to(gb, b);
  }
  return {ga, gb};
}

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  if (detail::complex_input(a) || detail::complex_input(b)) [[unlikely]]
    return detail::complex_matmul(a, b, transpose_a, transpose_b, false, false);
  return dispatch1(MatMul(transpose_a, transpose_b), {a, b});
}


void detail::add_matmul_factories(detail::OpFactories& f) {
  f["matmul"] = [](const OpParams& p) { return std::make_shared<MatMul>(p.flag("transpose_a"), p.flag("transpose_b")); };
}

}  // namespace ef
