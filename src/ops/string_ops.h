#pragma once
// The string ops of ef::strings (eagerflow/ops/strings.h) as op classes (src/ops/string_ops.cpp):
// they trace, replay and batch like any op; none is differentiable (TF's are not either).
#include <memory>
#include <string>

#include "eagerflow/ops/primitive.h"

namespace ef {

namespace detail {
struct CompiledRegex;  // RE2, compiled once per op (src/ops/string_regex.cpp)
}

// Element-by-element functions of one tensor, each with its parameters.
enum class StringFn : std::uint8_t {
  lower, upper, strip,     // ASCII, as TF's default encoding=''
  length,                  // int32: bytes, or UTF-8 characters when `utf8`
  regex_full_match,        // bool
  regex_replace,           // the first match or all (`global`) replaced by `rewrite` (\1 groups)
  to_number,               // to `out_type`; an INVALID_ARGUMENT error for text that is not a number
  as_string,               // numbers and bools to text, printf-style
  encode_base64, decode_base64,  // web-safe alphabet (- and _), as TF's; `pad` adds '='
  hash_bucket, hash_bucket_fast, hash_bucket_strong,  // int64 in [0, num_buckets), TF's hashes
};

struct StringFnOptions {
  StringFn fn = StringFn::lower;
  std::string pattern, rewrite;  // regex_*
  bool global = true;            // regex_replace: every match
  bool utf8 = false;             // length: count UTF-8 characters
  bool pad = false;              // encode_base64
  DType out_type = DType::float32;  // to_number
  // as_string: digits after the point (-1: printf's default), scientific (%e), shortest (%g),
  // a minimum width, and its fill ("" or "0").
  int precision = -1, width = -1;
  bool scientific = false, shortest = false;
  std::string fill;
  std::int64_t num_buckets = 1;       // hash_bucket*
  std::uint64_t key0 = 0, key1 = 0;   // hash_bucket_strong's SipHash key
};

class StringMap : public MergeablePrimitive<StringMap> {
 public:
  explicit StringMap(StringFnOptions options);
  const char* name() const override;
  OpParams parameters() const override;
  const StringFnOptions& options() const { return options_; }
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;

 private:
  StringFnOptions options_;
  std::shared_ptr<const detail::CompiledRegex> regex_;
};

// Element-by-element over broadcast string inputs: join (with a separator), equal, not_equal.
enum class StringCombine : std::uint8_t { join, equal, not_equal };

class StringElementwise : public MergeablePrimitive<StringElementwise> {
 public:
  StringElementwise(StringCombine how, std::string separator) : how_(how), separator_(std::move(separator)) {}
  const char* name() const override;
  OpParams parameters() const override;
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;

 private:
  StringCombine how_;
  std::string separator_;
};

// (input, pos, len) broadcast -> substrings; positions count bytes or UTF-8 characters.
class Substr : public MergeablePrimitive<Substr> {
 public:
  explicit Substr(bool utf8) : utf8_(utf8) {}
  const char* name() const override { return "substr"; }
  OpParams parameters() const override;
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;

 private:
  bool utf8_;
};

// Joins the strings along `axes` (all when empty) with a separator; keepdims keeps them as 1.
class ReduceJoin : public MergeablePrimitive<ReduceJoin> {
 public:
  ReduceJoin(std::vector<int> axes, bool keepdims, std::string separator)
      : axes_(std::move(axes)), keepdims_(keepdims), separator_(std::move(separator)) {}
  const char* name() const override { return "reduce_join"; }
  OpParams parameters() const override;
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;

 private:
  std::vector<int> axes_;
  bool keepdims_;
  std::string separator_;
};

// (strings [n, ...], segment_ids [n] int32/int64) -> [num_segments, ...]: each segment's strings
// joined in order; an empty segment is "".
class UnsortedSegmentJoin : public MergeablePrimitive<UnsortedSegmentJoin> {
 public:
  UnsortedSegmentJoin(std::int64_t num_segments, std::string separator)
      : num_segments_(num_segments), separator_(std::move(separator)) {}
  const char* name() const override { return "unsorted_segment_join"; }
  OpParams parameters() const override;
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;

 private:
  std::int64_t num_segments_;
  std::string separator_;
};

// A vector (or scalar) of strings -> the pieces of each, as ragged rows: (values [?],
// row_splits int64 [n + 1], starts int64 [?]: each piece's byte offset in its string).
enum class StringPieces : std::uint8_t {
  separator,   // split on `separator`; empty pieces kept (TF's sep given)
  whitespace,  // split on runs of ASCII whitespace; no empty pieces (TF's sep=None)
  bytes,       // one piece per byte
  characters,  // one piece per UTF-8 character
  code_points, // int32 values: each UTF-8 character's code point (invalid bytes: U+FFFD)
};

class StringSplit : public MergeablePrimitive<StringSplit> {
 public:
  StringSplit(StringPieces pieces, std::string separator, std::int64_t maxsplit)
      : pieces_(pieces), separator_(std::move(separator)), maxsplit_(maxsplit) {}
  const char* name() const override;
  OpParams parameters() const override;
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;

 private:
  StringPieces pieces_;
  std::string separator_;
  std::int64_t maxsplit_;  // -1: no limit
};

// (code points int32 [?], row_splits int64 [n + 1]) -> n UTF-8 strings (invalid code points: U+FFFD).
class UnicodeEncode : public MergeablePrimitive<UnicodeEncode> {
 public:
  const char* name() const override { return "unicode_encode"; }
  bool takes_strings() const override { return true; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
};

}  // namespace ef
