#include <charconv>
#include "eagerflow/ops/random.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <unordered_map>

#include "ops/primitives.h"
#include "ops/random_state.h"
#include "ops/op_factories.h"

namespace ef::random {
namespace {

// SplitMix64 finalizer over (seed, counter): stateless, so element i of a tensor is the
// same on every run and every thread count.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

struct GlobalSeed {
  std::atomic<std::uint64_t> seed{std::random_device{}()};
  std::atomic<std::uint64_t> counter{0};
};
GlobalSeed& global() {
  static GlobalSeed g;
  return g;
}

// One draw counter per explicit seed (TF keeps one per op seed too): the k-th execution of any
// op with seed s draws the k-th set of numbers, whether it runs eagerly (a new op per call) or
// replays in a graph. set_seed restarts every sequence (SeedGenerators' too). Counters live as
// long as the program; ops hold them by shared pointer, so replay takes no lock.
class SeededCounters {
 public:
  std::shared_ptr<SeedGenerator::State> counter(std::uint64_t seed) {
    std::lock_guard lock(mutex_);
    auto& slot = counters_[seed];
    if (!slot) slot = std::make_shared<SeedGenerator::State>(seed);
    return slot;
  }
  // Generators register so that set_seed can restart them; expired ones are dropped as the
  // list grows, so a program that makes layers in a loop keeps it short.
  void add_generator(const std::shared_ptr<SeedGenerator::State>& g) {
    std::lock_guard lock(mutex_);
    if (generators_.size() >= 2 * live_after_purge_ + 16) {
      std::erase_if(generators_, [](const auto& w) { return w.expired(); });
      live_after_purge_ = generators_.size();
    }
    generators_.push_back(g);
  }
  void reset(bool with_generators) {
    std::lock_guard lock(mutex_);
    for (auto& [seed, c] : counters_) c->draws.store(0);
    if (with_generators)
      for (auto& w : generators_)
        if (auto g = w.lock()) g->draws.store(0);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> snapshot() {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (auto& [seed, c] : counters_)
      if (std::uint64_t n = c->draws.load()) out.emplace_back(seed, n);
    std::sort(out.begin(), out.end());
    return out;
  }
  void restore(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& state) {
    reset(/*with_generators=*/false);
    for (auto [seed, n] : state) counter(seed)->draws.store(n);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::shared_ptr<SeedGenerator::State>> counters_;
  std::vector<std::weak_ptr<SeedGenerator::State>> generators_;
  std::size_t live_after_purge_ = 0;
};
SeededCounters& seeded_counters() {
  static auto* counters = new SeededCounters;  // never destroyed: graphs may outlive statics
  return *counters;
}

std::uint64_t op_seed(std::optional<std::uint64_t> seed) {
  if (seed) return mix(*seed ^ 0x5EEDull);
  return mix(global().seed.load() + mix(global().counter.fetch_add(1)));
}

// Uniform in [0, 1) with 53 random bits.
double unit(std::uint64_t key, std::uint64_t i) { return static_cast<double>(mix(key ^ mix(i)) >> 11) * 0x1.0p-53; }

void check_float(DType dtype, const char* op) {
  if (!is_floating(dtype)) fail(kWrongType, op, "needs a floating dtype, got " + std::string(name_of(dtype)));
}

}  // namespace

void set_seed(std::uint64_t seed) {
  global().seed.store(seed);
  global().counter.store(0);
  seeded_counters().reset(/*with_generators=*/true);
}

SeedGenerator::SeedGenerator(std::uint64_t seed) : state_(std::make_shared<State>(seed)) {
  seeded_counters().add_generator(state_);
}
SeedGenerator::SeedGenerator() : SeedGenerator(op_seed(std::nullopt)) {}
std::uint64_t SeedGenerator::seed() const { return state_->seed; }
std::uint64_t SeedGenerator::draws() const { return state_->draws.load(); }
void SeedGenerator::set_draws(std::uint64_t n) const { state_->draws.store(n); }

GeneratorState get_global_state() { return {global().seed.load(), global().counter.load(), seeded_counters().snapshot()}; }

void set_global_state(GeneratorState state) {
  global().seed.store(state.seed);
  global().counter.store(state.counter);
  seeded_counters().restore(state.seeded);
}

std::shared_ptr<SeedGenerator::State> seed_counter(std::uint64_t seed) { return seeded_counters().counter(seed); }

std::uint64_t execution_key(std::optional<std::uint64_t> seed, bool stateless, SeedGenerator::State* seeded) {
  // Every execution draws new numbers: from the global generator, or from this op's seed and
  // that seed's count of draws.
  if (stateless) return op_seed(seed);
  if (!seed) return op_seed(std::nullopt);
  std::uint64_t k = seeded->draws.fetch_add(1);
  std::uint64_t key = op_seed(seed);
  return k ? mix(key ^ mix(k)) : key;
}

namespace {

// Element i is draw(key, i): the same on every run and thread count.
template <class Draw>
void fill(Tensor& t, std::uint64_t key, Draw draw) {
  dispatch_storage_dtype(t.dtype(), [&](auto tag) {  // bfloat16: each draw rounded once
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
      auto d = t.mutable_data<T>();
      for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<T>(draw(key, i));
    }
  });
}

Tensor draw(RandomKind kind, const Shape& shape, double a, double b, DType dtype, std::optional<std::uint64_t> seed,
            const Tensor* like, bool stateless = false, std::shared_ptr<SeedGenerator::State> generator = nullptr) {
  const char* op = kind == RandomKind::uniform ? "random.uniform" : kind == RandomKind::normal ? "random.normal" : "random.truncated_normal";
  check_float(dtype, op);
  if (kind == RandomKind::uniform && !(a < b)) fail(op, "needs minval < maxval");
  if (kind != RandomKind::uniform && !(b >= 0)) fail(op, "needs stddev >= 0");
  RandomOp r(kind, shape, a, b, dtype, seed, like != nullptr, stateless, std::move(generator));
  if (like) return dispatch1(r, {*like});
  return dispatch1(r, std::span<const Tensor>());
}

}  // namespace

}  // namespace ef::random

namespace ef {

RandomOp::RandomOp(RandomKind kind, Shape shape, double a, double b, DType dtype, std::optional<std::uint64_t> seed,
                   bool like, bool stateless, std::shared_ptr<random::SeedGenerator::State> generator)
    : kind_(kind), shape_(std::move(shape)), a_(a), b_(b), dtype_(dtype), seed_(seed), like_(like),
      seeded_draws_(std::move(generator)), stateless_(stateless) {
  if (stateless && !seed) fail(name(), "a stateless draw needs a seed");
  if (seeded_draws_ && (stateless || seed != seeded_draws_->seed)) fail(name(), "a generator's draw takes the generator's seed");
  if (seed && !stateless && !seeded_draws_) seeded_draws_ = random::seeded_counters().counter(*seed);
}

OpParams RandomOp::parameters() const {
  OpParams p;
  if (!like_) p.add("shape", shape_);
  bool uniform = kind_ == RandomKind::uniform;
  p.add(uniform ? "minval" : "mean", a_).add(uniform ? "maxval" : "stddev", b_);
  if (dtype_ != DType::float32) p.add("dtype", dtype_);
  // A seed is 64 bits: kept as its two's-complement int64, so that it reads back exactly.
  if (seed_) p.add("seed", static_cast<std::int64_t>(*seed_));
  return p.add_flag("stateless", stateless_);
}

std::vector<TensorSpec> RandomOp::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, like_ ? 1 : 0);
  if (like_) return {{dtype_, in[0].shape(), {}}};
  for (auto d : shape_)
    if (d < 0) fail(name(), "needs a static shape, got " + shape_.str() + " (use ef::random::uniform_like for a runtime shape)");
  return {{dtype_, shape_, {}}};
}

