#pragma once
// A replaceable, thread-safe destination for text lines (logs, ef::print output).
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string_view>

namespace ef {

class LineSink {
 public:
  // `newline`: the fallback stream ends each write with a newline (for callers that pass
  // lines without one).
  LineSink(std::ostream& fallback, bool newline) : fallback_(fallback), newline_(newline) {}
  void set(std::function<void(std::string_view)> fn) {
    std::lock_guard lock(mutex_);
    fn_ = fn ? std::make_shared<const std::function<void(std::string_view)>>(std::move(fn)) : nullptr;
  }
  void write(std::string_view text) {
    // Recursive: a sink may itself print or log (or ask a function for its traces) without
    // deadlocking; lines from other threads still do not interleave.
    std::lock_guard lock(mutex_);
    auto fn = fn_;  // a sink that replaces itself keeps running to the end
    if (fn) (*fn)(text);
    else fallback_ << text << (newline_ ? "\n" : "") << std::flush;
  }

 private:
  std::recursive_mutex mutex_;
  std::shared_ptr<const std::function<void(std::string_view)>> fn_;
  std::ostream& fallback_;
  bool newline_;
};

}  // namespace ef
