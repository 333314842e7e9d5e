// matmul: NumPy semantics for rank >= 2 (batch dims broadcast). float32 runs on oneDNN;
// other dtypes use a plain loop (float64 exists for gradient checks, not speed).
#include <algorithm>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/gemm.h"
#include "ops/primitives.h"
#include "ops/shape_rules.h"

namespace ef {
namespace {

template <class T>
void naive_gemm(const T* a, const T* b, T* c, std::int64_t m, std::int64_t k, std::int64_t n) {
  for (std::int64_t i = 0; i < m; ++i) {
    T* row = c + i * n;
    std::fill(row, row + n, T(0));
    for (std::int64_t p = 0; p < k; ++p) {
      T av = a[i * k + p];
      const T* brow = b + p * n;
      for (std::int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
    }
  }
}

template <class T>
void gemm(const T* a, const T* b, T* c, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n, bool a_bc,
          bool b_bc) {
  if constexpr (std::is_same_v<T, float>) {
    cpu::gemm_f32(a, b, c, batch, m, k, n, a_bc, b_bc);
  } else {
    for (std::int64_t i = 0; i < batch; ++i)
      naive_gemm(a + (a_bc ? 0 : i * m * k), b + (b_bc ? 0 : i * k * n), c + i * m * n, m, k, n);
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

Tensor swap_last_two(const Tensor& t) {
  std::vector<int> perm;
  for (int a = 0; a < t.rank(); ++a) perm.push_back(a);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(t, perm);
}

}  // namespace

std::vector<TensorSpec> MatMul::infer(std::span<const Tensor> in) const {
    expect_inputs(*this, in, 2);
    const Tensor &a = in[0], &b = in[1];
    if (a.rank() < 2 || b.rank() < 2)
      fail(name(), "needs tensors of rank >= 2: " + describe(in, " x "));
    if (a.dtype() != b.dtype()) fail(name(), "dtypes differ: " + describe(in, " x "));
    if (a.dtype() == DType::bool_) fail(name(), "does not support bool: " + describe(in, " x "));
    std::int64_t ka = a.shape()[a.rank() - 1], kb = b.shape()[b.rank() - 2];
    if (ka != kb && ka != kDynamic && kb != kDynamic)
      fail(name(), "inner dimensions differ: " + describe(in, " x "));
    std::vector<std::int64_t> dims = batch_shape(*this, in).dims();
    dims.push_back(a.shape()[a.rank() - 2]);
    dims.push_back(b.shape()[b.rank() - 1]);
    return {{a.dtype(), Shape(std::move(dims)), {}}};
}

void MatMul::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
    const Tensor &a = in[0], &b = in[1];
    out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
    std::int64_t k = a.shape()[a.rank() - 1], n = b.shape()[b.rank() - 1];
    std::int64_t m = a.shape()[a.rank() - 2];
    std::int64_t a_batch = a.num_elements() / std::max<std::int64_t>(m * k, 1);
    std::int64_t b_batch = b.num_elements() / std::max<std::int64_t>(k * n, 1);
    if (m * k == 0) a_batch = product_of_batch(a);
    if (k * n == 0) b_batch = product_of_batch(b);
    std::int64_t batch = product_of_batch(out[0]);
    if (out[0].num_elements() == 0) return;
    dispatch_dtype(a.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (!std::is_same_v<T, bool>) {
        const T* pa = a.data<T>().data();
        const T* pb = b.data<T>().data();
        T* pc = out[0].mutable_data<T>().data();
        if (k == 0) {
          std::fill(pc, pc + out[0].num_elements(), T(0));
          return;
        }
        if (b_batch == 1 && a_batch == batch) {
          // The Dense case: fold a's batch into its rows, one GEMM.
          gemm<T>(pa, pb, pc, 1, batch * m, k, n, false, false);
        } else if (a_batch == batch && b_batch == batch) {
          gemm<T>(pa, pb, pc, batch, m, k, n, false, false);
        } else if (a_batch == 1 && b_batch == batch) {
          gemm<T>(pa, pb, pc, batch, m, k, n, true, false);
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
            gemm<T>(pa + offset_of(a, ob, m * k), pb + offset_of(b, ob, k * n), pc + ob * m * n, 1, m, k, n, false, false);
        }
      }
    });
  }

std::vector<Tensor> MatMul::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                const std::vector<bool>& needed) const {
  const Tensor &a = in[0], &b = in[1], &g = cot[0];
  if (!is_floating(a.dtype())) return {Tensor(), Tensor()};
  Tensor ga, gb;
  std::int64_t k = b.shape()[b.rank() - 2], n = b.shape()[b.rank() - 1];
  if (b.rank() == 2 && k != kDynamic && n != kDynamic) {
    // The Dense case: a's batch dims fold into rows, so b's gradient is one 2-D product.
    if (needed[0]) ga = matmul(g, transpose(b));
    if (needed[1])
      gb = a.rank() == 2 ? matmul(transpose(a), g) : matmul(transpose(reshape(a, {-1, k})), reshape(g, {-1, n}));
  } else {
    if (needed[0]) ga = sum_to(matmul(g, swap_last_two(b)), a);
    if (needed[1]) gb = sum_to(matmul(swap_last_two(a), g), b);
  }
  return {ga, gb};
}

Tensor matmul(const Tensor& a, const Tensor& b) { return dispatch1(MatMul(), {a, b}); }

}  // namespace ef
