#include "eagerflow/nn/dtype_policy.h"

#include <mutex>

#include "eagerflow/core/error.h"

namespace ef::nn {

DTypePolicy::DTypePolicy(const std::string& name) : name_(name) {
  if (name == "mixed_bfloat16") {
    compute_ = DType::bfloat16;
    variable_ = DType::float32;
    return;
  }
  // float16 compute with float32 variables: compile wraps the optimizer in a
  // LossScaleOptimizer, as Keras does, so that small gradients do not flush to zero.
  if (name == "mixed_float16") {
    compute_ = DType::float16;
    variable_ = DType::float32;
    return;
  }
  auto t = dtype_named(name);
  if (!t || !is_floating(*t) || name != name_of(*t))
    fail("dtype_policy", "unknown policy '" + name + "' (expected 'float32', 'float64', 'float16', 'bfloat16', 'mixed_float16' or 'mixed_bfloat16')");
  compute_ = variable_ = *t;
}

namespace {
std::mutex& policy_mutex() {
  static std::mutex m;
  return m;
}
DTypePolicy& global() {
  static DTypePolicy p("float32");
  return p;
}
}  // namespace

void set_global_policy(const DTypePolicy& policy) {
  std::lock_guard lock(policy_mutex());
  global() = policy;
}

DTypePolicy global_policy() {
  std::lock_guard lock(policy_mutex());
  return global();
}

}  // namespace ef::nn
