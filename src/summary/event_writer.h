#pragma once
// One event file being written: records are framed and buffered, and written out every
// max_queue records, when flush_secs have passed since the oldest unwritten one, and on
// flush/close. Each flush appends whole records with write(2), so a crash leaves at most the
// last record incomplete.
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "eagerflow/summary/summary.h"

namespace ef_tensorboard {
class Event;
}

namespace ef::summary::detail {

class EventWriter {
 public:
  EventWriter(std::string logdir, const WriterOptions& options);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // Fills wall_time when unset (0) and appends the event.
  void write(ef_tensorboard::Event& event);
  void flush();
  // Writes the buffer out when its oldest record has waited flush_secs (the periodic flusher).
  void flush_if_due();
  void close();
  bool closed() const;
  const std::string& path() const { return path_; }
  const std::string& logdir() const { return logdir_; }

 private:
  void write_out_locked();  // the buffer to the file
  std::string logdir_, path_;
  WriterOptions options_;
  mutable std::mutex mutex_;
  int fd_ = -1;
  std::string buffer_;
  int pending_ = 0;
  std::chrono::steady_clock::time_point oldest_pending_;
};

double wall_time_now();

// A background thread (one per process, started with the first writer) calls flush_if_due on
// every live writer about 5 times a second, so records reach the file within flush_secs even
// when nothing else is written after them (tf.summary's flush_millis).
void flush_periodically(const std::shared_ptr<EventWriter>& writer);

}  // namespace ef::summary::detail
