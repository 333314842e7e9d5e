#pragma once
// ef::scan: JAX's lax.scan. f(carry, x) -> (carry, y) over the leading axis of xs, the ys
// stacked along a new leading axis:
//
//   auto [total, partial] = ef::scan([](const Tensor& c, const Tensor& x) {
//     Tensor s = c + x;
//     return std::pair{s, s};
//   }, ef::zeros({}), xs);  // partial = the cumulative sums of xs
//
// Eagerly the body runs once per step (host code, ef::print and reading values work in it as
// in any eager code; a tape records every step). Inside a trace the body is traced once into
// a sub-graph and the loop is one `scan` node; a tape records its variant that keeps, stacked
// over the steps, what each step's gradient needs, and the gradient is one more scan running
// backwards over those values (the forward pass never runs again). That backward scan is
// itself differentiable where the body's gradient rules are (gradients of gradients).
// A dynamic leading dim (ef::kDynamic) keeps one trace for every sequence length.
#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

struct ScanOptions {
  // Runs from the last row of xs to the first; ys stay in xs' order (ys[i] comes from xs[i]).
  bool reverse = false;
  // The number of steps: required without xs; with xs it must equal their leading dim.
  std::optional<std::int64_t> length;
};

// carry, x (one row of each xs, in order) -> (new carry, ys of this step). The body must keep
// each carry's dtype and shape, and return the same number of ys, with the same specs, at
// every step.
using ScanBody = std::function<std::pair<std::vector<Tensor>, std::vector<Tensor>>(const std::vector<Tensor>& carry,
                                                                                 const std::vector<Tensor>& x)>;

// Several carries and several sequences: returns (final carries, stacked ys).
std::pair<std::vector<Tensor>, std::vector<Tensor>> scan(const ScanBody& f, std::vector<Tensor> init,
                                                         std::vector<Tensor> xs, ScanOptions options = {});

// One carry, one sequence and one y: f(carry, x) returns std::pair<Tensor, Tensor>.
template <class F>
  requires std::is_invocable_r_v<std::pair<Tensor, Tensor>, const F&, const Tensor&, const Tensor&>
std::pair<Tensor, Tensor> scan(const F& f, const Tensor& init, const Tensor& xs, ScanOptions options = {}) {
  ScanBody body = [&f](const std::vector<Tensor>& c, const std::vector<Tensor>& x) {
    std::pair<Tensor, Tensor> r = f(c.at(0), x.at(0));
    return std::pair{std::vector<Tensor>{r.first}, std::vector<Tensor>{r.second}};
  };
  auto [carry, ys] = scan(body, std::vector<Tensor>{init}, std::vector<Tensor>{xs}, options);
  return {carry.at(0), ys.at(0)};
}

}  // namespace ef
