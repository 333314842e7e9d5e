#pragma once
// Argument checks and small helpers the ef::linalg compositions share (src/ops/linalg_extra.cpp,
// src/function/linalg_expm.cpp).
#include <string>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/linalg.h"
#include "eagerflow/ops/ops.h"

namespace ef::linalg::detail {

inline void expect_float(const Tensor& a, const char* op, const char* what, int min_rank) {
  if (!a.defined()) fail(op, std::string("got an undefined ") + what);
  if (a.dtype() != DType::float32 && a.dtype() != DType::float64)
    fail(kWrongType, op, std::string("takes float32 or float64 ") + what + ", got " + a.spec().str());
  if (a.rank() < min_rank)
    fail(op, std::string(what) + " must have rank >= " + std::to_string(min_rank) + ", got " + a.spec().str());
}

inline std::int64_t known_dim(const Tensor& a, int axis, const char* op) {
  std::int64_t d = a.shape()[axis < 0 ? a.rank() + axis : axis];
  if (d == kDynamic) fail(ErrorCode::unimplemented, op, "needs known matrix dims, got " + a.spec().str());
  return d;
}

inline Tensor eye_like(const Tensor& a) { return diag(ones_like(diag_part(a))); }

}  // namespace ef::linalg::detail
