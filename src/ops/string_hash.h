#pragma once
// The three string hashes of TF's tf.strings.to_hash_bucket*, bit for bit (a bucket computed by
// TensorFlow and one computed here agree, so vocabularies hashed in either carry over).
#include <cstdint>
#include <string_view>

namespace ef::detail {

std::uint64_t legacy_hash64(std::string_view s);      // to_hash_bucket: MurmurHash64A, TF's seed
std::uint64_t fingerprint64(std::string_view s);      // to_hash_bucket_fast: FarmHash's Fingerprint64
std::uint64_t siphash24(std::uint64_t k0, std::uint64_t k1, std::string_view s);  // to_hash_bucket_strong

}  // namespace ef::detail
