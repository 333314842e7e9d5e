#pragma once
// Input signatures: what a traced function's cache is keyed on. One entry per argument:
// a tensor's dtype and shape, a container's structure and specs, or a static value.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "eagerflow/core/shape.h"

namespace ef {

using StaticValue = std::variant<std::monostate, bool, std::int64_t, double, std::string>;

struct ArgSignature {
  enum class Kind { tensor, tensor_list, tensor_map, static_value };
  Kind kind = Kind::tensor;
  std::vector<TensorSpec> specs;  // tensor: 1; list: n; map: n (in key order)
  std::vector<std::string> keys;  // map keys, sorted
  StaticValue value;              // static values only
  std::string str() const;        // "float32[60,28,28]", "[float32[2], float32[3]]", "true"
};

using Signature = std::vector<ArgSignature>;

std::string static_value_str(const StaticValue& v);
// "(x: float32[60,28,28], training: true)" with argument names where known.
std::string signature_str(const Signature& sig, const std::vector<std::string>& names);
// True when every spec of `general` accepts the matching spec of `specific` (dynamic dims
// accept any size) and the structure and static values are equal.
bool signature_accepts(const Signature& general, const Signature& specific);

}  // namespace ef
