// The string ops: element-by-element functions, joins, substrings, splits into ragged rows.
// Kernels read std::string_view elements and write new strings with StringTensorBuilder.
#include "ops/string_ops.h"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "ops/op_factories.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"
#include "ops/shape_rules.h"
#include "ops/string_hash.h"
#include "ops/string_regex.h"

namespace ef {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

void expect_strings(const Primitive& op, const Tensor& t, const char* what) {
  if (t.dtype() != DType::string)
    fail(kWrongType, op.name(), std::string(what) + " must be a string tensor, got " + t.spec().str());
}

void expect_index(const Primitive& op, const Tensor& t, const char* what) {
  if (t.dtype() != DType::int32 && t.dtype() != DType::int64)
    fail(kWrongType, op.name(), std::string(what) + " must be int32 or int64, got " + t.spec().str());
}

std::vector<std::int64_t> index_values(const Tensor& t) {
  if (t.dtype() == DType::int64) return t.to_vector<std::int64_t>();
  auto v = t.to_vector<std::int32_t>();
  return std::vector<std::int64_t>(v.begin(), v.end());
}

// One UTF-8 character at s[i]: its code point and byte length; a malformed sequence is one byte
// decoding to U+FFFD (TF's errors='replace').
std::pair<std::int32_t, int> decode_utf8(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return {c, 1};
  int n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
  if (n == 0 || i + static_cast<std::size_t>(n) > s.size()) return {0xFFFD, 1};
  std::int32_t cp = c & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    unsigned char d = b(i + static_cast<std::size_t>(k));
    if ((d & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (d & 0x3F);
  }
  bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1};
  return {cp, n};
}

void encode_utf8(std::int64_t cp, std::string& out) {
  if (cp < 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    out += kReplacement;
    return;
  }
  auto u = static_cast<std::uint32_t>(cp);
  if (u < 0x80) {
    out += static_cast<char>(u);
  } else if (u < 0x800) {
    out += static_cast<char>(0xC0 | (u >> 6));
    out += static_cast<char>(0x80 | (u & 0x3F));
  } else if (u < 0x10000) {
    out += static_cast<char>(0xE0 | (u >> 12));
    out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (u & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (u >> 18));
    out += static_cast<char>(0x80 | ((u >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((u >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (u & 0x3F));
  }
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// TF's rule: surrounding whitespace is allowed, then the whole text must be the number.
template <class T>
bool parse_number(std::string_view text, T& out) {
  std::string_view s = trimmed(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

constexpr char kWebSafe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode_base64(std::string_view in, bool pad) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<std::uint32_t>(static_cast<unsigned char>(in[k])); };
  for (; i + 3 <= in.size(); i += 3) {
    std::uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += kWebSafe[(v >> s) & 63];
  }
  std::size_t rest = in.size() - i;
  if (rest) {
    std::uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kWebSafe[(v >> 18) & 63];
    out += kWebSafe[(v >> 12) & 63];
    if (rest == 2) out += kWebSafe[(v >> 6) & 63];
    if (pad) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

std::string decode_base64(const Primitive& op, std::string_view in) {
  while (!in.empty() && in.back() == '=') in.remove_suffix(1);
  if (in.size() % 4 == 1) fail(op.name(), "invalid base64 length " + std::to_string(in.size()));
  std::string out;
  out.reserve(in.size() / 4 * 3 + 2);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
          : c == '-' ? 62 : c == '_' ? 63 : -1;
    if (v < 0) fail(op.name(), "invalid character found in base64 (TF's web-safe alphabet uses - and _)");
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// printf's format for as_string, as TF builds it.
std::string as_string_format(const Primitive& op, const StringFnOptions& o, DType t) {
  std::string f = "%";
  if (!o.fill.empty()) {
    if (o.fill.size() != 1 || std::string_view(" +-0#").find(o.fill[0]) == std::string_view::npos)
      fail(op.name(), "fill '" + o.fill + "' is not supported: one of ' ', '+', '-', '0', '#'");
    f += o.fill;
  }
  if (o.width > -1) f += std::to_string(o.width);
  if (o.precision > -1) {
    if (!is_floating(t)) fail(op.name(), "precision is not supported for dtype " + std::string(name_of(t)));
    f += "." + std::to_string(o.precision);
  }
  if (o.scientific && o.shortest) fail(op.name(), "cannot select both scientific and shortest notation");
  if ((o.scientific || o.shortest) && !is_floating(t))
    fail(op.name(), "scientific and shortest notation are for floating dtypes, got " + std::string(name_of(t)));
  if (is_floating(t)) f += o.shortest ? "g" : o.scientific ? "e" : "f";
  else if (t == DType::bool_) f += "s";
  else f += PRId64;
  return f;
}

template <class... Args>
std::string printf_string(const std::string& format, Args... args) {
  int n = std::snprintf(nullptr, 0, format.c_str(), args...);
  std::string out(static_cast<std::size_t>(std::max(n, 0)), '\0');
  std::snprintf(out.data(), out.size() + 1, format.c_str(), args...);
  return out;
}

const char* const kFnNames[] = {"string_lower",  "string_upper",     "string_strip",     "string_length",
                                "regex_full_match", "regex_replace", "string_to_number", "as_string",
                                "encode_base64", "decode_base64", "string_to_hash_bucket",
                                "string_to_hash_bucket_fast", "string_to_hash_bucket_strong"};

// Inputs broadcast to one shape (each a concrete tensor of it).
std::vector<Tensor> broadcast_inputs(std::span<const Tensor> in, const Shape& shape) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) out.push_back(t.shape() == shape ? t : broadcast_to(t, shape));
  return out;
}

}  // namespace

// ---------------------------------------------------------------- StringMap
StringMap::StringMap(StringFnOptions options) : options_(std::move(options)) {
  if (options_.fn == StringFn::regex_full_match || options_.fn == StringFn::regex_replace) {
    regex_ = detail::compile_regex(name(), options_.pattern);
    if (options_.fn == StringFn::regex_replace) detail::check_rewrite(name(), *regex_, options_.rewrite);
  }
  if (options_.fn == StringFn::to_number && !(options_.out_type == DType::float32 || options_.out_type == DType::float64 ||
                                              options_.out_type == DType::int32 || options_.out_type == DType::int64))
    fail(kWrongType, name(), "out_type must be float32, float64, int32 or int64, got " + std::string(name_of(options_.out_type)));
  bool hash = options_.fn == StringFn::hash_bucket || options_.fn == StringFn::hash_bucket_fast ||
              options_.fn == StringFn::hash_bucket_strong;
  if (hash && options_.num_buckets < 1) fail(name(), "num_buckets must be at least 1, got " + std::to_string(options_.num_buckets));
}

const char* StringMap::name() const { return kFnNames[static_cast<int>(options_.fn)]; }

OpParams StringMap::parameters() const {
  OpParams p;
  switch (options_.fn) {
    case StringFn::length: p.add_flag("utf8", options_.utf8); break;
    case StringFn::regex_full_match: p.add("pattern", options_.pattern); break;
    case StringFn::regex_replace:
      p.add("pattern", options_.pattern).add("rewrite", options_.rewrite).add_flag("global", options_.global);
      break;
    case StringFn::to_number: p.add("out_type", options_.out_type); break;
    case StringFn::as_string:
      p.add("precision", options_.precision).add("width", options_.width).add("fill", options_.fill)
          .add_flag("scientific", options_.scientific).add_flag("shortest", options_.shortest);
      break;
    case StringFn::encode_base64: p.add_flag("pad", options_.pad); break;
    case StringFn::hash_bucket:
    case StringFn::hash_bucket_fast: p.add("num_buckets", options_.num_buckets); break;
    case StringFn::hash_bucket_strong:
      p.add("num_buckets", options_.num_buckets)
          .add("key0", static_cast<std::int64_t>(options_.key0))
          .add("key1", static_cast<std::int64_t>(options_.key1));
      break;
    default: break;
  }
  return p;
}

std::vector<TensorSpec> StringMap::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  DType out = DType::string;
  switch (options_.fn) {
    case StringFn::as_string:
      if (in[0].dtype() == DType::string) fail(kWrongType, name(), "takes numbers or bools, got " + in[0].spec().str());
      if (is_storage_float(in[0].dtype())) fail(kWrongType, name(), "does not take " + in[0].spec().str() + " (cast to float32 first)");
      as_string_format(*this, options_, in[0].dtype());  // its errors now, not at run time
      break;
    case StringFn::length: expect_strings(*this, in[0], "input"); out = DType::int32; break;
    case StringFn::regex_full_match: expect_strings(*this, in[0], "input"); out = DType::bool_; break;
    case StringFn::to_number: expect_strings(*this, in[0], "input"); out = options_.out_type; break;
    case StringFn::hash_bucket:
    case StringFn::hash_bucket_fast:
    case StringFn::hash_bucket_strong: expect_strings(*this, in[0], "input"); out = DType::int64; break;
    default: expect_strings(*this, in[0], "input");
  }
  return {{out, in[0].shape(), {}}};
}

void StringMap::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& shape = specs[0].shape;
  std::size_t n = static_cast<std::size_t>(shape.num_elements());
  const StringFnOptions& o = options_;
  if (o.fn == StringFn::as_string) {
    std::string format = as_string_format(*this, o, in[0].dtype());
    StringTensorBuilder b(n);
    dispatch_dtype(in[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (T v : in[0].data<T>()) {
        if constexpr (std::is_same_v<T, bool>) b.append(printf_string(format, v ? "true" : "false"));
        else if constexpr (std::is_floating_point_v<T>) b.append(printf_string(format, static_cast<double>(v)));
        else b.append(printf_string(format, static_cast<std::int64_t>(v)));
      }
    });
    out[0] = std::move(b).finish(shape);
    return;
  }
  auto xs = in[0].data<std::string_view>();
  switch (o.fn) {
    case StringFn::length: {
      out[0] = Tensor::empty(DType::int32, shape);
      auto d = out[0].mutable_data<std::int32_t>();
      for (std::size_t i = 0; i < n; ++i) {
        std::size_t count = xs[i].size();
        if (o.utf8) count = static_cast<std::size_t>(std::count_if(xs[i].begin(), xs[i].end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
        d[i] = static_cast<std::int32_t>(count);
      }
      return;
    }
    case StringFn::regex_full_match: {
      out[0] = Tensor::empty(DType::bool_, shape);
      auto d = out[0].mutable_data<bool>();
      for (std::size_t i = 0; i < n; ++i) d[i] = detail::regex_full_match(*regex_, xs[i]);
      return;
    }
    case StringFn::hash_bucket:
    case StringFn::hash_bucket_fast:
    case StringFn::hash_bucket_strong: {
      out[0] = Tensor::empty(DType::int64, shape);
      auto d = out[0].mutable_data<std::int64_t>();
      auto buckets = static_cast<std::uint64_t>(o.num_buckets);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t h = o.fn == StringFn::hash_bucket        ? detail::legacy_hash64(xs[i])
                          : o.fn == StringFn::hash_bucket_fast ? detail::fingerprint64(xs[i])
                                                               : detail::siphash24(o.key0, o.key1, xs[i]);
        d[i] = static_cast<std::int64_t>(h % buckets);
      }
      return;
    }
    case StringFn::to_number: {
      out[0] = Tensor::empty(o.out_type, shape);
      dispatch_dtype(o.out_type, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool>) return;
        else {
          auto d = out[0].mutable_data<T>();
          for (std::size_t i = 0; i < n; ++i)
            if (!parse_number(xs[i], d[i]))
              fail(name(), "could not correctly convert string: " + std::string(xs[i]) + " (to " +
                               std::string(name_of(o.out_type)) + ")");
        }
      });
      return;
    }
    default: break;
  }
  StringTensorBuilder b(n);
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    std::string_view x = xs[i];
    switch (o.fn) {
      case StringFn::lower:
      case StringFn::upper:
        s.assign(x);
        for (char& c : s)
          if (o.fn == StringFn::lower ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z')) c = static_cast<char>(c ^ 0x20);
        b.append(s);
        break;
      case StringFn::strip: b.append(trimmed(x)); break;
      case StringFn::regex_replace: b.append(detail::regex_replace(*regex_, x, o.rewrite, o.global)); break;
      case StringFn::encode_base64: b.append(encode_base64(x, o.pad)); break;
      case StringFn::decode_base64: b.append(decode_base64(*this, x)); break;
      default: fail(ErrorCode::internal, name(), "unhandled string function");
    }
  }
  out[0] = std::move(b).finish(shape);
}

// ---------------------------------------------------------------- StringElementwise
const char* StringElementwise::name() const {
  switch (how_) {
    case StringCombine::join: return "string_join";
    case StringCombine::equal: return "string_equal";
    case StringCombine::not_equal: return "string_not_equal";
  }
  return "string_join";
}

OpParams StringElementwise::parameters() const {
  return how_ == StringCombine::join ? OpParams().add("separator", separator_) : OpParams();
}

std::vector<TensorSpec> StringElementwise::infer(std::span<const Tensor> in) const {
  if (how_ == StringCombine::join ? in.empty() : in.size() != 2)
    fail(name(), how_ == StringCombine::join ? "needs at least one input" : "takes two inputs, got " + std::to_string(in.size()));
  for (const Tensor& t : in) expect_strings(*this, t, "every input");
  return {{how_ == StringCombine::join ? DType::string : DType::bool_, broadcast_shapes(*this, in), {}}};
}

void StringElementwise::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& shape = specs[0].shape;
  std::size_t n = static_cast<std::size_t>(shape.num_elements());
  std::vector<Tensor> xs = broadcast_inputs(in, shape);
  if (how_ != StringCombine::join) {
    out[0] = Tensor::empty(DType::bool_, shape);
    auto a = xs[0].data<std::string_view>(), c = xs[1].data<std::string_view>();
    auto d = out[0].mutable_data<bool>();
    for (std::size_t i = 0; i < n; ++i) d[i] = (a[i] == c[i]) == (how_ == StringCombine::equal);
    return;
  }
  StringTensorBuilder b(n);
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    s.clear();
    for (std::size_t k = 0; k < xs.size(); ++k) {
      if (k) s += separator_;
      s += xs[k].data<std::string_view>()[i];
    }
    b.append(s);
  }
  out[0] = std::move(b).finish(shape);
}

// ---------------------------------------------------------------- Substr
OpParams Substr::parameters() const { return OpParams().add_flag("utf8", utf8_); }

std::vector<TensorSpec> Substr::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 3);
  expect_strings(*this, in[0], "input");
  expect_index(*this, in[1], "pos");
  expect_index(*this, in[2], "len");
  return {{DType::string, broadcast_shapes(*this, in), {}}};
}

