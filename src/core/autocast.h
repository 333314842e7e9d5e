#pragma once
// The dtype that floating variable reads are cast to on this thread, set while a layer with a
// mixed dtype policy runs call() (Keras' AutocastScope). Internal: layers set it, and
// Variable::value() reads it.
#include <optional>

#include "eagerflow/core/dtype.h"

namespace ef::detail {

inline thread_local std::optional<DType> autocast_dtype;

class AutocastScope {
 public:
  explicit AutocastScope(std::optional<DType> dtype) : saved_(autocast_dtype) { autocast_dtype = dtype; }
  ~AutocastScope() { autocast_dtype = saved_; }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  std::optional<DType> saved_;
};

}  // namespace ef::detail
