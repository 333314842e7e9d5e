#pragma once
// Devices: where a tensor's storage lives, and so whose kernels run the ops that read it.
// Only the CPU is built in; a backend adds a device by name and registers its kernels by op
// class (eagerflow/ops/device_kernels.h) without touching any op: a test's reference backend
// of plain loops does so today, a GPU would tomorrow.
#include <cstdint>
#include <optional>
#include <string>

namespace ef {

class Tensor;

enum class Device : std::uint8_t { cpu = 0 };

// A new device (its id), or the existing one of that name. Its tensors are host memory (a
// device with memory of its own needs allocators and copies, not built yet), so its kernels
// read CPU tensors in place (captured weights, constants) and to_device copies with memcpy.
Device register_device(const std::string& name);
// "cpu", or the registered name.
std::string device_name(Device device);
// The device of that name; ef::Error (not found) when none is registered.
Device device_named(const std::string& name);

// tf.device: while the scope is active on this thread, the ops it runs run on this device
// (inputs on another device are read in place: every device is host memory for now).
// Without a scope, an op runs where its inputs are.
class DeviceScope {
 public:
  explicit DeviceScope(Device device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::uint8_t saved_;
};
// The innermost DeviceScope's device on this thread; cpu without one.
Device current_device();

// A copy of `t` on `device` (t itself when it is there already).
Tensor to_device(const Tensor& t, Device device);

namespace detail {
// True once a device other than the CPU holds a tensor or a scope: until then dispatch skips
// every device check (the CPU-only program pays one load per op).
bool devices_in_use();
// The innermost DeviceScope's device, or none.
std::optional<Device> scoped_device();
}  // namespace detail

}  // namespace ef