void Substr::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  const Shape& shape = specs[0].shape;
  std::size_t n = static_cast<std::size_t>(shape.num_elements());
  std::vector<Tensor> xs = broadcast_inputs(in, shape);
  auto strings = xs[0].data<std::string_view>();
  std::vector<std::int64_t> pos = index_values(xs[1]), len = index_values(xs[2]);
  StringTensorBuilder b(n);
  std::vector<std::size_t> starts;  // byte offset of each character (utf8), and the end
  for (std::size_t i = 0; i < n; ++i) {
    std::string_view s = strings[i];
    starts.clear();
    if (utf8_) {
      for (std::size_t k = 0; k < s.size(); k += static_cast<std::size_t>(decode_utf8(s, k).second)) starts.push_back(k);
      starts.push_back(s.size());
    }
    std::int64_t units = utf8_ ? static_cast<std::int64_t>(starts.size()) - 1 : static_cast<std::int64_t>(s.size());
    std::int64_t p = pos[i];
    if (p < -units || p > units)
      fail(name(), "pos " + std::to_string(p) + " out of range for string of length " + std::to_string(units) +
                       " at index " + std::to_string(i));
    if (p < 0) p += units;
    if (len[i] < 0) fail(name(), "len must not be negative, got " + std::to_string(len[i]) + " at index " + std::to_string(i));
    std::int64_t e = p + std::min(len[i], units - p);
    if (utf8_) b.append(s.substr(starts[static_cast<std::size_t>(p)], starts[static_cast<std::size_t>(e)] - starts[static_cast<std::size_t>(p)]));
    else b.append(s.substr(static_cast<std::size_t>(p), static_cast<std::size_t>(e - p)));
  }
  out[0] = std::move(b).finish(shape);
}

