#pragma once
// A replaceable, thread-safe destination for text lines (logs, ef::print output).
#include <functional>
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
    fn_ = std::move(fn);
  }
  void write(std::string_view text) {
    std::lock_guard lock(mutex_);
    if (fn_) fn_(text);
    else fallback_ << text << (newline_ ? "\n" : "") << std::flush;
  }

 private:
  std::mutex mutex_;
  std::function<void(std::string_view)> fn_;
  std::ostream& fallback_;
  bool newline_;
};

}  // namespace ef
