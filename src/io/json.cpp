#include "io/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_set>

#include "eagerflow/core/error.h"

namespace ef::io {
namespace {

constexpr int kMaxDepth = 64;
// Each value takes ~40 bytes in memory for 2 in the text ("0,"): without a cap a 256 MB
// saved_model.json of zeros took ~9 GB. 8M values hold a safetensors header of ~1M tensors
// or a saved graph of ~1M values.
constexpr std::size_t kMaxValues = std::size_t{1} << 23;

class Parser {
 public:
  Parser(std::string_view text, const std::string& what, bool allow_reals)
      : s_(text), what_(what), allow_reals_(allow_reals) {}

  Json document() {
    Json v = value(0);
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& why) const {
    throw Error(what_ + ": malformed JSON header at byte " + std::to_string(pos_) + ": " + why);
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= s_.size()) error("unexpected end");
    return s_[pos_];
  }
  void expect(char c) {
    if (peek() != c) error(std::string("expected '") + c + "'");
    ++pos_;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) error("nested too deeply");
    if (++values_ > kMaxValues) error("more than " + std::to_string(kMaxValues) + " values (the limit of a header)");
    char c = peek();
    Json out;
    if (c == '{') {
      ++pos_;
      auto obj = std::make_shared<Json::Object>();
      std::unordered_set<std::string> keys;  // duplicate keys found in O(1), not by a scan per key
      if (peek() == '}') {
        ++pos_;
      } else {
        for (;;) {
          if (peek() != '"') error("expected a key");
          std::string key = string();
          // Small objects (most of them) are scanned; large ones use the set, so that an object
          // of n keys costs O(n), not O(n^2) (a safetensors header may list a million tensors).
          bool duplicate = false;
          if (obj->size() < 16) {
            for (const auto& [k, v] : *obj) duplicate = duplicate || k == key;
          } else {
            if (keys.empty())
              for (const auto& [k, v] : *obj) keys.insert(k);
            duplicate = !keys.insert(key).second;
          }
          if (duplicate) error("duplicate key \"" + key + "\"");
          expect(':');
          obj->emplace_back(std::move(key), value(depth + 1));
          if (peek() == ',') { ++pos_; continue; }
          expect('}');
          break;
        }
      }
      out.value = std::move(obj);
    } else if (c == '[') {
      ++pos_;
      auto arr = std::make_shared<Json::Array>();
      if (peek() == ']') {
        ++pos_;
      } else {
        for (;;) {
          arr->push_back(value(depth + 1));
          if (peek() == ',') { ++pos_; continue; }
          expect(']');
          break;
        }
      }
      out.value = std::move(arr);
    } else if (c == '"') {
      out.value = string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      out = number();
    } else if (literal("true")) {
      out.value = true;
    } else if (literal("false")) {
      out.value = false;
    } else if (literal("null")) {
      out.value = nullptr;
    } else {
      error(std::string("unexpected character '") + c + "'");
    }
    return out;
  }

  // An integer, or (allow_reals) a real: JSON's grammar, -?int(.digits)?([eE][+-]?digits)?.
  Json number() {
    std::size_t start = pos_;
    std::size_t p = pos_ + (s_[pos_] == '-' ? 1 : 0);
    auto digits = [&](std::size_t& q) {
      std::size_t first = q;
      while (q < s_.size() && s_[q] >= '0' && s_[q] <= '9') ++q;
      return q > first;
    };
    std::size_t q = p;
    if (!digits(q)) { pos_ = q; error("expected a digit"); }
    bool real = false;
    if (q < s_.size() && s_[q] == '.') {
      real = true;
      ++q;
      if (!digits(q)) { pos_ = q; error("expected a digit after '.'"); }
    }
    if (q < s_.size() && (s_[q] == 'e' || s_[q] == 'E')) {
      real = true;
      ++q;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (!digits(q)) { pos_ = q; error("expected a digit in the exponent"); }
    }
    Json out;
    if (!real || !allow_reals_) {
      out.value = integer();
      return out;
    }
    if (s_[p] == '0' && p + 1 < s_.size() && s_[p + 1] >= '0' && s_[p + 1] <= '9') error("leading zero");
    if (q - start > 64) error("a number longer than 64 characters");
    double v = 0;
    auto [end, ec] = std::from_chars(s_.data() + start, s_.data() + q, v);
    if (ec != std::errc() || end != s_.data() + q || !std::isfinite(v)) error("a number out of range");
    pos_ = q;
    out.value = v;
    return out;
  }

  std::int64_t integer() {
    bool negative = s_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') error("expected a digit");
    if (s_[pos_] == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9') error("leading zero");
    std::uint64_t v = 0;
    const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : std::uint64_t{INT64_MAX};
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      std::uint64_t d = static_cast<std::uint64_t>(s_[pos_] - '0');
      if (v > (limit - d) / 10) error("integer out of range");
      v = v * 10 + d;
      ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) error("only integers are allowed");
    return negative ? static_cast<std::int64_t>(0 - v) : static_cast<std::int64_t>(v);
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::uint32_t hex4() {
    if (pos_ + 4 > s_.size()) error("short \\u escape");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else error("bad \\u escape");
    }
    return v;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) error("unterminated string");
      char c = s_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) error("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            if (!literal("\\u")) error("lone surrogate");
            std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) error("bad surrogate pair");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            error("lone surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: error(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  std::string_view s_;
  const std::string& what_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
  bool allow_reals_ = false;
};

const char* type_name(const Json& j) {
  switch (j.value.index()) {
    case 0: return "null";
    case 1: return "a boolean";
    case 2: return "an integer";
    case 3: return "a string";
    case 4: return "an array";
    case 6: return "a real";
    default: return "an object";
  }
}

}  // namespace

Json parse_json(std::string_view text, const std::string& what, bool allow_reals) {
  return Parser(text, what, allow_reals).document();
}

const Json::Object& Json::object(const std::string& what) const {
  if (!is_object()) throw Error(what + ": expected an object, got " + type_name(*this));
  return *std::get<std::shared_ptr<Object>>(value);
}
const Json::Array& Json::array(const std::string& what) const {
  if (!is_array()) throw Error(what + ": expected an array, got " + type_name(*this));
  return *std::get<std::shared_ptr<Array>>(value);
}
const std::string& Json::string(const std::string& what) const {
  if (!is_string()) throw Error(what + ": expected a string, got " + type_name(*this));
  return std::get<std::string>(value);
}
std::int64_t Json::integer(const std::string& what) const {
  if (!is_int()) throw Error(what + ": expected an integer, got " + type_name(*this));
  return std::get<std::int64_t>(value);
}
double Json::real(const std::string& what) const {
  if (is_int()) return static_cast<double>(std::get<std::int64_t>(value));
  if (!is_real()) throw Error(what + ": expected a number, got " + type_name(*this));
  return std::get<double>(value);
}
const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : *std::get<std::shared_ptr<Object>>(value))
    if (k == key) return &v;
  return nullptr;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_real(double v) {
  if (!std::isfinite(v)) throw Error("JSON has no number for " + std::string(std::isnan(v) ? "NaN" : "infinity"));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text that reads back exactly
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace ef::io