// ---------------------------------------------------------------- ReduceJoin
OpParams ReduceJoin::parameters() const {
  return OpParams().add("axes", axes_).add_flag("keepdims", keepdims_).add("separator", separator_);
}

std::vector<TensorSpec> ReduceJoin::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_strings(*this, in[0], "input");
  int r = in[0].rank();
  std::vector<bool> reduced(static_cast<std::size_t>(r), false);
  for (int a : axes_) {
    int k = normalize_axis(a, r, name());
    if (reduced[static_cast<std::size_t>(k)]) fail(name(), "axis " + std::to_string(a) + " is repeated");
    reduced[static_cast<std::size_t>(k)] = true;
  }
  std::vector<std::int64_t> dims;
  for (int d = 0; d < r; ++d)
    if (!reduced[static_cast<std::size_t>(d)]) dims.push_back(in[0].shape()[d]);
    else if (keepdims_) dims.push_back(1);
  return {{DType::string, Shape(std::move(dims)), {}}};
}

void ReduceJoin::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  int r = in[0].rank();
  std::vector<int> kept, reduced;
  std::vector<bool> is_reduced(static_cast<std::size_t>(r), false);
  for (int a : axes_) is_reduced[static_cast<std::size_t>(normalize_axis(a, r, name()))] = true;
  std::int64_t inner = 1;
  for (int d = 0; d < r; ++d) {
    if (is_reduced[static_cast<std::size_t>(d)]) {
      reduced.push_back(d);
      inner *= in[0].shape()[d];
    } else {
      kept.push_back(d);
    }
  }
  std::vector<int> order = kept;
  order.insert(order.end(), reduced.begin(), reduced.end());
  Tensor x = transpose(in[0], order);  // each output's strings are now one contiguous row
  auto xs = x.data<std::string_view>();
  std::size_t rows = static_cast<std::size_t>(specs[0].shape.num_elements());
  StringTensorBuilder b(rows);
  std::string s;
  for (std::size_t i = 0; i < rows; ++i) {
    s.clear();
    for (std::int64_t k = 0; k < inner; ++k) {
      if (k) s += separator_;
      s += xs[i * static_cast<std::size_t>(inner) + static_cast<std::size_t>(k)];
    }
    b.append(s);
  }
  out[0] = std::move(b).finish(specs[0].shape);
}