void RandomOp::eval(std::span<const Tensor>, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::uint64_t key = random::execution_key(seed_, stateless_, seeded_draws_.get());
  double a = a_, b = b_;
  if (kind_ == RandomKind::uniform) {
    random::fill(out[0], key, [&](std::uint64_t k, std::size_t i) { return a + (b - a) * random::unit(k, i); });
    // Rounding to float32 can land exactly on maxval; the range is half-open.
    dispatch_storage_dtype(dtype_, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>)
        for (T& v : out[0].mutable_data<T>())
          if (!(v < static_cast<T>(b))) v = static_cast<T>(a);
    });
  } else {
    // Box-Muller on two independent draws of element i; a truncated draw beyond two standard
    // deviations (4.6% of them) is drawn again from the next pair of element i's stream.
    bool truncated = kind_ == RandomKind::truncated_normal;
    random::fill(out[0], key, [&](std::uint64_t k, std::size_t i) {
      for (std::uint64_t attempt = 0;; ++attempt) {
        std::uint64_t stream = attempt ? random::mix(k ^ random::mix(~attempt)) : k;
        double u1 = 1.0 - random::unit(stream, 2 * i), u2 = random::unit(stream, 2 * i + 1);
        double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
        if (!truncated) return a + b * z;
        if (std::abs(z) <= 2.0 || attempt == 1000) return a + b * std::clamp(z, -2.0, 2.0);
      }
    });
  }
}

}  // namespace ef

