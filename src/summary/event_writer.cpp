#include "summary/event_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/summary/event_file.h"
#include "ef_tensorboard.pb.h"

namespace ef::summary::detail {
namespace {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

// TensorFlow's events.out.tfevents.<secs>.<host>.<pid>.<n>: n counts the files this process
// made, so two writers opened in the same second never share a file.
std::string event_file_name(const std::string& suffix) {
  static std::atomic<int> counter{0};
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(secs));
  return std::string("events.out.tfevents.") + stamp + "." + host_name() + "." + std::to_string(getpid()) + "." +
         std::to_string(counter++) + suffix;
}

}  // namespace

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventWriter::EventWriter(std::string logdir, const WriterOptions& options) : logdir_(std::move(logdir)), options_(options) {
  if (logdir_.empty()) fail("summary", "create_file_writer needs a log directory, got an empty path");
  if (options_.max_queue < 1) fail("summary", "max_queue must be at least 1, got " + std::to_string(options_.max_queue));
  if (!(options_.flush_secs >= 0)) fail("summary", "flush_secs must be >= 0, got " + std::to_string(options_.flush_secs));
  if (options_.filename_suffix.find('/') != std::string::npos)
    fail("summary", "filename_suffix may not contain '/': '" + options_.filename_suffix + "'");
  std::error_code ec;
  std::filesystem::create_directories(logdir_, ec);
  if (ec || !std::filesystem::is_directory(logdir_))
    fail("summary", "cannot create the log directory '" + logdir_ + "': " + (ec ? ec.message() : "not a directory"));
  path_ = (std::filesystem::path(logdir_) / event_file_name(options_.filename_suffix)).string();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_APPEND, 0644);
  if (fd_ < 0) fail("summary", "cannot create the event file '" + path_ + "': " + std::strerror(errno));
  ef_tensorboard::Event first;
  first.set_wall_time(wall_time_now());
  first.set_file_version("brain.Event:2");
  write(first);
  flush();  // the file is a valid (empty) run at once, as TF's writer
}

EventWriter::~EventWriter() {
  try {
    close();
  } catch (...) {
  }
}

void EventWriter::write(ef_tensorboard::Event& event) {
  if (event.wall_time() == 0) event.set_wall_time(wall_time_now());
  std::string data;
  if (!event.SerializeToString(&data)) fail("summary", "could not serialize an event for '" + path_ + "'");
  std::string framed = frame_record(data);
  std::lock_guard lock(mutex_);
  if (fd_ < 0) fail(ErrorCode::failed_precondition, "summary", "the writer for '" + logdir_ + "' is closed");
  auto now = std::chrono::steady_clock::now();
  if (pending_ == 0) oldest_pending_ = now;
  buffer_ += framed;
  ++pending_;
  if (pending_ >= options_.max_queue || std::chrono::duration<double>(now - oldest_pending_).count() >= options_.flush_secs)
    write_out_locked();
}

void EventWriter::write_out_locked() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::string why = std::strerror(errno);
      buffer_.clear();
      pending_ = 0;
      fail("summary", "writing the event file '" + path_ + "' failed: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  buffer_.clear();
  pending_ = 0;
}

void EventWriter::flush() {
  std::lock_guard lock(mutex_);
  if (fd_ >= 0 && !buffer_.empty()) write_out_locked();
}

void EventWriter::close() {
  std::lock_guard lock(mutex_);
  if (fd_ < 0) return;
  int fd = fd_;
  try {
    if (!buffer_.empty()) write_out_locked();
  } catch (...) {
    fd_ = -1;
    ::close(fd);
    throw;
  }
  fd_ = -1;
  ::close(fd);
}

void EventWriter::flush_if_due() {
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || pending_ == 0) return;
  if (std::chrono::duration<double>(std::chrono::steady_clock::now() - oldest_pending_).count() < options_.flush_secs) return;
  try {
    write_out_locked();
  } catch (const Error&) {
    // A full disk: the next write or flush on the user's thread reports it.
  }
}

namespace {
struct Flusher {
  std::mutex mutex;
  std::vector<std::weak_ptr<EventWriter>> writers;
  bool started = false;
};

Flusher* flusher() {
  // Never destroyed: the detached thread may still run while static destructors do.
  static Flusher* f = [] {
    auto* made = new Flusher;
    // A fork never copies the thread: the child starts its own, and finds the list's mutex free.
    pthread_atfork([] { flusher()->mutex.lock(); }, [] { flusher()->mutex.unlock(); },
                   [] {
                     new (&flusher()->mutex) std::mutex;
                     flusher()->started = false;
                   });
    return made;
  }();
  return f;
}
}  // namespace

void flush_periodically(const std::shared_ptr<EventWriter>& writer) {
  Flusher* f = flusher();
  std::lock_guard lock(f->mutex);
  std::erase_if(f->writers, [](const auto& w) { return w.expired(); });
  f->writers.push_back(writer);
  if (f->started) return;
  f->started = true;
  std::thread([f] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      std::vector<std::shared_ptr<EventWriter>> live;
      {
        std::lock_guard l(f->mutex);
        for (const auto& w : f->writers)
          if (auto s = w.lock()) live.push_back(std::move(s));
      }
      for (const auto& w : live) w->flush_if_due();
    }
  }).detach();
}

bool EventWriter::closed() const {
  std::lock_guard lock(mutex_);
  return fd_ < 0;
}

}  // namespace ef::summary::detail