// ---------------------------------------------------------------- UnsortedSegmentJoin
OpParams UnsortedSegmentJoin::parameters() const {
  return OpParams().add("num_segments", num_segments_).add("separator", separator_);
}

std::vector<TensorSpec> UnsortedSegmentJoin::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_strings(*this, in[0], "inputs");
  expect_index(*this, in[1], "segment_ids");
  if (num_segments_ < 0) fail(name(), "num_segments must not be negative, got " + std::to_string(num_segments_));
  const Shape &x = in[0].shape(), &ids = in[1].shape();
  bool prefix = ids.rank() <= x.rank();
  for (int d = 0; prefix && d < ids.rank(); ++d) prefix = ids[d] == x[d] || ids[d] == kDynamic || x[d] == kDynamic;
  if (!prefix) fail(name(), "segment_ids " + ids.str() + " must be a prefix of the inputs' shape " + x.str());
  std::vector<std::int64_t> dims{num_segments_};
  for (int d = ids.rank(); d < x.rank(); ++d) dims.push_back(x[d]);
  return {{DType::string, Shape(std::move(dims)), {}}};
}

void UnsortedSegmentJoin::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  std::vector<std::int64_t> ids = index_values(in[1]);
  std::size_t inner = 1;
  for (int d = in[1].rank(); d < in[0].rank(); ++d) inner *= static_cast<std::size_t>(in[0].shape()[d]);
  auto xs = in[0].data<std::string_view>();
  std::vector<std::string> joined(static_cast<std::size_t>(num_segments_) * inner);
  std::vector<bool> started(joined.size(), false);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= num_segments_)
      fail(name(), "segment_ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is out of range [0, " +
                       std::to_string(num_segments_) + ")");
    for (std::size_t k = 0; k < inner; ++k) {
      std::size_t o = static_cast<std::size_t>(ids[i]) * inner + k;
      if (started[o]) joined[o] += separator_;
      joined[o] += xs[i * inner + k];
      started[o] = true;
    }
  }
  StringTensorBuilder b(joined.size());
  for (const auto& s : joined) b.append(s);
  out[0] = std::move(b).finish(specs[0].shape);
}

