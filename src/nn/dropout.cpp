#include "eagerflow/nn/dropout.h"

#include <map>

#include "eagerflow/ops/ops.h"
#include "nn/layer_args.h"

namespace ef::nn {

std::span<const LayerArg<DropoutOptions>> Dropout::args() {
  // Keras' Dropout(rate, noise_shape=None, seed=None): eagerflow has no noise_shape, so seed is
  // keyword-only here, never taken positionally for the noise shape.
  static const std::vector<LayerArg<DropoutOptions>> list = [] {
    using O = DropoutOptions;
    std::vector<LayerArg<O>> a{
        {"rate", &O::rate, ArgUse::config, /*required=*/true, false, ArgCheck::fraction},
        {"seed", &O::seed, ArgUse::config, false, /*keyword_only=*/true, ArgCheck::non_negative},
    };
    append_base_args(a);
    return a;
  }();
  return list;
}

Dropout::Dropout(DropoutOptions options) : Layer(options.name), options_(std::move(options)) {
  check_options(options_, args(), "dropout");
  apply_layer_options(*this, options_);
  if (options_.seed) generator_.emplace(static_cast<std::uint64_t>(*options_.seed));
}

namespace {
DropoutOptions positional(double rate, std::optional<std::uint64_t> seed, std::string name) {
  DropoutOptions o;
  o.rate = rate;
  if (seed) o.seed = static_cast<std::int64_t>(*seed);  // above 2^63: negative, refused by the check
  o.name = std::move(name);
  return o;
}
}  // namespace

Dropout::Dropout(double rate, std::optional<std::uint64_t> seed, std::string name)
    : Dropout(positional(rate, seed, std::move(name))) {}

std::optional<LayerConfig> Dropout::get_config() const {
  auto c = base_config(*this, "Dropout");
  write_config(options_, args(), c.config, "layer '" + name() + "' (Dropout)");
  return c;
}

Tensor Dropout::call(const Tensor& inputs, bool training) {
  double rate = options_.rate;
  if (!training || rate == 0.0) return inputs;
  if (!is_floating(inputs.dtype())) fail(kWrongType, name(), "needs floating inputs, got " + inputs.spec().str());
  Tensor draw = generator_ ? random::uniform_like(inputs, 0.0, 1.0, *generator_) : random::uniform_like(inputs, 0.0, 1.0);
  Tensor keep = greater_equal(draw, scalar_like(draw, rate));
  return where(keep, inputs * (1.0 / (1.0 - rate)), zeros_like(inputs));
}

}  // namespace ef::nn

namespace ef::detail {
// The built-in factory list (src/nn/layer_config.cpp) takes Dropout's from here.
void add_dropout_layer_factories(std::map<std::string, nn::LayerFactory>& factories) {
  factories["Dropout"] = nn::factory_from_args<nn::Dropout, nn::DropoutOptions>();
}
}  // namespace ef::detail