namespace ef::random {

Tensor uniform(const Shape& shape, double minval, double maxval, DType dtype, std::optional<std::uint64_t> seed) {
  return draw(RandomKind::uniform, shape, minval, maxval, dtype, seed, nullptr);
}

Tensor normal(const Shape& shape, double mean, double stddev, DType dtype, std::optional<std::uint64_t> seed) {
  return draw(RandomKind::normal, shape, mean, stddev, dtype, seed, nullptr);
}

Tensor uniform_like(const Tensor& like, double minval, double maxval, std::optional<std::uint64_t> seed) {
  if (!like.defined()) fail("random.uniform", "the shape tensor is undefined");
  return draw(RandomKind::uniform, Shape{}, minval, maxval, like.dtype(), seed, &like);
}

Tensor normal_like(const Tensor& like, double mean, double stddev, std::optional<std::uint64_t> seed) {
  if (!like.defined()) fail("random.normal", "the shape tensor is undefined");
  return draw(RandomKind::normal, Shape{}, mean, stddev, like.dtype(), seed, &like);
}

Tensor uniform_like(const Tensor& like, double minval, double maxval, const SeedGenerator& generator) {
  if (!like.defined()) fail("random.uniform", "the shape tensor is undefined");
  return draw(RandomKind::uniform, Shape{}, minval, maxval, like.dtype(), generator.seed(), &like, false, generator.state());
}

Tensor normal_like(const Tensor& like, double mean, double stddev, const SeedGenerator& generator) {
  if (!like.defined()) fail("random.normal", "the shape tensor is undefined");
  return draw(RandomKind::normal, Shape{}, mean, stddev, like.dtype(), generator.seed(), &like, false, generator.state());
}

Tensor uniform(const Shape& shape, double minval, double maxval, DType dtype, const SeedGenerator& generator) {
  return draw(RandomKind::uniform, shape, minval, maxval, dtype, generator.seed(), nullptr, false, generator.state());
}

Tensor normal(const Shape& shape, double mean, double stddev, DType dtype, const SeedGenerator& generator) {
  return draw(RandomKind::normal, shape, mean, stddev, dtype, generator.seed(), nullptr, false, generator.state());
}

Tensor stateless_uniform(const Shape& shape, std::uint64_t seed, double minval, double maxval, DType dtype) {
  return draw(RandomKind::uniform, shape, minval, maxval, dtype, seed, nullptr, /*stateless=*/true);
}

Tensor stateless_normal(const Shape& shape, std::uint64_t seed, double mean, double stddev, DType dtype) {
  return draw(RandomKind::normal, shape, mean, stddev, dtype, seed, nullptr, /*stateless=*/true);
}

Tensor truncated_normal(const Shape& shape, double mean, double stddev, DType dtype, std::optional<std::uint64_t> seed) {
  return draw(RandomKind::truncated_normal, shape, mean, stddev, dtype, seed, nullptr);
}

Tensor truncated_normal(const Shape& shape, double mean, double stddev, DType dtype, const SeedGenerator& generator) {
  return draw(RandomKind::truncated_normal, shape, mean, stddev, dtype, generator.seed(), nullptr, false, generator.state());
}

Tensor stateless_truncated_normal(const Shape& shape, std::uint64_t seed, double mean, double stddev, DType dtype) {
  return draw(RandomKind::truncated_normal, shape, mean, stddev, dtype, seed, nullptr, /*stateless=*/true);
}


}  // namespace ef::random

namespace ef {

void detail::add_random_factories(detail::OpFactories& f) {
  for (auto [name, kind] : {std::pair{"random_uniform", RandomKind::uniform}, std::pair{"random_normal", RandomKind::normal},
                            std::pair{"random_truncated_normal", RandomKind::truncated_normal}})
    f[name] = [kind](const OpParams& p) {
      bool like = !p.has("shape");
      double x = p.real(kind == RandomKind::uniform ? "minval" : "mean");
      double y = p.real(kind == RandomKind::uniform ? "maxval" : "stddev");
      std::optional<std::uint64_t> seed;
      if (p.has("seed")) seed = static_cast<std::uint64_t>(p.integer("seed"));
      return std::make_shared<RandomOp>(kind, like ? Shape{} : p.shape("shape"), x, y,
                                        p.has("dtype") ? p.dtype("dtype") : DType::float32, seed, like,
                                        p.flag("stateless"));
    };
}

}  // namespace ef