// ---------------------------------------------------------------- StringSplit
const char* StringSplit::name() const {
  switch (pieces_) {
    case StringPieces::separator:
    case StringPieces::whitespace: return "string_split";
    case StringPieces::bytes: return "bytes_split";
    case StringPieces::characters: return "unicode_split";
    case StringPieces::code_points: return "unicode_decode";
  }
  return "string_split";
}

OpParams StringSplit::parameters() const {
  OpParams p;
  if (pieces_ == StringPieces::separator) p.add("separator", separator_);
  if (pieces_ == StringPieces::separator || pieces_ == StringPieces::whitespace) p.add("maxsplit", maxsplit_);
  return p;
}

std::vector<TensorSpec> StringSplit::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_strings(*this, in[0], "input");
  if (in[0].rank() > 1) fail(name(), "takes a scalar or a vector of strings, got " + in[0].spec().str());
  if (pieces_ == StringPieces::separator && separator_.empty()) fail(name(), "the separator must not be empty");
  std::int64_t n = in[0].rank() == 0 ? 1 : in[0].shape()[0];
  DType values = pieces_ == StringPieces::code_points ? DType::int32 : DType::string;
  return {{values, Shape{kDynamic}, {}},
          {DType::int64, Shape{n == kDynamic ? kDynamic : n + 1}, {}},
          {DType::int64, Shape{kDynamic}, {}}};
}

