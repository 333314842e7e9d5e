// The parameterized random draws (RandomDistribution) and the gamma draw's gradient
// (RandomGammaGrad): kernels in src/kernels/cpu/random_samplers.cpp. The public functions
// (src/ops/random_dists.cpp) broadcast the parameters and compose beta and TF's clamp.
#include "ops/random_dists_op.h"

#include <cmath>
#include <limits>
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random_dists.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/random_samplers.h"
#include "ops/op_factories.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

constexpr const char* kDistNames[] = {"random_gamma", "random_poisson", "random_binomial",
                                      "random_parameterized_truncated_normal"};
constexpr std::size_t kDistInputs[] = {1, 1, 2, 4};

// A tensor's values as float64, in a kernel (nothing is recorded there).
std::vector<double> values_of(const Tensor& t) {
  Tensor d = t.dtype() == DType::float64 ? t : cast(t, DType::float64);
  auto v = d.data<double>();
  return {v.begin(), v.end()};
}

// Draws in float64 written as `dtype`: integers saturate at the dtype's range (NaN gives 0).
void store(const std::vector<double>& v, Tensor& out) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    auto o = out.mutable_data<T>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
        o[i] = std::isnan(v[i]) ? T(0)
               : v[i] >= hi     ? std::numeric_limits<T>::max()
                                : static_cast<T>(std::max(v[i], 0.0));
      } else {
        o[i] = static_cast<T>(v[i]);
      }
    }
  });
}

}  // namespace

RandomDistribution::RandomDistribution(DistKind kind, Shape sample_shape, DType dtype,
                                       std::optional<std::uint64_t> seed, bool stateless)
    : kind_(kind), sample_shape_(std::move(sample_shape)), dtype_(dtype), seed_(seed), stateless_(stateless) {
  if (stateless && !seed) fail(name(), "a stateless draw needs a seed");
  if (seed && !stateless) seeded_draws_ = random::seed_counter(*seed);
}

const char* RandomDistribution::name() const { return kDistNames[static_cast<int>(kind_)]; }

OpParams RandomDistribution::parameters() const {
  OpParams p;
  p.add("sample_shape", sample_shape_).add("dtype", dtype_);
  if (seed_) p.add("seed", static_cast<std::int64_t>(*seed_));  // two's complement: reads back exactly
  return p.add_flag("stateless", stateless_);
}

std::vector<TensorSpec> RandomDistribution::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, kDistInputs[static_cast<int>(kind_)]);
  for (const Tensor& t : in) {
    if (!is_floating(t.dtype())) fail(kWrongType, name(), "parameters must be floating, got " + describe(in));
    if (t.dtype() != in[0].dtype() || t.shape() != in[0].shape())
      fail(name(), "parameters must have one dtype and shape, got " + describe(in));
  }
  bool integer_ok = kind_ == DistKind::poisson || kind_ == DistKind::binomial;
  if (!(is_floating(dtype_) || (integer_ok && (dtype_ == DType::int32 || dtype_ == DType::int64))))
    fail(kWrongType, name(), "cannot draw " + std::string(name_of(dtype_)));
  std::vector<std::int64_t> dims = sample_shape_.dims();
  for (auto d : in[0].shape()) dims.push_back(d);
  Shape out(dims);
  if (!out.is_static())
    fail(name(), "needs static shapes, got sample shape " + sample_shape_.str() + " and " + describe(in));
  return {{dtype_, out, {}}};
}

