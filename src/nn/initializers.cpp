#include "eagerflow/nn/initializers.h"

#include <cmath>

#include "eagerflow/core/error.h"
#include "eagerflow/nn/recurrent.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"

namespace ef::nn {
namespace {

ConfigValue seed_value(std::optional<std::uint64_t> seed) {
  return seed ? ConfigValue(static_cast<std::int64_t>(*seed)) : ConfigValue();
}

ConfigMap arguments(std::initializer_list<std::pair<const char*, ConfigValue>> items) {
  ConfigMap m;
  for (const auto& [key, value] : items) m.set(key, value);
  return m;
}

Tensor uniform_draw(const Shape& s, double lo, double hi, DType t, std::optional<std::uint64_t> seed);
Tensor normal_draw(const Shape& s, double mean, double stddev, DType t, std::optional<std::uint64_t> seed);

}  // namespace

Initializer zeros_initializer() {
  return {[](const Shape& s, DType t) { return zeros(s, t); }, "Zeros", {}};
}
Initializer ones_initializer() {
  return {[](const Shape& s, DType t) { return ones(s, t); }, "Ones", {}};
}
Initializer constant_initializer(double value) {
  return {[value](const Shape& s, DType t) { return full(s, value, t); }, "Constant", arguments({{"value", value}})};
}
Initializer random_uniform_initializer(double minval, double maxval, std::optional<std::uint64_t> seed) {
  return {[=](const Shape& s, DType t) { return uniform_draw(s, minval, maxval, t, seed); }, "RandomUniform",
          arguments({{"minval", minval}, {"maxval", maxval}, {"seed", seed_value(seed)}})};
}
Initializer random_normal_initializer(double mean, double stddev, std::optional<std::uint64_t> seed) {
  return {[=](const Shape& s, DType t) { return normal_draw(s, mean, stddev, t, seed); }, "RandomNormal",
          arguments({{"mean", mean}, {"stddev", stddev}, {"seed", seed_value(seed)}})};
}
namespace {

// Keras' fans: for rank >= 2, the receptive field times the last two dims.
std::pair<double, double> fans(const Shape& s) {
  double fan_in = 1, fan_out = 1;
  if (s.rank() == 1) fan_in = fan_out = static_cast<double>(s[0]);
  else if (s.rank() >= 2) {
    double receptive = 1;
    for (int i = 0; i + 2 < s.rank(); ++i) receptive *= static_cast<double>(s[i]);
    fan_in = static_cast<double>(s[s.rank() - 2]) * receptive;
    fan_out = static_cast<double>(s[s.rank() - 1]) * receptive;
  }
  return {fan_in, fan_out};
}

Tensor uniform_draw(const Shape& s, double lo, double hi, DType t, std::optional<std::uint64_t> seed) {
  return seed ? random::stateless_uniform(s, *seed, lo, hi, t) : random::uniform(s, lo, hi, t);
}

Tensor normal_draw(const Shape& s, double mean, double stddev, DType t, std::optional<std::uint64_t> seed) {
  return seed ? random::stateless_normal(s, *seed, mean, stddev, t) : random::normal(s, mean, stddev, t);
}

// Standard normal draws within two standard deviations (the truncated_normal op).
Tensor truncated_standard_normal(const Shape& s, DType t, std::optional<std::uint64_t> seed) {
  return seed ? random::stateless_truncated_normal(s, *seed, 0.0, 1.0, t) : random::truncated_normal(s, 0.0, 1.0, t);
}

}  // namespace

Initializer glorot_uniform_initializer(std::optional<std::uint64_t> seed) {
  return {[seed](const Shape& s, DType t) {
            auto [fan_in, fan_out] = fans(s);
            double limit = std::sqrt(6.0 / std::max(1.0, fan_in + fan_out));
            return uniform_draw(s, -limit, limit, t, seed);
          },
          "GlorotUniform",
          arguments({{"seed", seed_value(seed)}, {"input_axes", nullptr}, {"output_axes", nullptr}})};
}

Initializer variance_scaling_initializer(double scale, const std::string& mode, const std::string& distribution,
                                         std::optional<std::uint64_t> seed) {
  if (!(scale > 0) || !std::isfinite(scale)) fail("VarianceScaling", "scale must be a positive number, got " + std::to_string(scale));
  if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg")
    fail("VarianceScaling", "mode must be 'fan_in', 'fan_out' or 'fan_avg', got '" + mode + "'");
  if (distribution != "truncated_normal" && distribution != "untruncated_normal" && distribution != "uniform" &&
      distribution != "normal")
    fail("VarianceScaling", "distribution must be 'truncated_normal', 'untruncated_normal' or 'uniform', got '" +
                                distribution + "'");
  return {[=](const Shape& s, DType t) {
            auto [fan_in, fan_out] = fans(s);
            double n = mode == "fan_in" ? fan_in : mode == "fan_out" ? fan_out : (fan_in + fan_out) / 2.0;
            double v = scale / std::max(1.0, n);
            if (distribution == "uniform") {
              double limit = std::sqrt(3.0 * v);
              return uniform_draw(s, -limit, limit, t, seed);
            }
            if (distribution == "untruncated_normal") return normal_draw(s, 0.0, std::sqrt(v), t, seed);
            // The stddev of a standard normal cut at +-2, so the result has variance v.
            return truncated_standard_normal(s, t, seed) * (std::sqrt(v) / 0.87962566103423978);
          },
          "VarianceScaling",
          arguments({{"seed", seed_value(seed)}, {"scale", scale}, {"mode", mode}, {"distribution", distribution},
                     {"input_axes", nullptr}, {"output_axes", nullptr}})};
}

namespace {
// Keras' named VarianceScaling subclasses save under their own names, with a seed (and Keras
// 3.15's fan axes, none).
Initializer named_scaling(const char* keras_class, double scale, const char* mode, const char* distribution,
                          std::optional<std::uint64_t> seed) {
  Initializer init = variance_scaling_initializer(scale, mode, distribution, seed);
  init.keras_class = keras_class;
  init.keras_arguments = arguments({{"seed", seed_value(seed)}, {"input_axes", nullptr}, {"output_axes", nullptr}});
  return init;
}
}  // namespace

Initializer glorot_normal_initializer(std::optional<std::uint64_t> seed) {
  return named_scaling("GlorotNormal", 1.0, "fan_avg", "truncated_normal", seed);
}
Initializer he_normal_initializer(std::optional<std::uint64_t> seed) {
  return named_scaling("HeNormal", 2.0, "fan_in", "truncated_normal", seed);
}
Initializer he_uniform_initializer(std::optional<std::uint64_t> seed) {
  return named_scaling("HeUniform", 2.0, "fan_in", "uniform", seed);
}
Initializer lecun_normal_initializer(std::optional<std::uint64_t> seed) {
  return named_scaling("LecunNormal", 1.0, "fan_in", "truncated_normal", seed);
}
Initializer lecun_uniform_initializer(std::optional<std::uint64_t> seed) {
  return named_scaling("LecunUniform", 1.0, "fan_in", "uniform", seed);
}

Initializer truncated_normal_initializer(double mean, double stddev, std::optional<std::uint64_t> seed) {
  if (!(stddev >= 0) || !std::isfinite(stddev)) fail("TruncatedNormal", "stddev must be >= 0, got " + std::to_string(stddev));
  return {[=](const Shape& s, DType t) { return truncated_standard_normal(s, t, seed) * stddev + mean; },
          "TruncatedNormal", arguments({{"mean", mean}, {"stddev", stddev}, {"seed", seed_value(seed)}})};
}

Initializer identity_initializer(double gain) {
  return {[gain](const Shape& s, DType t) {
            if (s.rank() != 2) fail("Identity", "initializes 2-D weights only, got shape " + s.str());
            Tensor rows = reshape(arange(s[0], DType::int64), {s[0], 1});
            Tensor cols = reshape(arange(s[1], DType::int64), {1, s[1]});
            return cast(equal(rows, cols), t) * gain;
          },
          "IdentityInitializer", arguments({{"gain", gain}})};
}

ConfigValue initializer_config(const Initializer& init) {
  if (init.keras_class.empty()) return {};
  ConfigMap m;
  m.set("module", "keras.initializers");
  m.set("class_name", init.keras_class);
  m.set("config", init.keras_arguments);
  m.set("registered_name", nullptr);
  return m;
}

std::optional<Initializer> initializer_from_config(const ConfigValue& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  if (const auto* name = std::get_if<std::string>(&v.value)) {
    // Keras' get() takes the snake name and the class name.
    static const std::pair<const char*, const char*> classes[] = {
        {"Zeros", "zeros"}, {"Ones", "ones"}, {"GlorotUniform", "glorot_uniform"}, {"GlorotNormal", "glorot_normal"},
        {"HeNormal", "he_normal"}, {"HeUniform", "he_uniform"}, {"LecunNormal", "lecun_normal"},
        {"LecunUniform", "lecun_uniform"}, {"RandomUniform", "random_uniform"}, {"RandomNormal", "random_normal"},
        {"TruncatedNormal", "truncated_normal"}, {"Identity", "identity"}, {"IdentityInitializer", "identity"}};
    for (const auto& [cls, snake] : classes)
      if (*name == cls) return initializer_by_name(snake);
    if (*name == "orthogonal" || *name == "Orthogonal" || *name == "OrthogonalInitializer") return orthogonal_initializer();
    return initializer_by_name(*name);
  }
  const auto* m = std::get_if<ConfigMap>(&v.value);
  if (!m || !m->has_value("class_name"))
    throw Error(where + ": an initializer is a name or {\"class_name\": ..., \"config\": {...}}");
  const std::string& cls = m->text("class_name");
  ConfigMap empty;
  const ConfigMap& c = m->has_value("config") ? m->map("config") : empty;
  auto real = [&](const char* key, double fallback) { return c.has_value(key) ? c.real(key) : fallback; };
  auto text = [&](const char* key, const char* fallback) { return c.has_value(key) ? c.text(key) : std::string(fallback); };
  std::optional<std::uint64_t> seed;
  if (c.has_value("seed")) seed = static_cast<std::uint64_t>(c.integer("seed"));
  if (cls == "Zeros") return zeros_initializer();
  if (cls == "Ones") return ones_initializer();
  if (cls == "Constant") return constant_initializer(real("value", 0.0));
  if (cls == "RandomUniform") return random_uniform_initializer(real("minval", -0.05), real("maxval", 0.05), seed);
  if (cls == "RandomNormal") return random_normal_initializer(real("mean", 0.0), real("stddev", 0.05), seed);
  if (cls == "TruncatedNormal") return truncated_normal_initializer(real("mean", 0.0), real("stddev", 0.05), seed);
  if (cls == "GlorotUniform") return glorot_uniform_initializer(seed);
  if (cls == "GlorotNormal") return glorot_normal_initializer(seed);
  if (cls == "HeNormal") return he_normal_initializer(seed);
  if (cls == "HeUniform") return he_uniform_initializer(seed);
  if (cls == "LecunNormal") return lecun_normal_initializer(seed);
  if (cls == "LecunUniform") return lecun_uniform_initializer(seed);
  if (cls == "VarianceScaling")
    return variance_scaling_initializer(real("scale", 1.0), text("mode", "fan_in"), text("distribution", "truncated_normal"),
                                        seed);
  if (cls == "IdentityInitializer" || cls == "Identity") return identity_initializer(real("gain", 1.0));
  if (cls == "OrthogonalInitializer" || cls == "Orthogonal") return orthogonal_initializer(real("gain", 1.0));
  return std::nullopt;
}

Initializer initializer_by_name(const std::string& name) {
  if (name == "zeros") return zeros_initializer();
  if (name == "ones") return ones_initializer();
  if (name == "glorot_uniform") return glorot_uniform_initializer();
  if (name == "glorot_normal") return glorot_normal_initializer();
  if (name == "he_normal") return he_normal_initializer();
  if (name == "he_uniform") return he_uniform_initializer();
  if (name == "lecun_normal") return lecun_normal_initializer();
  if (name == "lecun_uniform") return lecun_uniform_initializer();
  if (name == "random_uniform") return random_uniform_initializer();  // Keras' defaults: +-0.05
  if (name == "random_normal") return random_normal_initializer();    // stddev 0.05
  if (name == "truncated_normal") return truncated_normal_initializer();
  if (name == "identity") return identity_initializer();
  fail("initializer", "unknown initializer '" + name +
                          "' (known: zeros, ones, glorot_uniform, glorot_normal, he_normal, he_uniform, lecun_normal, "
                          "lecun_uniform, random_uniform, random_normal, truncated_normal, identity)");
}

}  // namespace ef::nn
