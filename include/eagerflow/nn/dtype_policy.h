#pragma once
// Keras' dtype policies (keras.DTypePolicy, keras.mixed_precision.set_global_policy):
//   "float32"         variables and computation in float32 (the default)
//   "float64"         both in float64
//   "bfloat16"        both in bfloat16
//   "mixed_bfloat16"  variables float32, computation bfloat16: a layer casts its floating
//                     inputs to bfloat16 and reads its variables as bfloat16 inside call()
//                     (autocast), so its outputs are bfloat16; gradients arrive float32 at the
//                     variables (the gradient of a cast is the cast back); optimizer state and
//                     saved weights stay float32; losses compute in float32.
// A layer takes the global policy when it is constructed; set_dtype_policy overrides it
// (Keras' dtype= argument), e.g. the last softmax in float32. bfloat16 is a storage dtype on
// this CPU family: ops convert to float32 at their boundary (docs/mixed_precision.md).
#include <string>

#include "eagerflow/core/dtype.h"

namespace ef::nn {

class DTypePolicy {
 public:
  // A policy name as above, or a dtype name ("float32"); anything else is an ef::Error.
  DTypePolicy(const std::string& name = "float32");  // NOLINT: a name converts, as in Keras
  DTypePolicy(const char* name) : DTypePolicy(std::string(name)) {}  // NOLINT
  const std::string& name() const { return name_; }
  DType compute_dtype() const { return compute_; }
  DType variable_dtype() const { return variable_; }
  // Variables differ from computation (the layer autocasts).
  bool is_mixed() const { return compute_ != variable_; }
  bool operator==(const DTypePolicy& o) const { return name_ == o.name_; }

 private:
  std::string name_;
  DType compute_ = DType::float32, variable_ = DType::float32;
};

// The policy new layers take (thread-safe; Keras' keras.config.set_dtype_policy).
void set_global_policy(const DTypePolicy& policy);
DTypePolicy global_policy();

}  // namespace ef::nn