void RandomDistribution::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                              std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::vector<std::vector<double>> p;
  for (const Tensor& t : in) p.push_back(values_of(t));
  std::size_t per_sample = p[0].size();
  if (kind_ == DistKind::truncated_normal)
    for (std::size_t j = 0; j < per_sample; ++j)
      if (!(p[1][j] > 0) || !(p[2][j] < p[3][j]))
        fail(name(), "invalid parameters at " + std::to_string(j) + ": stddev " + std::to_string(p[1][j]) +
                         " must be > 0 and minval " + std::to_string(p[2][j]) + " < maxval " + std::to_string(p[3][j]));
  std::uint64_t key = random::execution_key(seed_, stateless_, seeded_draws_.get());
  std::vector<double> v(static_cast<std::size_t>(out[0].num_elements()));
  if (v.empty()) return;
  DistKind kind = kind_;
  cpu::parallel_for(static_cast<std::int64_t>(v.size()), 64, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      std::size_t j = static_cast<std::size_t>(i) % per_sample;
      kernels::Stream s(key, static_cast<std::uint64_t>(i));
      double& x = v[static_cast<std::size_t>(i)];
      switch (kind) {
        case DistKind::gamma: x = kernels::sample_gamma(p[0][j], s); break;
        case DistKind::poisson: x = kernels::sample_poisson(p[0][j], s); break;
        case DistKind::binomial: x = kernels::sample_binomial(p[0][j], p[1][j], s); break;
        case DistKind::truncated_normal:
          x = kernels::sample_truncated_normal(p[0][j], p[1][j], p[2][j], p[3][j], s);
          break;
      }
    }
  });
  store(v, out[0]);
}

std::vector<Tensor> RandomDistribution::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                            std::span<const Tensor> cot, const std::vector<bool>&) const {
  // Each draw moves with alpha along its quantile (the implicit reparameterization gradient);
  // alpha's gradient sums over the sample dims.
  Tensor g = cot[0] * random::random_gamma_grad(in[0], out[0]);
  std::vector<int> sample_axes;
  for (int d = 0; d < sample_shape_.rank(); ++d) sample_axes.push_back(d);
  return {sample_axes.empty() ? g : sum(g, sample_axes)};
}

std::vector<TensorSpec> RandomGammaGrad::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  if (!is_floating(in[0].dtype())) fail(kWrongType, name(), "needs floating inputs, got " + describe(in));
  if (in[0].dtype() != in[1].dtype() || in[0].shape() != in[1].shape())
    fail(name(), "alpha and sample must have one dtype and shape, got " + describe(in));
  return {in[1].spec()};
}

void RandomGammaGrad::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::vector<double> a = values_of(in[0]), x = values_of(in[1]), v(a.size());
  cpu::parallel_for(static_cast<std::int64_t>(v.size()), 256, [&](std::int64_t begin, std::int64_t end) {
    for (auto i = static_cast<std::size_t>(begin); i < static_cast<std::size_t>(end); ++i)
      v[i] = kernels::gamma_sample_grad(a[i], x[i]);
  });
  store(v, out[0]);
}

void detail::add_random_dists_factories(detail::OpFactories& f) {
  for (DistKind k : {DistKind::gamma, DistKind::poisson, DistKind::binomial, DistKind::truncated_normal})
    f[kDistNames[static_cast<int>(k)]] = [k](const OpParams& p) {
      std::optional<std::uint64_t> seed;
      if (p.has("seed")) seed = static_cast<std::uint64_t>(p.integer("seed"));
      return std::make_shared<RandomDistribution>(k, p.shape("sample_shape"), p.dtype("dtype"), seed,
                                                  p.flag("stateless"));
    };
  f["random_gamma_grad"] = [](const OpParams&) { return std::make_shared<RandomGammaGrad>(); };
  add_candidate_sampler_factories(f);
}

void detail::register_random_dists_rules() {
  // A draw per example: each example's parameters drawn from anew.
  register_op_rules<RandomDistribution>(
      {.runs_per_example = true, .onnx_unsupported = "random draws are not exported (ONNX's are not the same stream)"});
  // Elementwise: the batch is one more leading dim of both operands.
  register_op_rules<RandomGammaGrad>({.batching = [](const RandomGammaGrad& op, BatchingCall call) -> BatchingResult {
                                        Tensor a = batching::materialize(op, call.inputs[0], call.batch);
                                        Tensor x = batching::materialize(op, call.inputs[1], call.batch);
                                        return batching::one(dispatch1(op, {a, x}));
                                      },
                                      .onnx_unsupported = "a gradient op: exported graphs run inference only"});
  register_op_rules<CandidateSampler>(
      {.runs_per_example = true, .onnx_unsupported = "candidate samplers are not exported (no ONNX op)"});
}

}  // namespace ef
