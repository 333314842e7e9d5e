#include "ops/op_observer.h"

#include <cmath>
#include <complex>
#include <string>

#include "eagerflow/core/complex_dtype.h"
#include "eagerflow/core/log.h"
#include "eagerflow/ops/op_observer.h"
#include "eagerflow/core/error.h"

namespace ef {
namespace {

std::atomic<bool> check_numerics_on{false};
std::atomic<bool> log_placement_on{false};

void update() { detail::observing_ops.store(check_numerics_on.load() || log_placement_on.load()); }

template <class T>
bool all_finite(const Tensor& t) {
  for (const T& v : t.data<T>()) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(v)) return false;
    } else {
      if (!std::isfinite(v.real()) || !std::isfinite(v.imag())) return false;
    }
  }
  return true;
}

bool finite(const Tensor& t) {
  switch (t.dtype()) {
    case DType::float32: return all_finite<float>(t);
    case DType::float64: return all_finite<double>(t);
    case DType::complex64: return all_finite<std::complex<float>>(t);
    case DType::complex128: return all_finite<std::complex<double>>(t);
    case DType::bfloat16:
    case DType::float16:
      return dispatch_storage_dtype(t.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
          for (T v : t.data<T>())
            if (!std::isfinite(static_cast<float>(v))) return false;
        }
        return true;
      });
    default: return true;
  }
}

}  // namespace

std::atomic<bool> detail::observing_ops{false};

void detail::observe_op(const Primitive& op, std::span<const Tensor> outputs) {
  if (log_placement_on.load(std::memory_order_relaxed))
    write_log(std::string("Executing op ") + op.name() + " in device /job:localhost/replica:0/task:0/device:CPU:0\n");
  if (!check_numerics_on.load(std::memory_order_relaxed)) return;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    if (!t.defined() || t.is_symbolic() || !(is_inexact(t.dtype()))) continue;
    if (!finite(t))
      fail(ErrorCode::invalid_argument, op.name(),
           "!!! Detected Infinity or NaN in output " + std::to_string(i) + " of op '" + op.name() + "' (# of outputs: " +
               std::to_string(outputs.size()) + ") !!! dtype: " + std::string(name_of(t.dtype())) + ", shape: " +
               t.shape().str() + " (tf.debugging.enable_check_numerics is on)");
  }
}

void debug::enable_check_numerics(bool on) {
  check_numerics_on.store(on);
  update();
}
bool debug::check_numerics_enabled() { return check_numerics_on.load(); }
void debug::set_log_device_placement(bool on) {
  log_placement_on.store(on);
  update();
}
bool debug::log_device_placement() { return log_placement_on.load(); }

}  // namespace ef
