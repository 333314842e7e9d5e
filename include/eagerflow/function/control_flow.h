#pragma once
// Control flow that works both ways: eagerly it simply runs; inside a trace, with a symbolic
// predicate or loop, each branch/body is traced once into a sub-graph that the graph runs.
#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

namespace detail {
using Branch = std::function<std::vector<Tensor>()>;
std::vector<Tensor> cond_impl(const Tensor& pred, const Branch& then_fn, const Branch& else_fn);
}  // namespace detail

// then_fn / else_fn take no arguments and return a Tensor or a std::vector<Tensor>; both must
// agree in count, dtypes and shapes. `pred` is a bool scalar.
template <class Then, class Else>
auto cond(const Tensor& pred, Then then_fn, Else else_fn) {
  using R = std::invoke_result_t<Then&>;
  static_assert(std::is_same_v<R, std::invoke_result_t<Else&>>, "ef::cond: both branches must return the same type");
  static_assert(std::is_same_v<R, Tensor> || std::is_same_v<R, std::vector<Tensor>>,
                "ef::cond: branches return a Tensor or a std::vector<Tensor>");
  auto wrap = [](auto& fn) -> detail::Branch {
    return [&fn]() -> std::vector<Tensor> {
      if constexpr (std::is_same_v<R, Tensor>) return {fn()};
      else return fn();
    };
  };
  std::vector<Tensor> out = detail::cond_impl(pred, wrap(then_fn), wrap(else_fn));
  if constexpr (std::is_same_v<R, Tensor>) return out.at(0);
  else return out;
}

using LoopCond = std::function<Tensor(const std::vector<Tensor>&)>;
using LoopBody = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// Runs body while cond(vars) is true and returns the final loop variables. The body must keep
// each loop variable's dtype and shape.
//
// maximum_iterations (TF's): the body runs at most this many times; when the count is reached
// the loop stops and returns the current loop variables (cond is not evaluated again), eagerly
// and in a trace alike. It must be >= 0 (0 returns loop_vars unchanged). Without it the loop
// runs until cond is false, like TF: a condition that never turns false runs forever.
//
// shape_invariants (TF's): empty, or one per loop variable: nullopt keeps the variable's shape,
// a Shape with kDynamic dims lets those dims change from iteration to iteration (a buffer that
// grows); the body's result must agree with it where it is known. Such a loop is not
// differentiable (each iteration's values could not be stacked).
std::vector<Tensor> while_loop(const LoopCond& cond_fn, const LoopBody& body_fn, std::vector<Tensor> loop_vars,
                               std::optional<std::int64_t> maximum_iterations = std::nullopt,
                               const std::vector<std::optional<Shape>>& shape_invariants = {});

}  // namespace ef
