#include "eagerflow/nn/basic_layers.h"

#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"

namespace ef::nn {

Tensor Reshape::call(const Tensor& inputs) {
  if (inputs.rank() < 1) fail(name(), "expects inputs with a batch axis, got " + inputs.spec().str());
  std::int64_t have = 1;  // values per example
  for (int a = 1; a < inputs.rank(); ++a) {
    if (inputs.shape()[a] == kDynamic) fail(name(), "needs the non-batch dims to be known, got " + inputs.spec().str());
    if (__builtin_mul_overflow(have, inputs.shape()[a], &have)) fail(name(), "input " + inputs.spec().str() + " has too many values per example");
  }
  std::vector<std::int64_t> dims{-1};  // the batch, whatever it is
  int unknown = -1;
  std::int64_t known = 1;
  for (int a = 0; a < target_.rank(); ++a) {
    std::int64_t d = target_[a];
    if (d == -1 && unknown < 0) unknown = a;
    else if (d < 0) fail(name(), "target shape " + target_.str() + " may hold one -1 and no other negative dim");
    else if (__builtin_mul_overflow(known, d, &known))
      fail(name(), "target shape " + target_.str() + " holds more values than int64 can count");
    dims.push_back(d);
  }
  if (unknown >= 0) {  // Keras: one -1 takes what is left
    if (known == 0 || have % known != 0)
      fail(name(), "cannot reshape " + inputs.spec().str() + " to " + target_.str() + " per example");
    dims[static_cast<std::size_t>(unknown) + 1] = have / known;
  } else if (known != have) {
    fail(name(), "cannot reshape " + inputs.spec().str() + " to " + target_.str() + " per example: " +
                     std::to_string(have) + " values, the target holds " + std::to_string(known));
  }
  return reshape(inputs, Shape(std::move(dims)));
}

Tensor Flatten::call(const Tensor& inputs) {
  if (inputs.rank() < 1) fail(name(), "expects inputs with a batch axis, got " + inputs.spec().str());
  if (inputs.rank() == 1) return expand_dims(inputs, 1);
  std::int64_t features = 1;
  for (int a = 1; a < inputs.rank(); ++a) {
    std::int64_t d = inputs.shape()[a];
    if (d == kDynamic) fail(name(), "needs the non-batch dims to be known, got " + inputs.spec().str());
    if (__builtin_mul_overflow(features, d, &features)) fail(name(), "input " + inputs.spec().str() + " has too many values per example");
  }
  return reshape(inputs, {-1, features});
}

}  // namespace ef::nn
