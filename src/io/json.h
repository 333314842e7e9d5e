#pragma once
// A small strict JSON reader and writer for file headers (safetensors, saved models): objects,
// arrays, strings, integers, booleans, null. Bounded: nesting depth and sizes are checked, so
// a hostile header gives an ef::Error, never a crash or a huge allocation.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ef::io {

struct Json {
  using Object = std::vector<std::pair<std::string, Json>>;  // in file order; keys unique
  using Array = std::vector<Json>;
  std::variant<std::nullptr_t, bool, std::int64_t, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> value;

  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(value); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(value); }
  bool is_string() const { return std::holds_alternative<std::string>(value); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(value); }
  // Accessors throw ef::Error naming `what` when the value has another type.
  const Object& object(const std::string& what) const;
  const Array& array(const std::string& what) const;
  const std::string& string(const std::string& what) const;
  std::int64_t integer(const std::string& what) const;
  // The member `key` of an object, or nullptr.
  const Json* find(std::string_view key) const;
};

// Parses `text` (what: the file, for errors). Rejects trailing text, duplicate keys, floats,
// nesting deeper than 64, more than 2^23 values and numbers outside int64.
Json parse_json(std::string_view text, const std::string& what);
// A JSON string literal (quotes and escapes).
std::string json_quote(std::string_view s);

}  // namespace ef::io
