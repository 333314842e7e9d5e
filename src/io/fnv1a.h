#pragma once
// FNV-1a 64 (offset basis 14695981039346656037, prime 1099511628211), the checksum of .efmodel
// files and checkpoints. Files written before format version 2 (.efmodel) and checkpoints of
// the same time used a basis with a digit missing, kLegacyFnvBasis; readers still accept it
// for those files.
#include <cstddef>
#include <cstdint>

namespace ef::io {

inline constexpr std::uint64_t kFnvBasis = 14695981039346656037ull;
inline constexpr std::uint64_t kLegacyFnvBasis = 1469598103934665603ull;
inline constexpr std::uint64_t kFnvPrime = 1099511628211ull;

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = kFnvBasis) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnvPrime;
  return h;
}

}  // namespace ef::io
