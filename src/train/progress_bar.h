#pragma once
// Keras' progress bar for fit/evaluate:
//   Epoch 1/5
//   63/63 [==============================] - 1s 9ms/step - loss: 0.2900 - accuracy: 0.9176
// redrawn in place (with ETA) on a terminal, one line per epoch otherwise; verbose 2 prints
// one line per epoch without the bar.
#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

namespace ef::train {

using OrderedLogs = std::vector<std::pair<std::string, double>>;

class ProgressBar {
 public:
  // total_steps < 0: unknown (a dataset of unknown cardinality): "12/Unknown", counting up.
  ProgressBar(std::ostream& os, std::int64_t total_steps, int verbose, bool terminal);
  // Writes each piece of text through `write` (ProgbarLogger: ef::write_progress).
  ProgressBar(std::function<void(const std::string&)> write, std::int64_t total_steps, int verbose, bool terminal);
  void update(std::int64_t step, const OrderedLogs& logs);  // after each batch
  // End of the epoch, with val_ logs; steps_done: the batches run, shown when the total was
  // unknown.
  void finish(const OrderedLogs& logs, std::int64_t steps_done = -1);

 private:
  std::string line(std::int64_t step, const OrderedLogs& logs, bool done) const;
  std::function<void(const std::string&)> write_;
  std::int64_t total_;
  int verbose_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::size_t last_width_ = 0;
};

// "1s 9ms/step", "0s 850us/step"
std::string format_step_time(double seconds, std::int64_t steps);

}  // namespace ef::train
