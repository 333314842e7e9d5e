#pragma once
// Ops that only move elements copy them as unsigned words of the element's size, so one
// instantiation serves every dtype of that size (bfloat16 and float16, int32 and float32,
// string elements as 16-byte views).
#include <cstdint>

#include "eagerflow/core/dtype.h"
#include "eagerflow/core/error.h"

namespace ef::detail {

struct Bytes16 {
  std::uint64_t lo, hi;
};

template <class Fn>
decltype(auto) dispatch_element_bytes(DType t, Fn&& fn) {
  switch (size_of(t)) {
    case 1: return fn(std::uint8_t{});
    case 2: return fn(std::uint16_t{});
    case 4: return fn(std::uint32_t{});
    case 8: return fn(std::uint64_t{});
    case 16: return fn(Bytes16{});
  }
  fail(ErrorCode::internal, "copy", "no element copy for dtype " + std::string(name_of(t)));
}

}  // namespace ef::detail
