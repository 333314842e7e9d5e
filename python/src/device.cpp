// ef.device (tf.device) and Tensor.device: where ops run (eagerflow/core/device.h).
#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "bindings.h"

#include <eagerflow/core/device.h>

namespace efpy {
namespace {

// TF's spelling of a device: "/job:localhost/replica:0/task:0/device:CPU:0".
std::string tf_device_string(ef::Device d) {
  std::string name = d == ef::Device::cpu ? "CPU" : ef::device_name(d);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
  return "/job:localhost/replica:0/task:0/device:" + name + ":0";
}

// "/GPU:0", "gpu", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:GPU:1", "reference":
// the device type of the last component. GPUs and TPUs are not built: TF's soft placement (on
// by default) runs such ops on the CPU, and so does this.
ef::Device parse_device(const std::string& spec) {
  std::string last = spec.substr(spec.rfind('/') == std::string::npos ? 0 : spec.rfind('/') + 1);
  if (last.rfind("device:", 0) == 0) last = last.substr(7);
  std::string type = last.substr(0, last.find(':'));
  std::string lower = type;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.empty() && spec.find("job:") != std::string::npos) return ef::Device::cpu;  // "/job:localhost"
  if (lower == "cpu" || lower == "gpu" || lower == "tpu") return ef::Device::cpu;
  try {
    return ef::device_named(lower);
  } catch (const ef::Error&) {
    throw nb::value_error(("ef.device: unknown device '" + spec + "' (use '/CPU:0' or '/GPU:0')").c_str());
  }
}

// The context manager tf.device returns; the scope lives from __enter__ to __exit__ on one thread.
class DeviceContext {
 public:
  explicit DeviceContext(std::optional<ef::Device> d) : device_(d) {}
  void enter() {
    if (scope_) throw nb::value_error("ef.device: this context is already active (make a new one per with-block)");
    if (device_) scope_ = std::make_unique<ef::DeviceScope>(*device_);
  }
  void exit() { scope_.reset(); }

 private:
  std::optional<ef::Device> device_;
  std::unique_ptr<ef::DeviceScope> scope_;  // a pointer: the context is moved into its Python object
};

}  // namespace

void init_device(nb::module_& m) {
  nb::class_<DeviceContext>(m, "_DeviceContext")
      .def("__enter__", [](DeviceContext& c) { c.enter(); })
      .def("__exit__", [](DeviceContext& c, nb::args) { c.exit(); });
  m.def(
      "device",
      [](std::optional<std::string> spec) {
        return DeviceContext(spec ? std::optional<ef::Device>(parse_device(*spec)) : std::nullopt);
      },
      nb::arg("device_name").none(),
      "tf.device: ops in the with-block run on this device ('/CPU:0'; a GPU request runs on the CPU, as TF's "
      "soft placement does where no GPU is present). None places nothing.");
  nb::object property = nb::module_::import_("builtins").attr("property");
  nb::handle tensor_type = nb::type<ef::Tensor>();
  nb::setattr(tensor_type, "device",
              property(nb::cpp_function([](const ef::Tensor& t) { return tf_device_string(t.device()); })));
}

}  // namespace efpy
