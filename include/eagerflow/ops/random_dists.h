#pragma once
// TF's parameterized draws (tf.random.gamma, poisson, stateless_binomial, ...) and candidate
// samplers (tf.random.*_candidate_sampler), over the same seeds as eagerflow/ops/random.h: the
// global seed and counter, an op's seed and its sequence, or a stateless seed that gives the
// same numbers on every call, eagerly and traced alike. The streams are eagerflow's own; the
// distributions are TF's. Include this header on its own (it is not part of eagerflow.h).
#include <cstdint>
#include <optional>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::random {

// Gamma(alpha, rate beta) draws of shape `shape` + broadcast(alpha, beta).shape, of alpha's
// dtype; beta undefined means 1. Draws are at least the dtype's smallest normal number (as TF's).
// Differentiable in alpha (the implicit reparameterization gradient) and in beta.
Tensor gamma(const Shape& shape, const Tensor& alpha, const Tensor& beta = Tensor(),
             std::optional<std::uint64_t> seed = std::nullopt);
// The same numbers on every call for a seed; shape ends with broadcast(alpha, beta).shape.
Tensor stateless_gamma(const Shape& shape, std::uint64_t seed, const Tensor& alpha, const Tensor& beta = Tensor());
// Poisson(lam) draws of shape `shape` + lam.shape as `dtype` (floating or int32/int64).
Tensor poisson(const Shape& shape, const Tensor& lam, DType dtype = DType::float32,
               std::optional<std::uint64_t> seed = std::nullopt);
// shape ends with lam.shape.
Tensor stateless_poisson(const Shape& shape, std::uint64_t seed, const Tensor& lam, DType dtype = DType::int32);
// Binomial(counts, probs) draws (counts and probs floating, of one dtype, broadcast to the end
// of shape) as `dtype`.
Tensor stateless_binomial(const Shape& shape, std::uint64_t seed, const Tensor& counts, const Tensor& probs,
                          DType dtype = DType::int32);
// Normal(means, stddevs) conditioned on [minvals, maxvals], all four broadcast to the end of
// shape; stddev <= 0 or minval >= maxval is an INVALID_ARGUMENT error when the op runs.
Tensor stateless_parameterized_truncated_normal(const Shape& shape, std::uint64_t seed, const Tensor& means,
                                                const Tensor& stddevs, const Tensor& minvals, const Tensor& maxvals);
// d sample / d alpha of Gamma(alpha, 1) draws (TF's random_gamma_grad), broadcasting.
Tensor random_gamma_grad(const Tensor& alpha, const Tensor& sample);

// A candidate sampler's three results (TF's): sampled_candidates int64 [num_sampled], and the
// expected count (float32) of each true class [batch, num_true] and of each sampled candidate
// in num_sampled draws: p * num_sampled, or with unique = true 1 - (1 - p)^tries, tries the
// draws it took to find num_sampled distinct candidates.
struct CandidateSample {
  Tensor sampled_candidates, true_expected_count, sampled_expected_count;
};
// true_classes: int64 [batch, num_true], each in [0, range_max).
CandidateSample uniform_candidate_sampler(const Tensor& true_classes, std::int64_t num_true, std::int64_t num_sampled,
                                          bool unique, std::int64_t range_max,
                                          std::optional<std::uint64_t> seed = std::nullopt);
// P(k) = log((k + 2) / (k + 1)) / log(range_max + 1): Zipf-like, for classes sorted by frequency.
CandidateSample log_uniform_candidate_sampler(const Tensor& true_classes, std::int64_t num_true,
                                              std::int64_t num_sampled, bool unique, std::int64_t range_max,
                                              std::optional<std::uint64_t> seed = std::nullopt);
// Learns the unigram distribution from the true classes it is given: every class starts with
// weight 1 and each call adds 1 per true class, after drawing. Calls with the same arguments
// (range_max, num_true, num_sampled, unique, seed) share what was learned, as TF's cached kernel.
CandidateSample learned_unigram_candidate_sampler(const Tensor& true_classes, std::int64_t num_true,
                                                  std::int64_t num_sampled, bool unique, std::int64_t range_max,
                                                  std::optional<std::uint64_t> seed = std::nullopt);
// P(k) proportional to weight_k^distortion over the ids of this shard (id % num_shards ==
// shard): the first num_reserved_ids ids weigh 0, the following ones `unigrams`. range_max must
// equal the number of ids in the shard; samples are indices among them.
CandidateSample fixed_unigram_candidate_sampler(const Tensor& true_classes, std::int64_t num_true,
                                                std::int64_t num_sampled, bool unique, std::int64_t range_max,
                                                const std::vector<double>& unigrams, double distortion = 1.0,
                                                std::int64_t num_reserved_ids = 0, std::int64_t num_shards = 1,
                                                std::int64_t shard = 0,
                                                std::optional<std::uint64_t> seed = std::nullopt);
// Every class 0 .. num_sampled-1, each with expected count 1.
CandidateSample all_candidate_sampler(const Tensor& true_classes, std::int64_t num_true, std::int64_t num_sampled,
                                      bool unique);

}  // namespace ef::random
