#pragma once
// Host calls: a function of the host program (the Python callable of tf.py_function or
// tf.numpy_function, a C++ lambda) run as an op. Eagerly it runs at once; inside ef::function the
// trace records the call, not what the function does, and every run of the graph calls it again,
// with the values of that run. Include this header on its own (not part of eagerflow.h).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef {

struct HostFunction {
  std::string name;  // names the op in graphs and errors ("py_function:my_fn")
  // Called with concrete tensors; returns one tensor per declared output.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> fn;
  // The outputs' dtypes and shapes (kDynamic for a dim known only when it runs): a result of
  // another dtype, rank or size is an INVALID_ARGUMENT error naming the function.
  std::vector<TensorSpec> outputs;
  // The inputs' cotangents from (inputs, output cotangents), or empty: not differentiable.
  // Undefined results are zeros.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&, const std::vector<Tensor>&)> vjp;
};

std::vector<Tensor> host_call(std::shared_ptr<const HostFunction> f, const std::vector<Tensor>& inputs);

}  // namespace ef
