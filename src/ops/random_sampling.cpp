// random::categorical, randint and permutation, composed of the counter-based uniform draws
// (so they follow the global seed and counter, op seeds and stateless draws like every other
// random op, eagerly and traced alike).
#include <cmath>
#include <limits>

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"

namespace ef::random {
namespace {

void check_logits(const Tensor& logits, std::int64_t num_samples, DType dtype, const char* op) {
  if (!logits.defined()) fail(op, "logits are undefined (default-constructed)");
  if (!is_floating(logits.dtype())) fail(kWrongType, op, "logits must be floating, got " + logits.spec().str());
  if (logits.rank() != 2) fail(op, "logits must be [batch, classes], got " + logits.spec().str());
  if (logits.shape()[1] == 0) fail(op, "logits need at least one class, got " + logits.spec().str());
  if (num_samples < 0) fail(op, "num_samples must be >= 0, got " + std::to_string(num_samples));
  if (!is_index_dtype(dtype)) fail(kWrongType, op, "dtype must be int32 or int64, got " + std::string(name_of(dtype)));
}

// The Gumbel-max trick: argmax(logits + G) with G = -log(-log(U)) is a draw from
// softmax(logits), exactly; u in [tiny, 1) keeps both logs finite.
Tensor gumbel_argmax(const Tensor& scores, const Tensor& u, DType dtype) {
  Tensor g = neg(log(neg(log(u))));
  Tensor idx = argmax(scores + g, -1);
  return dtype == DType::int64 ? idx : cast(idx, dtype);
}

constexpr double kTiny = 1.1754943508222875e-38;  // the smallest normal float32

}  // namespace

Tensor categorical(const Tensor& logits, std::int64_t num_samples, DType dtype, std::optional<std::uint64_t> seed) {
  check_logits(logits, num_samples, dtype, "random.categorical");
  Tensor scores = broadcast_to(expand_dims(logits, 1), Shape{kDynamic, num_samples, kDynamic});
  return gumbel_argmax(scores, uniform_like(scores, kTiny, 1.0, seed), dtype);
}

Tensor stateless_categorical(const Tensor& logits, std::int64_t num_samples, std::uint64_t seed, DType dtype) {
  check_logits(logits, num_samples, dtype, "random.stateless_categorical");
  if (!logits.shape().is_static())
    fail("random.stateless_categorical", "needs logits of a static shape, got " + logits.spec().str());
  Shape s{logits.shape()[0], num_samples, logits.shape()[1]};
  Tensor scores = broadcast_to(expand_dims(logits, 1), s);
  return gumbel_argmax(scores, stateless_uniform(s, seed, kTiny, 1.0, logits.dtype()), dtype);
}

Tensor randint(const Shape& shape, std::int64_t minval, std::int64_t maxval, DType dtype, std::optional<std::uint64_t> seed) {
  if (!is_index_dtype(dtype))
    fail(kWrongType, "random.randint", "dtype must be int32 or int64, got " + std::string(name_of(dtype)));
  if (!(minval < maxval)) fail("random.randint", "needs minval < maxval, got " + std::to_string(minval) + ", " + std::to_string(maxval));
  if (dtype == DType::int32 && (minval < std::numeric_limits<std::int32_t>::min() || maxval - 1 > std::numeric_limits<std::int32_t>::max()))
    fail("random.randint", "bounds " + std::to_string(minval) + ", " + std::to_string(maxval) + " do not fit int32");
  double range = static_cast<double>(maxval) - static_cast<double>(minval);
  Tensor u = uniform(shape, 0.0, 1.0, DType::float64, seed);
  // floor(u * range) is in [0, range); the clip guards the rounding of huge ranges.
  Tensor v = clip(floor(u * range) + static_cast<double>(minval), static_cast<double>(minval), static_cast<double>(maxval - 1));
  return cast(v, dtype);
}

Tensor permutation(std::int64_t n, std::optional<std::uint64_t> seed) {
  if (n < 0) fail("random.permutation", "n must be >= 0, got " + std::to_string(n));
  // Sorting n independent uniform keys gives every order with the same probability (ties
  // among 53-bit keys are negligible, and broken stably).
  return argsort(uniform(Shape{n}, 0.0, 1.0, DType::float64, seed), 0);
}

}  // namespace ef::random
