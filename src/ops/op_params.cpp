#include "eagerflow/ops/op_params.h"

#include <charconv>
#include <cstring>

#include "eagerflow/core/error.h"

namespace ef {
namespace {

std::string exact(double v) {  // the shortest text that reads back to the same double
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out + "\"";
}

std::string tuple(const std::vector<std::int64_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string value_str(const OpParams::Value& v) {
  struct {
    std::string operator()(bool b) const { return b ? "True" : "False"; }
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return exact(d); }
    std::string operator()(const std::string& s) const { return quoted(s); }
    std::string operator()(const Word& w) const { return w.text; }
    std::string operator()(const std::vector<std::int64_t>& v) const { return tuple(v); }
    std::string operator()(const Shape& s) const { return s.str(); }
    std::string operator()(DType t) const { return std::string(name_of(t)); }
    std::string operator()(const OpParams::Raw& r) const { return r.text; }
  } visit;
  return std::visit(visit, v);
}

bool same_value(const OpParams::Value& a, const OpParams::Value& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) {
    double y = std::get<double>(b);
    return std::memcmp(x, &y, sizeof y) == 0;
  }
  return a == b;
}

}  // namespace

OpParams& OpParams::add_value(std::string name, Value value) {
  items_.emplace_back(std::move(name), std::move(value));
  return *this;
}

std::string OpParams::str() const {
  std::string s;
  for (const auto& [name, value] : items_) s += (s.empty() ? "" : " ") + name + "=" + value_str(value);
  return s;
}

bool OpParams::operator==(const OpParams& other) const {
  if (items_.size() != other.items_.size()) return false;
  for (std::size_t i = 0; i < items_.size(); ++i)
    if (items_[i].first != other.items_[i].first || !same_value(items_[i].second, other.items_[i].second)) return false;
  return true;
}

OpParams OpParams::parse(const std::string& text, const std::string& where) {
  OpParams p;
  p.where_ = where;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t eq = text.find('=', i);
    if (eq == std::string::npos) p.bad("expected name=value in '" + text + "'");
    std::string key = text.substr(i, eq - i);
    std::size_t j = eq + 1, end;
    if (j < text.size() && text[j] == '"') {  // quoted text: \" and \\ escaped inside
      end = j + 1;
      while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
      if (end >= text.size()) p.bad("unclosed string in '" + text + "'");
      ++end;
    } else if (j < text.size() && (text[j] == '(' || text[j] == '[')) {
      end = text.find(text[j] == '(' ? ')' : ']', j);
      if (end == std::string::npos) p.bad("unclosed bracket in '" + text + "'");
      ++end;
    } else {
      end = text.find(' ', j);
      if (end == std::string::npos) end = text.size();
    }
    if (p.has(key)) p.bad("parameter '" + key + "' given twice");
    p.items_.emplace_back(key, Raw{text.substr(j, end - j)});
    i = end;
  }
  return p;
}

void OpParams::bad(const std::string& why) const { throw Error(where_ + ": " + why); }

bool OpParams::has(const std::string& name) const {
  for (const auto& item : items_)
    if (item.first == name) return true;
  return false;
}

const OpParams::Value& OpParams::at(const std::string& name) const {
  for (const auto& item : items_)
    if (item.first == name) return item.second;
  bad("missing parameter '" + name + "'");
}

namespace {

std::int64_t parse_int(const std::string& s, const OpParams& p) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) p.bad("'" + s + "' is not an integer");
  return v;
}

// The comma-separated items between `open` and `close` (a trailing comma is allowed).
std::vector<std::string> items(const std::string& v, char open, char close, const char* what, const OpParams& p) {
  if (v.size() < 2 || v.front() != open || v.back() != close) p.bad("'" + v + "' is not " + what);
  std::vector<std::string> out;
  std::string inner = v.substr(1, v.size() - 2);
  for (std::size_t i = 0; i < inner.size();) {
    std::size_t c = inner.find(',', i);
    if (c == std::string::npos) c = inner.size();
    out.push_back(inner.substr(i, c - i));
    i = c + 1;
  }
  return out;
}

}  // namespace

