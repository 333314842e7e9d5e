#include "train/progress_bar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>

namespace ef::train {

std::string format_step_time(double seconds, std::int64_t steps) {
  double per = steps > 0 ? seconds / static_cast<double>(steps) : 0.0;
  char buf[64];
  if (per >= 1.0) std::snprintf(buf, sizeof buf, "%.0fs %.0fs/step", std::floor(seconds), per);
  else if (per >= 1e-3) std::snprintf(buf, sizeof buf, "%.0fs %.0fms/step", std::floor(seconds), per * 1e3);
  else std::snprintf(buf, sizeof buf, "%.0fs %.0fus/step", std::floor(seconds), per * 1e6);
  return buf;
}

ProgressBar::ProgressBar(std::ostream& os, std::int64_t total_steps, int verbose, bool terminal)
    : ProgressBar([&os](const std::string& text) { os << text << std::flush; }, total_steps, verbose, terminal) {}

ProgressBar::ProgressBar(std::function<void(const std::string&)> write, std::int64_t total_steps, int verbose, bool terminal)
    : write_(std::move(write)), total_(total_steps), verbose_(verbose), terminal_(terminal),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

std::string ProgressBar::line(std::int64_t step, const OrderedLogs& logs, bool done) const {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const bool unknown = total_ < 0;
  std::string s = std::to_string(step) + "/" + (unknown ? std::string("Unknown") : std::to_string(total_));
  if (verbose_ == 1 && !unknown) {
    constexpr int kWidth = 30;
    int filled = total_ > 0 ? static_cast<int>(kWidth * step / total_) : kWidth;
    std::string bar(static_cast<std::size_t>(kWidth), '.');
    for (int i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '=';
    if (!done && filled > 0 && filled < kWidth) bar[static_cast<std::size_t>(filled - 1)] = '>';
    if (!done && filled == 0) bar[0] = '>';
    s += " [" + bar + "]";
  }
  if (done) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0fs", std::floor(elapsed));
    s += " - " + (verbose_ == 1 ? format_step_time(elapsed, step) : std::string(buf));
  } else if (unknown) {
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.0fs", std::floor(elapsed));
    s += buf;
  } else {
    double eta = step > 0 ? elapsed / static_cast<double>(step) * static_cast<double>(total_ - step) : 0.0;
    char buf[32];
    std::snprintf(buf, sizeof buf, " - ETA: %.0fs", eta);
    s += buf;
  }
  for (const auto& [name, value] : logs) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " - %s: %.4f", name.c_str(), value);
    s += buf;
  }
  return s;
}

void ProgressBar::update(std::int64_t step, const OrderedLogs& logs) {
  if (verbose_ != 1 || !terminal_ || (total_ >= 0 && step >= total_)) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(50) && step > 1) return;  // redraw at most 20 times a second
  last_draw_ = now;
  std::string l = line(step, logs, false);
  std::size_t width = l.size();
  if (width < last_width_) l += std::string(last_width_ - width, ' ');  // clear the longer line before
  last_width_ = width;
  write_('\r' + l);
}

void ProgressBar::finish(const OrderedLogs& logs, std::int64_t steps_done) {
  if (verbose_ == 0) return;
  if (total_ < 0) total_ = std::max<std::int64_t>(steps_done, 0);  // known now
  std::string l = line(total_, logs, true);
  std::string text;
  if (terminal_ && verbose_ == 1) {
    if (l.size() < last_width_) l += std::string(last_width_ - l.size(), ' ');
    text = "\r";
  }
  write_(text + l + '\n');
}

}  // namespace ef::train
