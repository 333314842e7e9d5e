#pragma once
// JAX-style function transformations over GradientTape:
//
//   auto f  = [](const ef::Tensor& x) { return ef::sum(ef::square(x)); };
//   auto df = ef::grad(f);                  // df(x) == 2 * x
//   auto [y, g] = ef::value_and_grad(f)(x);
//   auto hvp = ef::grad([&](const ef::Tensor& x) { return ef::sum(df(x) * v); });
//
// They compose with each other (gradients of gradients) and with ef::function (the whole
// forward and backward pass traces into one graph). The function must return a scalar;
// arguments are tensors. An argument that does not reach the result gets zeros (like JAX).
#include <array>
#include <concepts>
#include <functional>
#include <utility>
#include <vector>

#include "eagerflow/autodiff/gradient_tape.h"

namespace ef {

namespace detail {
// Validates argnums, gives each differentiated argument its own handle (one tensor passed
// twice gets two gradients), and watches them.
void prepare_grad_args(GradientTape& tape, std::span<Tensor> args, const std::vector<int>& argnums);
std::vector<Tensor> finish_grad(GradientTape& tape, const Tensor& value, std::span<const Tensor> args,
                                const std::vector<int>& argnums);

template <class F, class... Args>
std::pair<Tensor, std::vector<Tensor>> value_and_grad_call(const F& f, const std::vector<int>& argnums,
                                                           const Args&... args) {
  static_assert((std::convertible_to<const Args&, Tensor> && ...), "ef::grad: arguments must be tensors");
  std::array<Tensor, sizeof...(Args)> xs{Tensor(args)...};
  GradientTape tape;
  prepare_grad_args(tape, xs, argnums);
  Tensor value = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return Tensor(std::invoke(f, xs[I]...));
  }(std::index_sequence_for<Args...>{});
  std::vector<Tensor> grads = finish_grad(tape, value, xs, argnums);
  return {value, std::move(grads)};
}
}  // namespace detail

// The gradient with respect to argument `argnum`.
template <class F>
auto grad(F f, int argnum = 0) {
  return [f = std::move(f), argnum](const auto&... args) -> Tensor {
    return detail::value_and_grad_call(f, {argnum}, args...).second.at(0);
  };
}

// Gradients with respect to several arguments, in the order of `argnums`.
template <class F>
auto grad(F f, std::vector<int> argnums) {
  return [f = std::move(f), argnums = std::move(argnums)](const auto&... args) -> std::vector<Tensor> {
    return detail::value_and_grad_call(f, argnums, args...).second;
  };
}

template <class F>
auto value_and_grad(F f, int argnum = 0) {
  return [f = std::move(f), argnum](const auto&... args) -> std::pair<Tensor, Tensor> {
    auto [value, grads] = detail::value_and_grad_call(f, {argnum}, args...);
    return {value, grads.at(0)};
  };
}

template <class F>
auto value_and_grad(F f, std::vector<int> argnums) {
  return [f = std::move(f), argnums = std::move(argnums)](const auto&... args) -> std::pair<Tensor, std::vector<Tensor>> {
    return detail::value_and_grad_call(f, argnums, args...);
  };
}

}  // namespace ef
