// Forward mode from reverse mode (the "linearity trick"): for u a cotangent of the outputs, the
// gradient g(u) = J^T u is linear in u, so J v = d/du <g(u), v>. A tape records the forward
// pass; a second tape, watching u, records the backward pass that computes g(u); its gradient
// of <g(u), v> with respect to u is the tangent. Every op whose gradient rule is made of
// differentiable ops gets forward mode this way, with no per-op jvp rule to keep in sync.
#include "eagerflow/autodiff/forward.h"

#include <string>

#include "eagerflow/autodiff/gradient_tape.h"
#include "eagerflow/autodiff/vmap.h"
#include "eagerflow/ops/ops.h"

namespace ef {
namespace {

[[noreturn]] void rethrow_for_jvp(const Error& e) {
  fail(e.kind(), "jvp",
       std::string("forward mode differentiates each op's gradient rule, and that failed: ") + e.what());
}

void check_tangent(const Tensor& primal, const Tensor& tangent, std::size_t i) {
  std::string which = std::to_string(i);
  if (!primal.defined()) fail("jvp", "primal " + which + " is undefined (default-constructed)");
  if (!tangent.defined()) return;
  if (!is_floating(primal.dtype()))
    fail("jvp", "primal " + which + " is " + primal.spec().str() +
                    "; only floating primals take tangents (pass an undefined Tensor() for it)");
  bool same_shape = primal.shape() == tangent.shape() || !primal.shape().is_static() || !tangent.shape().is_static();
  if (tangent.dtype() != primal.dtype() || !same_shape || tangent.rank() != primal.rank())
    fail("jvp", "tangent " + which + " is " + tangent.spec().str() + " but primal " + which + " is " +
                    primal.spec().str() + " (a tangent has its primal's dtype and shape)");
}

// The gradient computation of `tape` from `outputs` to `sources`, recorded as a function of
// cotangents `us` (returned through `us`, watched by `dual`).
std::vector<Tensor> recorded_vjp(GradientTape& tape, GradientTape& dual, const std::vector<Tensor>& outputs,
                                 const std::vector<GradientSource>& sources, std::vector<Tensor>& us) {
  std::vector<Tensor> targets;
  for (const auto& y : outputs) {
    if (!is_floating(y.dtype())) continue;
    us.push_back(zeros_like(y));
    dual.watch(us.back());
    targets.push_back(y);
  }
  if (targets.empty()) return std::vector<Tensor>(sources.size());
  try {
    return tape.gradient(targets, sources, us, UnconnectedGradients::none);
  } catch (const Error& e) {
    rethrow_for_jvp(e);
  }
}

// <g, v> summed over the sources: one scalar per pair (their dtypes may differ); the dual
// tape adds their gradients.
std::vector<Tensor> inner_products(const std::vector<Tensor>& grads, const std::vector<Tensor>& tangents) {
  std::vector<Tensor> terms;
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (grads[i].defined()) terms.push_back(sum(mul(grads[i], tangents[i])));
  return terms;
}

std::vector<Tensor> tangents_of(GradientTape& dual, const std::vector<Tensor>& terms, const std::vector<Tensor>& outputs,
                                const std::vector<Tensor>& us) {
  std::vector<Tensor> du;
  if (!terms.empty()) {
    std::vector<GradientSource> sources(us.begin(), us.end());
    try {
      du = dual.gradient(terms, sources, {}, UnconnectedGradients::zero);
    } catch (const Error& e) {
      rethrow_for_jvp(e);
    }
  }
  std::vector<Tensor> out;
  std::size_t k = 0;
  for (const auto& y : outputs) {
    if (!is_floating(y.dtype())) {
      out.push_back(zeros_like(y));
      continue;
    }
    out.push_back(terms.empty() ? zeros_like(y) : du.at(k));
    ++k;
  }
  return out;
}

Tensor basis(std::int64_t n, const Shape& shape, DType dtype) {
  std::vector<std::int64_t> dims{n};
  dims.insert(dims.end(), shape.begin(), shape.end());
  return reshape(one_hot(arange(n), n, dtype), Shape(dims));
}

Shape concat_shapes(const Shape& a, const Shape& b) {
  std::vector<std::int64_t> dims(a.begin(), a.end());
  dims.insert(dims.end(), b.begin(), b.end());
  return Shape(dims);
}

void expect_static_floating(const Tensor& t, const char* what, const char* fn) {
  if (!t.defined()) fail(fn, std::string(what) + " is undefined");
  if (!is_floating(t.dtype()))
    fail(kWrongType, fn, std::string(what) + " is " + t.spec().str() + "; Jacobians exist for floating tensors only");
  if (!t.shape().is_static())
    fail(fn, std::string(what) + " is " + t.spec().str() + "; a Jacobian needs a static shape (one basis vector per element)");
}

}  // namespace

std::pair<std::vector<Tensor>, std::vector<Tensor>> jvp(const TensorListFn& f, const std::vector<Tensor>& primals,
                                                        const std::vector<Tensor>& tangents) {
  if (!f) fail("jvp", "the function is empty");
  if (primals.size() != tangents.size())
    fail("jvp", "got " + std::to_string(tangents.size()) + " tangents for " + std::to_string(primals.size()) + " primals");
  for (std::size_t i = 0; i < primals.size(); ++i) check_tangent(primals[i], tangents[i], i);

  GradientTape dual(false, false);  // made first: it is below `tape`, and records its backward pass
  GradientTape tape(false, false);
  std::vector<Tensor> xs;
  std::vector<GradientSource> sources;
  std::vector<Tensor> directions;
  for (std::size_t i = 0; i < primals.size(); ++i) {
    xs.push_back(identity(primals[i]));  // its own handle: one tensor passed twice gets two tangents
    if (tangents[i].defined()) {
      tape.watch(xs.back());
      sources.emplace_back(xs.back());
      directions.push_back(tangents[i]);
    }
  }
  std::vector<Tensor> ys = f(xs);
  for (std::size_t k = 0; k < ys.size(); ++k)
    if (!ys[k].defined()) fail("jvp", "output " + std::to_string(k) + " of the function is undefined");
  std::vector<Tensor> us;
  std::vector<Tensor> grads;
  {
    auto pause = tape.stop_recording();
    if (sources.empty()) grads.clear();
    else grads = recorded_vjp(tape, dual, ys, sources, us);
  }
  std::vector<Tensor> terms = sources.empty() ? std::vector<Tensor>{} : inner_products(grads, directions);
  if (sources.empty()) {
    for (const auto& y : ys)
      if (is_floating(y.dtype())) us.push_back(Tensor());
  }
  return {ys, tangents_of(dual, terms, ys, us)};
}

std::pair<Tensor, std::function<Tensor(const Tensor&)>> linearize(const std::function<Tensor(const Tensor&)>& f,
                                                                  const Tensor& x) {
  if (!f) fail("linearize", "the function is empty");
  if (!x.defined() || !is_floating(x.dtype())) fail(kWrongType, "linearize", "the primal must be a floating tensor");
  // The forward pass runs once, on a persistent tape kept (paused) by the linear map.
  struct State {
    GradientTape tape{true, false};
    Tensor x, y;
    std::unique_ptr<GradientTape::Pause> pause;
  };
  auto s = std::make_shared<State>();
  s->x = identity(x);
  s->tape.watch(s->x);
  s->y = f(s->x);
  if (!s->y.defined()) fail("linearize", "the function returned an undefined tensor");
  s->pause = std::make_unique<GradientTape::Pause>(s->tape);
  auto linear = [s](const Tensor& v) -> Tensor {
    check_tangent(s->x, v, 0);
    if (!is_floating(s->y.dtype())) return zeros_like(s->y);
    GradientTape dual(false, false);
    std::vector<Tensor> us;
    std::vector<Tensor> grads = recorded_vjp(s->tape, dual, {s->y}, {GradientSource(s->x)}, us);
    return tangents_of(dual, inner_products(grads, {v}), {s->y}, us).at(0);
  };
  return {s->y, linear};
}

namespace detail {

void check_argnum(const char* what, int argnum, std::size_t count) {
  if (argnum < 0 || static_cast<std::size_t>(argnum) >= count)
    fail(what, "argnum " + std::to_string(argnum) + " is out of range for " + std::to_string(count) + " arguments");
}

Tensor jacfwd_at(const UnaryTensorFn& f, const Tensor& x) {
  expect_static_floating(x, "the input", "jacfwd");
  Shape out_shape;
  // One jvp per input element, batched: the basis vectors' axis goes last, then splits into x's shape.
  Tensor columns = vmap(
      [&](const Tensor& v) {
        auto [y, t] = jvp(f, x, v);
        out_shape = y.shape();
        return t;
      },
      0, -1)(basis(x.num_elements(), x.shape(), x.dtype()));
  return reshape(columns, concat_shapes(out_shape, x.shape()));
}

Tensor jacrev_at(const UnaryTensorFn& f, const Tensor& x) {
  expect_static_floating(x, "the input", "jacrev");
  Tensor xw = identity(x);
  GradientTape tape(false, false);
  tape.watch(xw);
  Tensor y = f(xw);
  auto pause = tape.stop_recording();
  expect_static_floating(y, "the output", "jacrev");
  Shape shape = concat_shapes(y.shape(), x.shape());
  auto rows_for = [&](const Tensor& u) {
    return tape.gradient({y}, std::vector<GradientSource>{xw}, {u}, UnconnectedGradients::zero).at(0);
  };
  // A scalar output needs a single gradient, no batch of basis vectors.
  if (y.num_elements() == 1) return reshape(rows_for(ones_like(y)), shape);
  return reshape(vmap(rows_for)(basis(y.num_elements(), y.shape(), y.dtype())), shape);
}

}  // namespace detail
}  // namespace ef
