// ef::strings: each function is one op of src/ops/string_ops.h.
#include "eagerflow/ops/strings.h"

#include "ops/string_ops.h"

namespace ef::strings {

namespace {

Tensor map(const Tensor& input, StringFnOptions o) { return dispatch1(StringMap(std::move(o)), {input}); }

StringFnOptions fn(StringFn f) {
  StringFnOptions o;
  o.fn = f;
  return o;
}

Pieces pieces(const Tensor& input, StringPieces kind, std::string separator, std::int64_t maxsplit) {
  std::vector<Tensor> out = dispatch(StringSplit(kind, std::move(separator), maxsplit), std::vector<Tensor>{input});
  return {out[0], out[1], out[2]};
}

}  // namespace

Tensor length(const Tensor& input, Unit unit) {
  StringFnOptions o = fn(StringFn::length);
  o.utf8 = unit == Unit::utf8_char;
  return map(input, std::move(o));
}
Tensor lower(const Tensor& input) { return map(input, fn(StringFn::lower)); }
Tensor upper(const Tensor& input) { return map(input, fn(StringFn::upper)); }
Tensor strip(const Tensor& input) { return map(input, fn(StringFn::strip)); }

Tensor regex_full_match(const Tensor& input, const std::string& pattern) {
  StringFnOptions o = fn(StringFn::regex_full_match);
  o.pattern = pattern;
  return map(input, std::move(o));
}

Tensor regex_replace(const Tensor& input, const std::string& pattern, const std::string& rewrite, bool replace_global) {
  StringFnOptions o = fn(StringFn::regex_replace);
  o.pattern = pattern;
  o.rewrite = rewrite;
  o.global = replace_global;
  return map(input, std::move(o));
}

Tensor to_number(const Tensor& input, DType out_type) {
  StringFnOptions o = fn(StringFn::to_number);
  o.out_type = out_type;
  return map(input, std::move(o));
}

Tensor as_string(const Tensor& input, const AsStringOptions& options) {
  StringFnOptions o = fn(StringFn::as_string);
  o.precision = options.precision;
  o.scientific = options.scientific;
  o.shortest = options.shortest;
  o.width = options.width;
  o.fill = options.fill;
  return map(input, std::move(o));
}

Tensor join(const std::vector<Tensor>& inputs, const std::string& separator) {
  return dispatch1(StringElementwise(StringCombine::join, separator), std::span<const Tensor>(inputs));
}
Tensor equal(const Tensor& x, const Tensor& y) { return dispatch1(StringElementwise(StringCombine::equal, ""), {x, y}); }
Tensor not_equal(const Tensor& x, const Tensor& y) {
  return dispatch1(StringElementwise(StringCombine::not_equal, ""), {x, y});
}

Tensor substr(const Tensor& input, const Tensor& pos, const Tensor& len, Unit unit) {
  return dispatch1(Substr(unit == Unit::utf8_char), {input, pos, len});
}

Tensor reduce_join(const Tensor& input, std::optional<std::vector<int>> axes, bool keepdims, const std::string& separator) {
  std::vector<int> all;
  if (!axes)
    for (int a = 0; a < input.rank(); ++a) all.push_back(a);
  return dispatch1(ReduceJoin(axes ? *axes : all, keepdims, separator), {input});
}

Tensor unsorted_segment_join(const Tensor& inputs, const Tensor& segment_ids, std::int64_t num_segments,
                             const std::string& separator) {
  return dispatch1(UnsortedSegmentJoin(num_segments, separator), {inputs, segment_ids});
}

Pieces split(const Tensor& input, std::optional<std::string> separator, std::int64_t maxsplit) {
  if (separator && separator->empty()) separator.reset();  // TF: an empty sep splits on whitespace
  return pieces(input, separator ? StringPieces::separator : StringPieces::whitespace, separator.value_or(""), maxsplit);
}
Pieces bytes_split(const Tensor& input) { return pieces(input, StringPieces::bytes, "", -1); }
Pieces unicode_split(const Tensor& input) { return pieces(input, StringPieces::characters, "", -1); }
Pieces unicode_decode(const Tensor& input) { return pieces(input, StringPieces::code_points, "", -1); }

Tensor unicode_encode(const Tensor& code_points, const Tensor& row_splits) {
  return dispatch1(UnicodeEncode(), {code_points, row_splits});
}

Tensor to_hash_bucket(const Tensor& input, std::int64_t num_buckets) {
  StringFnOptions o = fn(StringFn::hash_bucket);
  o.num_buckets = num_buckets;
  return map(input, std::move(o));
}
Tensor to_hash_bucket_fast(const Tensor& input, std::int64_t num_buckets) {
  StringFnOptions o = fn(StringFn::hash_bucket_fast);
  o.num_buckets = num_buckets;
  return map(input, std::move(o));
}
Tensor to_hash_bucket_strong(const Tensor& input, std::int64_t num_buckets, std::uint64_t key0, std::uint64_t key1) {
  StringFnOptions o = fn(StringFn::hash_bucket_strong);
  o.num_buckets = num_buckets;
  o.key0 = key0;
  o.key1 = key1;
  return map(input, std::move(o));
}

Tensor encode_base64(const Tensor& input, bool pad) {
  StringFnOptions o = fn(StringFn::encode_base64);
  o.pad = pad;
  return map(input, std::move(o));
}
Tensor decode_base64(const Tensor& input) { return map(input, fn(StringFn::decode_base64)); }

}  // namespace ef::strings
