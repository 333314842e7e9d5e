#pragma once
// Kernels keyed by device. An op's CPU kernel is its class's eval (eagerflow/ops/primitive.h);
// another device's kernel for an op class is registered here, by the backend, not by the op:
//   ef::register_kernel<ef::MatMul>(gpu, [](const Primitive& op, auto in, auto specs, auto out) {...});
// Dispatch (eager) and replay (traced functions) run an op on the device of its inputs
// (eagerflow/core/device.h); an op without a kernel there is an ef::Error naming both.
#include <functional>
#include <span>
#include <typeindex>
#include <vector>

#include "eagerflow/core/device.h"
#include "eagerflow/ops/primitive.h"

namespace ef {

// Fills `outputs` (sized like `specs`) from `inputs`, as Primitive::eval does.
using Kernel = std::function<void(const Primitive& op, std::span<const Tensor> inputs,
                                  std::span<const TensorSpec> specs, std::span<Tensor> outputs)>;

// Registers (or replaces) the kernel of one op class on a device other than the CPU.
void register_kernel(std::type_index op_class, Device device, Kernel kernel);
template <class Op>
void register_kernel(Device device, Kernel kernel) {
  register_kernel(std::type_index(typeid(Op)), device, std::move(kernel));
}
// Whether `op` can run on `device` (the CPU runs every op).
bool has_kernel(const Primitive& op, Device device);

namespace detail {
// Runs op on device: the CPU's eval, or the device's registered kernel. New outputs are
// marked as on the device.
void run_kernel(const Primitive& op, Device device, std::span<const Tensor> inputs, std::span<const TensorSpec> specs,
                std::span<Tensor> outputs);
// The device an op with these inputs runs on: the innermost DeviceScope's (as tf.device places
// ops), else the one non-CPU device among the inputs (CPU tensors are read in place), else
// the CPU. Two different non-CPU devices are an error naming the op.
Device device_of_inputs(const Primitive& op, std::span<const Tensor> inputs);
}  // namespace detail

}  // namespace ef