void StringSplit::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  auto xs = in[0].data<std::string_view>();
  std::vector<std::string_view> pieces;  // views into the input: its bytes stay alive meanwhile
  std::vector<std::int32_t> code_points;
  std::vector<std::int64_t> splits{0}, starts;
  auto piece = [&](std::string_view s, std::size_t at, std::size_t n) {
    pieces.push_back(s.substr(at, n));
    starts.push_back(static_cast<std::int64_t>(at));
  };
  for (std::string_view s : xs) {
    std::int64_t splits_left = maxsplit_ < 0 ? std::numeric_limits<std::int64_t>::max() : maxsplit_;
    switch (pieces_) {
      case StringPieces::separator: {
        std::size_t at = 0;
        for (;;) {
          std::size_t hit = splits_left > 0 ? s.find(separator_, at) : std::string_view::npos;
          if (hit == std::string_view::npos) break;
          piece(s, at, hit - at);
          at = hit + separator_.size();
          --splits_left;
        }
        piece(s, at, s.size() - at);
        break;
      }
      case StringPieces::whitespace: {
        std::size_t at = 0;
        while (at < s.size()) {
          while (at < s.size() && is_space(s[at])) ++at;
          if (at == s.size()) break;
          if (splits_left == 0) {  // the rest as it is, trailing whitespace too (Python's str.split(None, maxsplit))
            piece(s, at, s.size() - at);
            break;
          }
          std::size_t end = at;
          while (end < s.size() && !is_space(s[end])) ++end;
          piece(s, at, end - at);
          at = end;
          --splits_left;
        }
        break;
      }
      case StringPieces::bytes:
        for (std::size_t k = 0; k < s.size(); ++k) piece(s, k, 1);
        break;
      case StringPieces::characters:
      case StringPieces::code_points:
        for (std::size_t k = 0; k < s.size();) {
          auto [cp, n] = decode_utf8(s, k);
          if (pieces_ == StringPieces::code_points) {
            code_points.push_back(cp);
            starts.push_back(static_cast<std::int64_t>(k));
          } else if (cp == 0xFFFD && n == 1 && static_cast<unsigned char>(s[k]) >= 0x80) {
            pieces.push_back(kReplacement);  // a malformed byte reads as U+FFFD
            starts.push_back(static_cast<std::int64_t>(k));
          } else {
            piece(s, k, static_cast<std::size_t>(n));
          }
          k += static_cast<std::size_t>(n);
        }
        break;
    }
    splits.push_back(static_cast<std::int64_t>(pieces_ == StringPieces::code_points ? code_points.size() : pieces.size()));
  }
  if (pieces_ == StringPieces::code_points) {
    out[0] = tensor(code_points, Shape{static_cast<std::int64_t>(code_points.size())});
  } else {
    StringTensorBuilder b(pieces.size());
    for (std::string_view p : pieces) b.append(p);
    out[0] = std::move(b).finish(Shape{static_cast<std::int64_t>(pieces.size())});
  }
  out[1] = tensor(splits, Shape{static_cast<std::int64_t>(splits.size())});
  out[2] = tensor(starts, Shape{static_cast<std::int64_t>(starts.size())});
}

