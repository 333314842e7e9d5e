#pragma once
// Products of user-given sizes (image sizes, dims read from files, output lengths): computed
// with overflow checks, so that a product too large for int64 is an error and never a wrapped
// small size that a buffer is then allocated with.
#include <cstdint>
#include <initializer_list>
#include <optional>

namespace ef {

// a * b when both are >= 0 and the product fits int64; nullopt otherwise.
inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of `sizes` when none is negative and it is at most `limit`; nullopt otherwise
// (a zero size makes the product 0 whatever the others are).
inline std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> sizes,
                                                   std::int64_t limit = INT64_MAX) {
  for (std::int64_t s : sizes)
    if (s < 0) return std::nullopt;
  for (std::int64_t s : sizes)
    if (s == 0) return 0;
  std::int64_t p = 1;
  for (std::int64_t s : sizes)
    if (__builtin_mul_overflow(p, s, &p) || p > limit) return std::nullopt;
  return p;
}

}  // namespace ef