bool OpParams::flag(const std::string& name) const {
  if (!has(name)) return false;
  const Value& v = at(name);
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* r = std::get_if<Raw>(&v); r && r->text == "True") return true;
  bad("parameter '" + name + "' must be True");
}

std::int64_t OpParams::integer(const std::string& name) const {
  const Value& v = at(name);
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* r = std::get_if<Raw>(&v)) return parse_int(r->text, *this);
  bad("parameter '" + name + "' is not an integer");
}

int OpParams::axis(const std::string& name) const {
  std::int64_t a = integer(name);
  if (a < -(1 << 20) || a > (1 << 20)) bad("axis " + std::to_string(a) + " out of range");
  return static_cast<int>(a);
}

std::vector<int> OpParams::axes(const std::string& name) const {
  std::vector<int> out;
  for (std::int64_t a : ints(name)) {
    if (a < -(1 << 20) || a > (1 << 20)) bad("axis " + std::to_string(a) + " out of range");
    out.push_back(static_cast<int>(a));
  }
  return out;
}

double OpParams::real(const std::string& name) const {
  const Value& v = at(name);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* r = std::get_if<Raw>(&v)) {
    double d = 0;
    auto [end, ec] = std::from_chars(r->text.data(), r->text.data() + r->text.size(), d);
    if (ec != std::errc() || end != r->text.data() + r->text.size()) bad("'" + r->text + "' is not a number");
    return d;
  }
  bad("parameter '" + name + "' is not a number");
}

std::string OpParams::text(const std::string& name) const {
  const Value& v = at(name);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  auto* r = std::get_if<Raw>(&v);
  if (!r) bad("parameter '" + name + "' is not text");
  const std::string& t = r->text;
  if (t.size() < 2 || t.front() != '"' || t.back() != '"') bad("'" + t + "' is not a quoted string");
  std::string out;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i] == '\\' && i + 2 < t.size()) {
      ++i;
      out += t[i] == 'n' ? '\n' : t[i];
    } else {
      out += t[i];
    }
  }
  return out;
}

std::string OpParams::word(const std::string& name) const {
  const Value& v = at(name);
  if (auto* w = std::get_if<Word>(&v)) return w->text;
  if (auto* r = std::get_if<Raw>(&v)) return r->text;
  bad("parameter '" + name + "' is not a word");
}

std::vector<std::int64_t> OpParams::ints(const std::string& name) const {
  const Value& v = at(name);
  if (auto* l = std::get_if<std::vector<std::int64_t>>(&v)) return *l;
  auto* r = std::get_if<Raw>(&v);
  if (!r) bad("parameter '" + name + "' is not a tuple of integers");
  std::vector<std::int64_t> out;
  for (const std::string& item : items(r->text, '(', ')', "a tuple", *this)) out.push_back(parse_int(item, *this));
  return out;
}

Shape OpParams::shape(const std::string& name) const {
  const Value& v = at(name);
  if (auto* s = std::get_if<Shape>(&v)) return *s;
  auto* r = std::get_if<Raw>(&v);
  if (!r) bad("parameter '" + name + "' is not a shape");
  std::vector<std::int64_t> dims;
  for (const std::string& d : items(r->text, '[', ']', "a shape", *this)) {
    dims.push_back(d == "?" ? kDynamic : parse_int(d, *this));
    if (dims.back() < 0 && dims.back() != kDynamic) bad("negative dimension in '" + r->text + "'");
  }
  if (dims.size() > 64) bad("rank too large in '" + r->text + "'");
  return Shape(std::move(dims));
}

DType OpParams::dtype(const std::string& name) const {
  const Value& v = at(name);
  if (auto* t = std::get_if<DType>(&v)) return *t;
  auto* r = std::get_if<Raw>(&v);
  if (!r) bad("parameter '" + name + "' is not a dtype");
  for (DType t : all_dtypes)
    if (name_of(t) == r->text) return t;
  bad("unknown dtype '" + r->text + "'");
}

}  // namespace ef