// ---------------------------------------------------------------- UnicodeEncode
std::vector<TensorSpec> UnicodeEncode::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  if (in[0].dtype() != DType::int32 && in[0].dtype() != DType::int64)
    fail(kWrongType, name(), "code points must be int32 or int64, got " + in[0].spec().str());
  if (in[1].dtype() != DType::int64 || in[1].rank() != 1 || in[0].rank() != 1)
    fail(name(), "takes code points [n] and int64 row_splits [rows + 1], got " + describe(in));
  std::int64_t k = in[1].shape()[0];
  if (k == 0) fail(name(), "row_splits must have at least one entry");
  return {{DType::string, Shape{k == kDynamic ? kDynamic : k - 1}, {}}};
}

void UnicodeEncode::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  std::vector<std::int64_t> cps = index_values(in[0]), splits = in[1].to_vector<std::int64_t>();
  for (std::size_t i = 0; i + 1 < splits.size(); ++i)
    if (splits[i] > splits[i + 1] || splits.front() != 0 || splits.back() != static_cast<std::int64_t>(cps.size()))
      fail(name(), "row_splits must rise from 0 to the number of code points (" + std::to_string(cps.size()) + ")");
  StringTensorBuilder b(splits.size() - 1);
  std::string s;
  for (std::size_t r = 0; r + 1 < splits.size(); ++r) {
    s.clear();
    for (std::int64_t k = splits[r]; k < splits[r + 1]; ++k) encode_utf8(cps[static_cast<std::size_t>(k)], s);
    b.append(s);
  }
  out[0] = std::move(b).finish(Shape{static_cast<std::int64_t>(splits.size() - 1)});
  (void)specs;
}

