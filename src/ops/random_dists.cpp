// ef::random::gamma, poisson, stateless_binomial, ... (eagerflow/ops/random_dists.h): argument
// checks and TF's shape rules around the RandomDistribution op; beta and TF's clamp of gamma
// draws to the smallest normal number are ops after it, so they trace and differentiate.
#include <limits>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random_dists.h"
#include "ops/random_dists_op.h"
#include "ops/shape_rules.h"

namespace ef::random {
namespace {

void check_defined(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) fail(op, std::string(what) + " is undefined (default-constructed)");
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  check_defined(t, op, what);
  if (!is_floating(t.dtype())) fail(kWrongType, op, std::string(what) + " must be floating, got " + t.spec().str());
}

void check_same_dtype(const std::vector<Tensor>& ts, const char* op) {
  for (const Tensor& t : ts)
    if (t.dtype() != ts[0].dtype())
      fail(kWrongType, op, "the parameters must have one dtype, got " + t.spec().str() + " and " + ts[0].spec().str());
}

Shape broadcast_of(const std::vector<Tensor>& ts, const char* op) {
  std::vector<Shape> shapes;
  for (const Tensor& t : ts) shapes.push_back(t.shape());
  Shape out;
  std::string text;
  for (const Tensor& t : ts) text += (text.empty() ? "" : " vs ") + t.spec().str();
  if (!try_broadcast(shapes, out)) fail(op, "the parameters' shapes cannot broadcast: " + text);
  return out;
}

// The stateless ops draw `shape`; the parameters broadcast to it (TF: "shape must end with the
// broadcasted shape").
std::vector<Tensor> params_to(const Shape& shape, const std::vector<Tensor>& ts, const char* op) {
  Shape params = broadcast_of(ts, op), both;
  std::vector<Shape> pair{params, shape};
  if (!try_broadcast(pair, both) || both != shape)
    fail(op, "shape " + shape.str() + " must end with the parameters' broadcast shape " + params.str());
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.shape() == shape ? t : broadcast_to(t, shape));
  return out;
}

void check_sample_shape(const Shape& shape, const char* op) {
  for (auto d : shape)
    if (d < 0) fail(op, "shape must be static and non-negative, got " + shape.str());
}

// float16 and bfloat16 are storage dtypes: their draws are made in float32 and rounded.
DType compute_dtype(DType d) { return d == DType::float16 || d == DType::bfloat16 ? DType::float32 : d; }
Tensor as_dtype(const Tensor& t, DType d) { return !t.defined() || t.dtype() == d ? t : cast(t, d); }

// Gamma draws / beta, at least the smallest normal number of `want` (TF's clamp, so that a log
// of a draw stays finite), as `want`.
Tensor scale_and_clamp(Tensor sample, const Tensor& beta, DType want) {
  if (beta.defined()) sample = sample / as_dtype(beta, sample.dtype());
  double tiny = want == DType::float64    ? std::numeric_limits<double>::min()
                : want == DType::float16  ? 6.103515625e-05
                : want == DType::bfloat16 ? 1.1754943508222875e-38
                                          : static_cast<double>(std::numeric_limits<float>::min());
  return as_dtype(maximum(sample, scalar_like(sample, tiny)), want);
}

Tensor as_floating(const Tensor& t) { return is_floating(t.dtype()) ? t : cast(t, DType::float32); }

}  // namespace

Tensor gamma(const Shape& shape, const Tensor& alpha, const Tensor& beta, std::optional<std::uint64_t> seed) {
  const char* op = "random.gamma";
  check_sample_shape(shape, op);
  check_floating(alpha, op, "alpha");
  Tensor a = alpha;
  if (beta.defined()) {
    check_floating(beta, op, "beta");
    check_same_dtype({alpha, beta}, op);
    Shape both = broadcast_of({alpha, beta}, op);
    if (both != alpha.shape()) a = broadcast_to(alpha, both);
  }
  DType c = compute_dtype(a.dtype());
  Tensor sample = dispatch1(RandomDistribution(DistKind::gamma, shape, c, seed, false), {as_dtype(a, c)});
  return scale_and_clamp(sample, beta, alpha.dtype());
}

