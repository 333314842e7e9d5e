#pragma once
// Input signatures: what a traced function's cache is keyed on. One entry per argument:
// a tensor's dtype and shape, a container's structure and specs, or a static value.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "eagerflow/core/shape.h"

namespace ef {

using StaticValue = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

struct ArgSignature {
  enum class Kind { tensor, tensor_list, tensor_map, static_value, variable };
  Kind kind = Kind::tensor;
  std::vector<TensorSpec> specs;  // tensor: 1; list: n; map: n (in key order); variable: its spec
  std::vector<std::string> keys;  // map keys, sorted; variable: its name
  StaticValue value;              // static values; variable: its identity
  std::shared_ptr<void> object;   // variable: its state (the traced body reads it by reference)
  std::string str() const;        // "float32[60,28,28]", "[float32[2], float32[3]]", "true"
};

using Signature = std::vector<ArgSignature>;

std::string static_value_str(const StaticValue& v);
// Static values compare by value, floats by their bits: NaN equals NaN (no retrace on every
// call), and 0.0 differs from -0.0 (the body may tell them apart).
bool static_equal(const StaticValue& a, const StaticValue& b);
// "(x: float32[60,28,28], training: true)" with argument names where known.
std::string signature_str(const Signature& sig, const std::vector<std::string>& names);
// True when every spec of `general` accepts the matching spec of `specific` (dynamic dims
// accept any size) and the structure and static values are equal.
bool signature_accepts(const Signature& general, const Signature& specific);

// Cache-key hashing, computed the same way from a Signature and (without allocating) from the
// call's arguments: kind, dtype and dims of every tensor, static values.
inline void hash_mix(std::uint64_t& h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
}
inline void hash_spec(std::uint64_t& h, DType dtype, const Shape& shape) {
  hash_mix(h, static_cast<std::uint64_t>(dtype) + 1);
  hash_mix(h, static_cast<std::uint64_t>(shape.rank()));
  for (auto d : shape) hash_mix(h, static_cast<std::uint64_t>(d));
}
void hash_static(std::uint64_t& h, const StaticValue& v);
// A string static hashed in place (no copy): equal to hash_static of the same string.
void hash_string_static(std::uint64_t& h, std::string_view s);
std::uint64_t signature_hash(const Signature& sig);
// True when no spec has a dynamic dim: such an entry is found through the hash index.
bool signature_is_static(const Signature& sig);
// Every dim of every spec is >= 0 or kDynamic, and the known dims of a spec make at most
// INT64_MAX bytes; otherwise an ef::Error tagged `tag` naming the argument and the spec.
void check_signature_dims(const Signature& sig, const std::vector<std::string>& names, const std::string& tag);

}  // namespace ef