// ---------------------------------------------------------------- factories and records
void detail::add_string_factories(detail::OpFactories& f) {
  for (int k = 0; k <= static_cast<int>(StringFn::hash_bucket_strong); ++k) {
    auto fn = static_cast<StringFn>(k);
    f[kFnNames[k]] = [fn](const OpParams& p) {
      StringFnOptions o;
      o.fn = fn;
      o.utf8 = p.flag("utf8");
      o.global = p.flag("global");
      o.pad = p.flag("pad");
      o.scientific = p.flag("scientific");
      o.shortest = p.flag("shortest");
      if (p.has("pattern")) o.pattern = p.text("pattern");
      if (p.has("rewrite")) o.rewrite = p.text("rewrite");
      if (p.has("out_type")) o.out_type = p.dtype("out_type");
      if (p.has("precision")) o.precision = static_cast<int>(p.integer("precision"));
      if (p.has("width")) o.width = static_cast<int>(p.integer("width"));
      if (p.has("fill")) o.fill = p.text("fill");
      if (p.has("num_buckets")) o.num_buckets = p.integer("num_buckets");
      if (p.has("key0")) o.key0 = static_cast<std::uint64_t>(p.integer("key0"));
      if (p.has("key1")) o.key1 = static_cast<std::uint64_t>(p.integer("key1"));
      return std::make_shared<StringMap>(std::move(o));
    };
  }
  f["string_join"] = [](const OpParams& p) { return std::make_shared<StringElementwise>(StringCombine::join, p.text("separator")); };
  f["string_equal"] = [](const OpParams&) { return std::make_shared<StringElementwise>(StringCombine::equal, ""); };
  f["string_not_equal"] = [](const OpParams&) { return std::make_shared<StringElementwise>(StringCombine::not_equal, ""); };
  f["substr"] = [](const OpParams& p) { return std::make_shared<Substr>(p.flag("utf8")); };
  f["reduce_join"] = [](const OpParams& p) {
    return std::make_shared<ReduceJoin>(p.axes("axes"), p.flag("keepdims"), p.text("separator"));
  };
  f["unsorted_segment_join"] = [](const OpParams& p) {
    return std::make_shared<UnsortedSegmentJoin>(p.integer("num_segments"), p.text("separator"));
  };
  f["string_split"] = [](const OpParams& p) {
    bool sep = p.has("separator");
    return std::make_shared<StringSplit>(sep ? StringPieces::separator : StringPieces::whitespace,
                                         sep ? p.text("separator") : "", p.integer("maxsplit"));
  };
  f["bytes_split"] = [](const OpParams&) { return std::make_shared<StringSplit>(StringPieces::bytes, "", -1); };
  f["unicode_split"] = [](const OpParams&) { return std::make_shared<StringSplit>(StringPieces::characters, "", -1); };
  f["unicode_decode"] = [](const OpParams&) { return std::make_shared<StringSplit>(StringPieces::code_points, "", -1); };
  f["unicode_encode"] = [](const OpParams&) { return std::make_shared<UnicodeEncode>(); };
}

void detail::register_string_rules() {
  const std::string no_onnx = "string ops are not exported to ONNX";
  auto elementwise = [&]<class Op>() {
    register_op_rules<Op>({.batching = [](const Op& op, BatchingCall call) { return batching::broadcasting(op, call); },
                           .onnx_unsupported = no_onnx});
  };
  elementwise.template operator()<StringMap>();
  elementwise.template operator()<StringElementwise>();
  elementwise.template operator()<Substr>();
  // Their axes and rows are the example's own.
  register_op_rules<ReduceJoin>({.runs_per_example = true, .onnx_unsupported = no_onnx});
  register_op_rules<UnsortedSegmentJoin>({.runs_per_example = true, .onnx_unsupported = no_onnx});
  register_op_rules<StringSplit>({.runs_per_example = true, .onnx_unsupported = no_onnx});
  register_op_rules<UnicodeEncode>({.runs_per_example = true, .onnx_unsupported = no_onnx});
}

}  // namespace ef
