#pragma once
// Checked ops: identities that fail with an ef::Error when their input is invalid. They are
// ops, not host-side scans, so a traced train step checks every batch it replays.
#include <cstdint>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

// x itself, or an ef::Error "[<message>] found NaN (or Inf) at position i of float32[...]",
// as TF's tf.debugging.check_numerics. Floating x only.
Tensor check_numerics(const Tensor& x, const std::string& message);

// TF's tf.debugging.Assert: fails with an INVALID_ARGUMENT ef::Error naming `message` and the
// first `summarize` values of each of `data` when any element of `condition` (bool) is false.
// An effect: inside ef::function it runs on every call, in the order it was traced.
void assert_that(const Tensor& condition, const std::vector<Tensor>& data, const std::string& message = "",
                 std::int64_t summarize = 3);

// Class labels as int64 indices, checked against [0, num_classes): integer labels as they are,
// floating labels only when they hold whole numbers (NaN, Inf and 1.5 are errors, never a
// silent class 0 or 1). The error names `who` (the loss or metric), the label, its position
// and the class count, as TF: "Received a label value of 7 which is outside the valid range
// of [0, 3)".
Tensor class_indices(const Tensor& labels, std::int64_t num_classes, const std::string& who);

}  // namespace ef
