#pragma once
// The parameterized random draws (gamma, poisson, binomial, truncated normal), the gamma draw's
// gradient, and the candidate samplers: src/ops/random_dists_op.cpp and
// src/ops/candidate_sampler_op.cpp; public in eagerflow/ops/random_dists.h.
#include <memory>
#include <optional>
#include <vector>

#include "eagerflow/ops/primitive.h"
#include "ops/random_state.h"

namespace ef {

enum class DistKind : unsigned char { gamma, poisson, binomial, truncated_normal };

// Inputs: the distribution's parameters (gamma: alpha; poisson: lam; binomial: counts, probs;
// truncated_normal: means, stddevs, minvals, maxvals), floating, of one dtype and one shape P.
// Output: `dtype` draws of shape sample_shape + P, element i of its own stream. Seeds as
// RandomOp's: stateless draws repeat; others draw anew on each execution.
class RandomDistribution : public PrimitiveBase<RandomDistribution> {
 public:
  RandomDistribution(DistKind kind, Shape sample_shape, DType dtype, std::optional<std::uint64_t> seed, bool stateless);
  const char* name() const override;
  OpParams parameters() const override;
  bool is_stateful() const override { return !stateless_; }
  bool is_differentiable() const override { return kind_ == DistKind::gamma; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  DistKind kind_;
  Shape sample_shape_;
  DType dtype_;
  std::optional<std::uint64_t> seed_;
  bool stateless_;
  std::shared_ptr<random::SeedGenerator::State> seeded_draws_;  // seeded ops: the seed's counter
};

// (alpha, sample) of one floating dtype and shape -> d sample / d alpha (TF's RandomGammaGrad).
class RandomGammaGrad : public MergeablePrimitive<RandomGammaGrad> {
 public:
  const char* name() const override { return "random_gamma_grad"; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
};

enum class SamplerKind : unsigned char { uniform, log_uniform, learned_unigram, fixed_unigram, all };

// What learned_unigram_candidate_sampler has learned: a weight per class (Fenwick tree, so a
// draw and an update cost O(log range)).
struct LearnedUnigram;

// (true_classes int64 [batch, num_true]) -> sampled_candidates int64 [num_sampled],
// true_expected_count float32 [batch, num_true], sampled_expected_count float32 [num_sampled].
class CandidateSampler : public PrimitiveBase<CandidateSampler> {
 public:
  CandidateSampler(SamplerKind kind, std::int64_t num_true, std::int64_t num_sampled, bool unique,
                   std::int64_t range_max, std::optional<std::uint64_t> seed, std::vector<double> weights = {});
  const char* name() const override;
  OpParams parameters() const override;
  bool is_stateful() const override { return kind_ != SamplerKind::all; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;

 private:
  SamplerKind kind_;
  std::int64_t num_true_, num_sampled_, range_max_;
  bool unique_;
  std::optional<std::uint64_t> seed_;
  std::shared_ptr<random::SeedGenerator::State> seeded_draws_;
  std::shared_ptr<const std::vector<double>> cumulative_;  // fixed_unigram: running sums of the weights
  std::shared_ptr<LearnedUnigram> learned_;
};

}  // namespace ef
