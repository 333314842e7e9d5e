#include "eagerflow/core/log.h"

#include "eagerflow/core/line_sink.h"
#include "eagerflow/core/progress.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace ef {
namespace {

LogLevel level_from_env() {
  const char* v = std::getenv("EF_LOG_LEVEL");
  if (!v) return LogLevel::warning;
  std::string s = v;
  if (s == "off" || s == "0") return LogLevel::off;
  if (s == "info" || s == "2") return LogLevel::info;
  if (s == "verbose" || s == "3") return LogLevel::verbose;
  if (s == "debug" || s == "4") return LogLevel::debug;
  return LogLevel::warning;
}

std::atomic<LogLevel>& level() {
  static std::atomic<LogLevel> l{level_from_env()};
  return l;
}

LineSink& sink() {
  static LineSink s(std::clog, /*newline=*/true);
  return s;
}

LineSink& progress_sink() {
  static LineSink s(std::cout, /*newline=*/false);
  return s;
}
std::atomic<bool>& progress_redirected() {
  static std::atomic<bool> r{false};
  return r;
}

}  // namespace

void set_log_level(LogLevel l) { level().store(l); }
LogLevel log_level() { return level().load(std::memory_order_relaxed); }

void set_log_sink(std::function<void(std::string_view)> fn) { sink().set(std::move(fn)); }

void set_progress_sink(std::function<void(std::string_view)> fn) {
  progress_redirected().store(fn != nullptr);
  progress_sink().set(std::move(fn));
}

void write_progress(std::string_view text) { progress_sink().write(text); }

bool progress_to_terminal() { return !progress_redirected().load() && isatty(fileno(stdout)) != 0; }

void write_log(std::string_view line) { sink().write(line); }

void log(LogLevel l, std::string_view line) {
  if (!log_enabled(l)) return;
  sink().write(line);
}

}  // namespace ef
