#pragma once
// Parsing tf.train.Example / SequenceExample protos (TF's tf.io.parse_*example) in C++: an op
// (src/io/example_ops.cpp) with the features to read as its parameters, so that it traces and
// replays inside Dataset.map graphs.
#include <cstdint>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::io {

struct ExampleFeature {
  enum class Kind : int {
    fixed = 0,           // FixedLenFeature: exactly prod(shape) values -> dense [*shape]
    var_len = 1,         // VarLenFeature: any count -> sparse (indices, values, dense_shape)
    fixed_sequence = 2,  // FixedLenSequenceFeature: steps of prod(shape) values -> dense [T, *shape], lengths
    var_len_sequence = 3,  // VarLenFeature in a SequenceExample's feature_lists -> sparse [T, n]
  };
  std::string key;
  Kind kind = Kind::fixed;
  DType dtype = DType::float32;  // float32, int64 or string
  std::vector<std::int64_t> shape;  // fixed, fixed_sequence: the shape of one value (one step)
  bool has_default = false;      // fixed, fixed_sequence: a default tensor follows among the inputs
  bool allow_missing = false;    // fixed_sequence in a SequenceExample: a missing list is empty
};

// serialized: string scalar (one proto) or [B]. sequence: SequenceExample protos, whose
// fixed/var_len features are read from the context and *_sequence ones from feature_lists;
// otherwise Example protos. defaults: one per feature with has_default, in order, each of the
// feature's dtype and shape (or a scalar, broadcast).
// Outputs, feature by feature: fixed: dense; var_len and var_len_sequence: indices int64 [N, r],
// values [N], dense_shape int64 [r]; fixed_sequence: dense, lengths int64 ([] or [B]).
std::vector<Tensor> parse_example(const Tensor& serialized, const std::vector<ExampleFeature>& features,
                                  const std::vector<Tensor>& defaults, bool sequence);

// The bytes of each string as numbers of out_type, a new last axis (TF's decode_raw): all of one
// length, or each cut / zero-padded to fixed_length bytes when it is >= 0.
Tensor decode_raw(const Tensor& input_bytes, DType out_type, bool little_endian = true, std::int64_t fixed_length = -1);

}  // namespace ef::io
