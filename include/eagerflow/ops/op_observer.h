#pragma once
// Program-wide checks on every op that runs, eagerly or in a traced graph: TF's
// tf.debugging.enable_check_numerics and tf.debugging.set_log_device_placement. Off by default;
// off, each op pays one relaxed load. Include this header on its own (not part of eagerflow.h).
namespace ef::debug {

// After every op, its floating and complex outputs are checked: a NaN or an infinity is an
// INVALID_ARGUMENT ef::Error naming the op, the output, its dtype and shape.
void enable_check_numerics(bool on = true);
bool check_numerics_enabled();

// A log line per op that runs, naming the op and its device (TF's "Executing op ... in device
// ..."), written to the log sink whatever the log level.
void set_log_device_placement(bool on);
bool log_device_placement();

}  // namespace ef::debug
