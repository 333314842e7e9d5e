#include "eagerflow/ops/device_kernels.h"

#include <map>
#include <shared_mutex>

#include "eagerflow/core/error.h"
#include "eagerflow/core/tensor.h"

namespace ef {
namespace {

// Read on every op of a non-CPU program, written when a backend registers: a shared lock.
class KernelTable {
 public:
  void add(std::type_index op, Device d, Kernel k) {
    std::unique_lock lock(mutex_);
    kernels_[{op, d}] = std::make_shared<const Kernel>(std::move(k));
  }
  std::shared_ptr<const Kernel> find(std::type_index op, Device d) const {
    std::shared_lock lock(mutex_);
    auto it = kernels_.find({op, d});
    return it == kernels_.end() ? nullptr : it->second;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::pair<std::type_index, Device>, std::shared_ptr<const Kernel>> kernels_;
};
KernelTable& table() {
  static auto* t = new KernelTable;  // never destroyed: kernels may run from static destructors
  return *t;
}

}  // namespace

void register_kernel(std::type_index op_class, Device device, Kernel kernel) {
  if (device == Device::cpu) fail("register_kernel", "an op's CPU kernel is its class's eval; register kernels of other devices");
  if (!kernel) fail("register_kernel", "the kernel is empty");
  table().add(op_class, device, std::move(kernel));
}

bool has_kernel(const Primitive& op, Device device) {
  return device == Device::cpu || table().find(std::type_index(typeid(op)), device) != nullptr;
}


namespace detail {

void run_kernel(const Primitive& op, Device device, std::span<const Tensor> inputs, std::span<const TensorSpec> specs,
                std::span<Tensor> outputs) {
  if (device == Device::cpu) return op.eval(inputs, specs, outputs);
  std::shared_ptr<const Kernel> k = table().find(std::type_index(typeid(op)), device);
  if (!k)
    fail(ErrorCode::unimplemented, op.name(), "has no kernel on device '" + device_name(device) + "' (op class " + primitive_type(op) +
                        "; a backend registers one with ef::register_kernel)");
  (*k)(op, inputs, specs, outputs);
  // New results live on the device; a view of a CPU input stays the input's.
  for (Tensor& t : outputs) {
    if (!t.defined() || !t.impl().storage) continue;
    bool aliases_input = false;
    for (const Tensor& in : inputs) aliases_input |= in.defined() && in.impl().storage == t.impl().storage;
    if (!aliases_input) t.impl().storage->device = device;
  }
}

Device device_of_inputs(const Primitive& op, std::span<const Tensor> inputs) {
  if (std::optional<Device> scoped = scoped_device()) return *scoped;
  Device found = Device::cpu;
  for (const Tensor& t : inputs) {
    if (!t.defined() || !t.impl().storage) continue;
    Device d = t.impl().storage->device;
    if (d == Device::cpu || d == found) continue;
    if (found != Device::cpu)
      fail(op.name(), "has inputs on two devices, '" + device_name(found) + "' and '" + device_name(d) +
                          "'; move them to one with ef::to_device");
    found = d;
  }
  return found;
}

}  // namespace detail
}  // namespace ef
