#pragma once
// TF's tf.io.read_file / write_file as ops (src/ops/file_ops.cpp): inside ef::function they read
// and write at every call, not once at trace time.
#include "eagerflow/core/tensor.h"

namespace ef::io {

// The whole file as a string scalar. A missing file is a NOT_FOUND error.
Tensor read_file(const Tensor& filename);
// Writes `contents` (a string scalar) to the file atomically: a reader sees the old file or the
// new one, never part of it.
void write_file(const Tensor& filename, const Tensor& contents);

}  // namespace ef::io
