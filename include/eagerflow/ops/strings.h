#pragma once
// TF's tf.strings (and the base64 functions of tf.io) on string tensors (DType::string,
// eagerflow/core/string_tensor.h). Each is an op: it traces, replays and batches; none is
// differentiable. Results that are ragged in TF (split, unicode_decode) come as their flat
// values and row_splits, which ef.RaggedTensor wraps in Python.
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/core/tensor.h"

namespace ef::strings {

// The TF unit of length and substr: bytes, or UTF-8 characters.
enum class Unit : std::uint8_t { byte, utf8_char };

Tensor length(const Tensor& input, Unit unit = Unit::byte);                 // int32
Tensor lower(const Tensor& input);                                          // ASCII letters
Tensor upper(const Tensor& input);
Tensor strip(const Tensor& input);                                          // surrounding ASCII whitespace
Tensor regex_full_match(const Tensor& input, const std::string& pattern);   // bool; RE2 syntax
Tensor regex_replace(const Tensor& input, const std::string& pattern, const std::string& rewrite,
                     bool replace_global = true);
// Text to numbers (float32, float64, int32, int64); text that is not one is an INVALID_ARGUMENT error.
Tensor to_number(const Tensor& input, DType out_type = DType::float32);

struct AsStringOptions {
  int precision = -1;  // digits after the point (-1: six, printf's default)
  bool scientific = false, shortest = false;
  int width = -1;
  std::string fill;  // "" or one of " +-0#"
};
Tensor as_string(const Tensor& input, const AsStringOptions& options = {});

// Element by element over broadcast inputs.
Tensor join(const std::vector<Tensor>& inputs, const std::string& separator = "");
Tensor equal(const Tensor& x, const Tensor& y);      // bool
Tensor not_equal(const Tensor& x, const Tensor& y);  // bool
// Negative pos counts from the end; len is clipped to the string's end.
Tensor substr(const Tensor& input, const Tensor& pos, const Tensor& len, Unit unit = Unit::byte);

// Joins along `axes` (every axis when nullopt) with `separator`.
Tensor reduce_join(const Tensor& input, std::optional<std::vector<int>> axes = std::nullopt, bool keepdims = false,
                   const std::string& separator = "");
Tensor unsorted_segment_join(const Tensor& inputs, const Tensor& segment_ids, std::int64_t num_segments,
                             const std::string& separator = "");

// Ragged results of a scalar or vector input: values, row_splits (int64, one row per string)
// and each value's byte offset in its string.
struct Pieces {
  Tensor values, row_splits, starts;
};
// On `separator` (empty pieces kept), or on runs of whitespace when it is nullopt (as Python's
// str.split). maxsplit -1: no limit.
Pieces split(const Tensor& input, std::optional<std::string> separator = std::nullopt, std::int64_t maxsplit = -1);
Pieces bytes_split(const Tensor& input);
Pieces unicode_split(const Tensor& input);   // UTF-8 characters (malformed bytes: U+FFFD)
Pieces unicode_decode(const Tensor& input);  // int32 code points
// Code points in rows (row_splits int64) to UTF-8 strings; invalid code points become U+FFFD.
Tensor unicode_encode(const Tensor& code_points, const Tensor& row_splits);

// Hash buckets as TF computes them: to_hash_bucket (TF's legacy Hash64), _fast (FarmHash
// Fingerprint64, what Keras' Hashing layer uses), _strong (SipHash-2-4 keyed by key[0], key[1]).
Tensor to_hash_bucket(const Tensor& input, std::int64_t num_buckets);
Tensor to_hash_bucket_fast(const Tensor& input, std::int64_t num_buckets);
Tensor to_hash_bucket_strong(const Tensor& input, std::int64_t num_buckets, std::uint64_t key0, std::uint64_t key1);

// TF's web-safe base64 (tf.io.encode_base64 / decode_base64).
Tensor encode_base64(const Tensor& input, bool pad = false);
Tensor decode_base64(const Tensor& input);

}  // namespace ef::strings