Tensor stateless_gamma(const Shape& shape, std::uint64_t seed, const Tensor& alpha, const Tensor& beta) {
  const char* op = "random.stateless_gamma";
  check_sample_shape(shape, op);
  check_floating(alpha, op, "alpha");
  std::vector<Tensor> params{alpha};
  if (beta.defined()) {
    check_floating(beta, op, "beta");
    check_same_dtype({alpha, beta}, op);
    params.push_back(beta);
  }
  Tensor a = params_to(shape, params, op)[0];
  DType c = compute_dtype(a.dtype());
  Tensor sample = dispatch1(RandomDistribution(DistKind::gamma, Shape{}, c, seed, true), {as_dtype(a, c)});
  return scale_and_clamp(sample, beta, alpha.dtype());
}

Tensor poisson(const Shape& shape, const Tensor& lam, DType dtype, std::optional<std::uint64_t> seed) {
  const char* op = "random.poisson";
  check_sample_shape(shape, op);
  check_defined(lam, op, "lam");
  return as_dtype(
      dispatch1(RandomDistribution(DistKind::poisson, shape, compute_dtype(dtype), seed, false), {as_floating(lam)}),
      dtype);
}

Tensor stateless_poisson(const Shape& shape, std::uint64_t seed, const Tensor& lam, DType dtype) {
  const char* op = "random.stateless_poisson";
  check_sample_shape(shape, op);
  check_defined(lam, op, "lam");
  Tensor l = params_to(shape, {as_floating(lam)}, op)[0];
  return as_dtype(dispatch1(RandomDistribution(DistKind::poisson, Shape{}, compute_dtype(dtype), seed, true), {l}),
                  dtype);
}

Tensor stateless_binomial(const Shape& shape, std::uint64_t seed, const Tensor& counts, const Tensor& probs,
                          DType dtype) {
  const char* op = "random.stateless_binomial";
  check_sample_shape(shape, op);
  check_floating(counts, op, "counts");
  check_floating(probs, op, "probs");
  check_same_dtype({counts, probs}, op);
  std::vector<Tensor> p = params_to(shape, {counts, probs}, op);
  return as_dtype(
      dispatch1(RandomDistribution(DistKind::binomial, Shape{}, compute_dtype(dtype), seed, true), {p[0], p[1]}),
      dtype);
}

Tensor stateless_parameterized_truncated_normal(const Shape& shape, std::uint64_t seed, const Tensor& means,
                                                const Tensor& stddevs, const Tensor& minvals, const Tensor& maxvals) {
  const char* op = "random.stateless_parameterized_truncated_normal";
  check_sample_shape(shape, op);
  check_floating(means, op, "means");
  check_floating(stddevs, op, "stddevs");
  check_floating(minvals, op, "minvals");
  check_floating(maxvals, op, "maxvals");
  check_same_dtype({means, stddevs, minvals, maxvals}, op);
  std::vector<Tensor> p = params_to(shape, {means, stddevs, minvals, maxvals}, op);
  DType c = compute_dtype(means.dtype());
  for (Tensor& t : p) t = as_dtype(t, c);
  return as_dtype(dispatch(RandomDistribution(DistKind::truncated_normal, Shape{}, c, seed, true), p).at(0),
                  means.dtype());
}

Tensor random_gamma_grad(const Tensor& alpha, const Tensor& sample) {
  const char* op = "random.random_gamma_grad";
  check_floating(alpha, op, "alpha");
  check_floating(sample, op, "sample");
  check_same_dtype({alpha, sample}, op);
  Shape both = broadcast_of({alpha, sample}, op);
  Tensor a = alpha.shape() == both ? alpha : broadcast_to(alpha, both);
  Tensor x = sample.shape() == both ? sample : broadcast_to(sample, both);
  return dispatch1(RandomGammaGrad(), {a, x});
}

}  // namespace ef::random
