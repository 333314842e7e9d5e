#pragma once
// A small strict JSON reader and writer for file headers (safetensors, saved models): objects,
// arrays, strings, integers, booleans, null, and reals where a reader allows them (model files,
// eagerflow/saving/model.h). Bounded: nesting depth and sizes are checked, so a hostile header
// gives an ef::Error, never a crash or a huge allocation.
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
  // double last: only parse_json(..., allow_reals = true) makes one.
  std::variant<std::nullptr_t, bool, std::int64_t, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>, double> value;

  bool is_object() const { return std::holds_alternative<std::shared_ptr<Object>>(value); }
  bool is_array() const { return std::holds_alternative<std::shared_ptr<Array>>(value); }
  bool is_string() const { return std::holds_alternative<std::string>(value); }
  bool is_int() const { return std::holds_alternative<std::int64_t>(value); }
  bool is_real() const { return std::holds_alternative<double>(value); }
  // Accessors throw ef::Error naming `what` when the value has another type.
  const Object& object(const std::string& what) const;
  const Array& array(const std::string& what) const;
  const std::string& string(const std::string& what) const;
  std::int64_t integer(const std::string& what) const;
  // A real, or an integer as a double.
  double real(const std::string& what) const;
  // The member `key` of an object, or nullptr.
  const Json* find(std::string_view key) const;
};

// Parses `text` (what: the file, for errors). Rejects trailing text, duplicate keys, floats
// (unless allow_reals: then a number with a fraction or an exponent is a double, which must be
// finite and at most 64 characters long), nesting deeper than 64, more than 2^23 values and
// integers outside int64.
Json parse_json(std::string_view text, const std::string& what, bool allow_reals = false);
// A JSON string literal (quotes and escapes).
std::string json_quote(std::string_view s);
// A finite double as the shortest JSON number that reads back to the same bits, always with a
// '.' or an exponent (so it reads back as a real, not an integer): 1.0, 0.1, 1e-07, -0.0. An
// ef::Error for inf and NaN (JSON has no such numbers).
std::string json_real(double v);

}  // namespace ef::io
