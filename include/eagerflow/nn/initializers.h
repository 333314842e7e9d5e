#pragma once
// Weight initializers, as in Keras: a function from (shape, dtype) to an eager tensor.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::nn {

using Initializer = std::function<Tensor(const Shape&, DType)>;

Initializer zeros_initializer();
Initializer ones_initializer();
Initializer constant_initializer(double value);
Initializer random_uniform_initializer(double minval = -0.05, double maxval = 0.05);
Initializer random_normal_initializer(double mean = 0.0, double stddev = 0.05);
// Keras' default for Dense kernels: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
Initializer glorot_uniform_initializer();

// Keras' VarianceScaling: n = fan_in, fan_out or their mean ("fan_in", "fan_out", "fan_avg"; for
// rank >= 2 the receptive field times the last two dims), then "truncated_normal" (stddev
// sqrt(scale / n) / 0.8796..., cut at 2 stddev), "untruncated_normal" or "uniform" (limit
// sqrt(3 scale / n)). With a seed the initializer gives the same values on every call (Keras 3's
// seeded initializers); without, it draws from the global generator (ef::random::set_seed).
Initializer variance_scaling_initializer(double scale = 1.0, const std::string& mode = "fan_in",
                                         const std::string& distribution = "truncated_normal",
                                         std::optional<std::uint64_t> seed = std::nullopt);
Initializer glorot_normal_initializer(std::optional<std::uint64_t> seed = std::nullopt);
Initializer he_normal_initializer(std::optional<std::uint64_t> seed = std::nullopt);
Initializer he_uniform_initializer(std::optional<std::uint64_t> seed = std::nullopt);
Initializer lecun_normal_initializer(std::optional<std::uint64_t> seed = std::nullopt);
Initializer lecun_uniform_initializer(std::optional<std::uint64_t> seed = std::nullopt);
// N(mean, stddev) with draws beyond 2 stddev drawn again (Keras' TruncatedNormal).
Initializer truncated_normal_initializer(double mean = 0.0, double stddev = 0.05,
                                         std::optional<std::uint64_t> seed = std::nullopt);
// The identity matrix times gain, for 2-D shapes (Keras' Identity).
Initializer identity_initializer(double gain = 1.0);
// By Keras name ("he_normal", "zeros", "glorot_uniform", ...): an ef::Error naming the known ones.
Initializer initializer_by_name(const std::string& name);

}  // namespace ef::nn
