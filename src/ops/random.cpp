#include "eagerflow/ops/random.h"

#include <atomic>
#include <cmath>
#include <random>

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

std::uint64_t op_seed(std::optional<std::uint64_t> seed) {
  if (seed) return mix(*seed ^ 0x5EEDull);
  return mix(global().seed.load() + mix(global().counter.fetch_add(1)));
}

// Uniform in [0, 1) with 53 random bits.
double unit(std::uint64_t key, std::uint64_t i) { return static_cast<double>(mix(key ^ mix(i)) >> 11) * 0x1.0p-53; }

void check_float(DType dtype, const char* op) {
  if (!is_floating(dtype))
    fail(op, "needs a floating dtype, got " + std::string(name_of(dtype)));
}

}  // namespace

void set_seed(std::uint64_t seed) {
  global().seed.store(seed);
  global().counter.store(0);
}

namespace {

// A float tensor whose element i is draw(key, i): the same on every run and thread count.
template <class Draw>
Tensor fill(const Shape& shape, DType dtype, std::optional<std::uint64_t> seed, const char* op, Draw draw) {
  check_float(dtype, op);
  Tensor t = Tensor::empty(dtype, shape);
  std::uint64_t key = op_seed(seed);
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      auto d = t.mutable_data<T>();
      for (std::size_t i = 0; i < d.size(); ++i) d[i] = static_cast<T>(draw(key, i));
    }
  });
  return t;
}

}  // namespace

Tensor uniform(const Shape& shape, double minval, double maxval, DType dtype, std::optional<std::uint64_t> seed) {
  if (!(minval < maxval)) fail("random.uniform", "needs minval < maxval");
  Tensor t = fill(shape, dtype, seed, "random.uniform",
                  [&](std::uint64_t key, std::size_t i) { return minval + (maxval - minval) * unit(key, i); });
  // Rounding to float32 can land exactly on maxval; the range is half-open.
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>)
      for (T& v : t.mutable_data<T>())
        if (!(v < static_cast<T>(maxval))) v = static_cast<T>(minval);
  });
  return t;
}

Tensor normal(const Shape& shape, double mean, double stddev, DType dtype, std::optional<std::uint64_t> seed) {
  if (stddev < 0) fail("random.normal", "needs stddev >= 0");
  // Box-Muller on two independent draws of element i.
  return fill(shape, dtype, seed, "random.normal", [&](std::uint64_t key, std::size_t i) {
    double u1 = 1.0 - unit(key, 2 * i), u2 = unit(key, 2 * i + 1);
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  });
}

}  // namespace ef::random
