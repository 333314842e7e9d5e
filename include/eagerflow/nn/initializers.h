#pragma once
// Weight initializers, as in Keras: a function from (shape, dtype) to an eager tensor.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "eagerflow/core/tensor.h"
#include "eagerflow/nn/layer_config.h"

namespace ef::nn {

// The function, and the Keras class and arguments that name it where it has them (every
// initializer below; not a function of your own): what a layer's get_config saves, so that
// from_config, clone_model and a saved file make the same kind of weights.
class Initializer : public std::function<Tensor(const Shape&, DType)> {
 public:
  using Function = std::function<Tensor(const Shape&, DType)>;
  using Function::Function;
  Initializer() = default;
  Initializer(Function fn, std::string keras_class, ConfigMap keras_arguments)
      : Function(std::move(fn)), keras_class(std::move(keras_class)), keras_arguments(std::move(keras_arguments)) {}
  std::string keras_class;    // "GlorotUniform"; empty: no Keras name
  ConfigMap keras_arguments;  // its config: {"seed": null}
};

// Keras 3's serialized form, {"module": "keras.initializers", "class_name", "config",
// "registered_name": null}; null for an initializer without a Keras name.
ConfigValue initializer_config(const Initializer& init);
// An initializer from a config: a Keras name ("he_normal", "HeNormal") or the serialized form of
// one of the classes below (Keras 3's names, and Keras 2's "Orthogonal" / "Identity"). Another
// class (a Keras initializer written in Python) gives nullopt: the layer keeps its default.
std::optional<Initializer> initializer_from_config(const ConfigValue& v, const std::string& where);

Initializer zeros_initializer();
Initializer ones_initializer();
Initializer constant_initializer(double value);
// With a seed, the same values on every call (Keras 3's seeded initializers).
Initializer random_uniform_initializer(double minval = -0.05, double maxval = 0.05,
                                       std::optional<std::uint64_t> seed = std::nullopt);
Initializer random_normal_initializer(double mean = 0.0, double stddev = 0.05,
                                      std::optional<std::uint64_t> seed = std::nullopt);
// Keras' default for Dense kernels: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).
Initializer glorot_uniform_initializer(std::optional<std::uint64_t> seed = std::nullopt);

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
