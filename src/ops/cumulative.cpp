// cumsum / cumprod along an axis with TF's exclusive and reverse options.
#include <algorithm>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/primitive.h"
#include "kernels/cpu/parallel.h"
#include "ops/elementwise_math.h"
#include "ops/op_factories.h"
#include "ops/sequence_primitives.h"

namespace ef {

std::vector<TensorSpec> Cumulative::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  if (in[0].dtype() == DType::bool_) fail(name(), "does not support bool: " + in[0].spec().str());
  if (in[0].rank() == 0) fail(name(), "needs a tensor of rank >= 1, got " + in[0].spec().str());
  normalize_axis(axis_, in[0].rank(), name());
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Cumulative::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  const Shape& s = specs[0].shape;
  if (s.num_elements() == 0) return;
  int a = normalize_axis(axis_, s.rank(), name());
  std::int64_t outer = 1, n = s[a], inner = 1;
  for (int d = 0; d < a; ++d) outer *= s[d];
  for (int d = a + 1; d < s.rank(); ++d) inner *= s[d];
  dispatch_dtype(specs[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const T* p = in[0].data<T>().data();
      T* o = out[0].mutable_data<T>().data();
      const bool prod = product_, excl = exclusive_, rev = reverse_;
      auto combine = [prod](T x, T y) -> T {
        if constexpr (std::is_integral_v<T>) return prod ? wrap_mul(x, y) : wrap_add(x, y);
        else return prod ? x * y : x + y;
      };
      // Each (outer) block is independent; inside, the scan runs along the axis and the
      // innermost loop over `inner` contiguous elements vectorizes.
      cpu::parallel_for(outer, n * inner, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i) {
          const T* x = p + i * n * inner;
          T* y = o + i * n * inner;
          for (std::int64_t t = 0; t < n; ++t) {
            std::int64_t cur = rev ? n - 1 - t : t, prev = rev ? cur + 1 : cur - 1;
            T* yc = y + cur * inner;
            if (t == 0) {
              if (excl) std::fill_n(yc, inner, prod ? T(1) : T(0));
              else std::copy_n(x + cur * inner, inner, yc);
              continue;
            }
            const T* yp = y + prev * inner;
            const T* xs = x + (excl ? prev : cur) * inner;
            for (std::int64_t e = 0; e < inner; ++e) yc[e] = combine(yp[e], xs[e]);
          }
        }
      });
    }
  });
}

std::vector<Tensor> Cumulative::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                    const std::vector<bool>&) const {
  Cumulative back(false, axis_, exclusive_, !reverse_);
  if (!product_) return {dispatch1(back, {cot[0]})};
  // TF's rule: d x_i = sum over later outputs of g_j * y_j / x_i; exact where x has no zeros.
  return {dispatch1(back, {cot[0] * out[0]}) / in[0]};
}

Tensor cumsum(const Tensor& x, int axis, bool exclusive, bool reverse) {
  return dispatch1(Cumulative(false, axis, exclusive, reverse), {x});
}
Tensor cumprod(const Tensor& x, int axis, bool exclusive, bool reverse) {
  return dispatch1(Cumulative(true, axis, exclusive, reverse), {x});
}

void detail::add_cumulative_factories(detail::OpFactories& f) {
  for (bool prod : {false, true})
    f[prod ? "cumprod" : "cumsum"] = [prod](const OpParams& p) {
      return std::make_shared<Cumulative>(prod, p.axis("axis"), p.flag("exclusive"), p.flag("reverse"));
    };
}

}  // namespace ef
