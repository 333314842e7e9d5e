#include "eagerflow/core/device.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/core/tensor.h"

namespace ef {
namespace {

std::atomic<bool> g_in_use{false};
// 0: no scope; otherwise the scope's device id + 1.
thread_local std::uint8_t t_scope = 0;

class Registry {
 public:
  Device add(const std::string& name) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<Device>(i);
    if (names_.size() >= 255) fail(ErrorCode::resource_exhausted, "device", "too many devices registered (255)");
    names_.push_back(name);
    return static_cast<Device>(names_.size() - 1);
  }
  std::string name(Device d) {
    std::lock_guard lock(mutex_);
    auto i = static_cast<std::size_t>(d);
    return i < names_.size() ? names_[i] : "device#" + std::to_string(i);
  }
  std::optional<Device> find(const std::string& name) {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<Device>(i);
    return std::nullopt;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> names_{"cpu"};
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

Device register_device(const std::string& name) {
  if (name.empty()) fail("device", "a device needs a name");
  return registry().add(name);
}

std::string device_name(Device device) { return registry().name(device); }

Device device_named(const std::string& name) {
  if (auto d = registry().find(name)) return *d;
  fail(ErrorCode::not_found, "device", "no device named '" + name + "' (registered: cpu and the backends' own)");
}

DeviceScope::DeviceScope(Device device) : saved_(t_scope) {
  if (device != Device::cpu) g_in_use.store(true, std::memory_order_relaxed);
  t_scope = static_cast<std::uint8_t>(static_cast<std::uint8_t>(device) + 1);
}
DeviceScope::~DeviceScope() { t_scope = saved_; }
Device current_device() { return t_scope ? static_cast<Device>(t_scope - 1) : Device::cpu; }
std::optional<Device> detail::scoped_device() {
  if (!t_scope) return std::nullopt;
  return static_cast<Device>(t_scope - 1);
}

Tensor to_device(const Tensor& t, Device device) {
  if (t.device() == device && t.impl().storage) return t;
  if (t.is_symbolic() || t.is_keras_tensor()) fail(ErrorCode::failed_precondition, "to_device", "needs a concrete tensor, got a placeholder " + t.spec().str());
  if (device != Device::cpu) g_in_use.store(true, std::memory_order_relaxed);
  Tensor c = Tensor::empty(t.dtype(), t.shape());
  if (t.nbytes()) std::memcpy(c.raw_mutable_data(), t.raw_data(), t.nbytes());
  c.impl().storage->device = device;
  return c;
}

bool detail::devices_in_use() { return g_in_use.load(std::memory_order_relaxed); }

}  // namespace ef
