#pragma once
// Logging for traces. Levels: off < warning (default: retracing warnings) < info (why each
// trace happened) < verbose (+ traced layer calls, created variables) < debug (+ every op
// recorded). Set with ef::set_log_level or the environment variable EF_LOG_LEVEL.
#include <functional>
#include <string>
#include <string_view>

namespace ef {

enum class LogLevel { off = 0, warning = 1, info = 2, verbose = 3, debug = 4 };

void set_log_level(LogLevel level);
LogLevel log_level();
inline bool log_enabled(LogLevel level) { return level != LogLevel::off && log_level() >= level; }
// Where log lines go (default: stderr). Pass nullptr to restore the default.
void set_log_sink(std::function<void(std::string_view)> sink);
void log(LogLevel level, std::string_view line);
// A line for the log sink whatever the level (what the user switched on by name: device placement).
void write_log(std::string_view line);

}  // namespace ef
