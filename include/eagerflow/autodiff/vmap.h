#pragma once
// ef::vmap: automatic batching (JAX's jax.vmap). vmap(f) runs a function written for one
// example on a batch of examples, as if f were called once per example and the results
// stacked, but with batched ops:
//
//   auto per_example_grads = ef::vmap(ef::grad(loss, {0, 1}), {ef::not_batched, ef::not_batched, 0, 0});
//   std::vector<ef::Tensor> g = per_example_grads(w, b, x_batch, y_batch);  // g[0]: [B, ...w.shape]
//
// f sees per-example tensors (the batch axis removed). It composes with ef::grad, ef::jvp,
// ef::function (ef::function(ef::vmap(f)) traces the batched ops once) and with itself.
// f takes tensors and returns a Tensor, a std::vector<Tensor> or a std::pair of those.
// See docs/transforms.md for the design, the batching rules and their limits.
#include <concepts>
#include <functional>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

// An in_axes entry for an argument every example sees whole (JAX's None).
inline constexpr std::nullopt_t not_batched = std::nullopt;

// Where each argument's batch axis is: one int for every argument (the default 0), or one
// entry per argument, an axis or ef::not_batched.
struct InAxes {
  InAxes(int axis = 0) : axes{axis}, for_all(true) {}  // NOLINT: implicit on purpose
  InAxes(std::initializer_list<std::optional<int>> per_argument) : axes(per_argument) {}
  InAxes(std::vector<std::optional<int>> per_argument) : axes(std::move(per_argument)) {}  // NOLINT
  std::vector<std::optional<int>> axes;
  bool for_all = false;
};

// Where the batch axis goes in each output (flattened in order): one int for all, or one per
// output. Negative axes count from the end of the batched output.
struct OutAxes {
  OutAxes(int axis = 0) : axes{axis}, for_all(true) {}  // NOLINT: implicit on purpose
  OutAxes(std::initializer_list<int> per_output) : axes(per_output) {}
  OutAxes(std::vector<int> per_output) : axes(std::move(per_output)) {}  // NOLINT
  std::vector<int> axes;
  bool for_all = false;
};

namespace detail {

using VmapBody = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// Runs `body` on per-example views of `args` and returns its outputs batched.
std::vector<Tensor> vmap_call(const VmapBody& body, const std::vector<Tensor>& args, const InAxes& in_axes,
                              const OutAxes& out_axes);

// The results vmap accepts, flattened to a list of tensors and rebuilt.
template <class R>
struct VmapResult;
template <>
struct VmapResult<Tensor> {
  static void flatten(const Tensor& r, std::vector<Tensor>& out, std::vector<std::size_t>&) { out.push_back(r); }
  static Tensor build(const std::vector<Tensor>& flat, std::size_t& at, const std::vector<std::size_t>&, std::size_t&) {
    return flat.at(at++);
  }
};
template <>
struct VmapResult<std::vector<Tensor>> {
  static void flatten(const std::vector<Tensor>& r, std::vector<Tensor>& out, std::vector<std::size_t>& sizes) {
    sizes.push_back(r.size());
    out.insert(out.end(), r.begin(), r.end());
  }
  static std::vector<Tensor> build(const std::vector<Tensor>& flat, std::size_t& at,
                                   const std::vector<std::size_t>& sizes, std::size_t& list) {
    std::size_t n = sizes.at(list++);
    std::vector<Tensor> r(flat.begin() + static_cast<std::ptrdiff_t>(at), flat.begin() + static_cast<std::ptrdiff_t>(at + n));
    at += n;
    return r;
  }
};
template <class A, class B>
struct VmapResult<std::pair<A, B>> {
  static void flatten(const std::pair<A, B>& r, std::vector<Tensor>& out, std::vector<std::size_t>& sizes) {
    VmapResult<A>::flatten(r.first, out, sizes);
    VmapResult<B>::flatten(r.second, out, sizes);
  }
  static std::pair<A, B> build(const std::vector<Tensor>& flat, std::size_t& at, const std::vector<std::size_t>& sizes,
                               std::size_t& list) {
    A a = VmapResult<A>::build(flat, at, sizes, list);
    B b = VmapResult<B>::build(flat, at, sizes, list);
    return {std::move(a), std::move(b)};
  }
};

}  // namespace detail

template <class F>
auto vmap(F f, InAxes in_axes = 0, OutAxes out_axes = 0) {
  return [f = std::move(f), in_axes = std::move(in_axes), out_axes = std::move(out_axes)](const auto&... args) {
    static_assert((std::convertible_to<const decltype(args)&, Tensor> && ...), "ef::vmap: arguments must be tensors");
    using R = std::decay_t<std::invoke_result_t<const F&, decltype((Tensor(args), std::declval<const Tensor&>()))...>>;
    std::vector<Tensor> flat_args{Tensor(args)...};
    std::vector<std::size_t> sizes;  // the structure of the result, fixed by the per-example call
    detail::VmapBody body = [&](const std::vector<Tensor>& xs) {
      R r = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return std::invoke(f, xs[I]...);
      }(std::make_index_sequence<sizeof...(args)>{});
      std::vector<Tensor> out;
      sizes.clear();
      detail::VmapResult<R>::flatten(r, out, sizes);
      return out;
    };
    std::vector<Tensor> outs = detail::vmap_call(body, flat_args, in_axes, out_axes);
    std::size_t at = 0, list = 0;
    return detail::VmapResult<R>::build(outs, at, sizes, list);
  };
}

}  // namespace ef
