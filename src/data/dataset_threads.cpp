// The pipeline's background threads: map(num_parallel_calls) and prefetch. Both are bounded
// (at most num_parallel_calls elements taken from the input and not yet returned; at most the
// buffer size waiting), start their threads on the first next(), and cancel and join them
// when the iterator is destroyed (a worker busy in the input or the function finishes that
// element first). Both join their pass's CancelGroup: Iterator::cancel() ends every wait,
// the consumer's included (its next() then returns the end).
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/thread_budget.h"
#include "data/dataset_internal.h"

namespace ef::data::detail {
namespace {

// A pipeline thread: counted (for the cancellation tests), its ops run on itself alone, and
// the passes it makes (interleave's inner ones) join its pass's group.
class ThreadCount {
 public:
  explicit ThreadCount(std::shared_ptr<CancelGroup> group) : scope_(std::move(group)) {
    note_thread(1);
    ef::detail::set_single_threaded_here(true);
  }
  ~ThreadCount() { note_thread(-1); }

 private:
  CancelGroupScope scope_;
};

// Membership of the group current when the node's pass was made (none outside Iterator).
class GroupMember {
 public:
  explicit GroupMember(Cancellable* self) : self_(self), group_(current_cancel_group()) {}
  void join() {
    if (group_) group_->add(self_);
  }
  ~GroupMember() {
    if (group_) group_->remove(self_);
  }
  GroupMember(const GroupMember&) = delete;
  GroupMember& operator=(const GroupMember&) = delete;
  const std::shared_ptr<CancelGroup>& group() const { return group_; }

 private:
  Cancellable* self_;
  std::shared_ptr<CancelGroup> group_;
};

struct ParallelMap final : IteratorImpl, Cancellable {
  struct Result {
    Flat out;
    std::exception_ptr error;
  };
  std::unique_ptr<IteratorImpl> in;
  std::shared_ptr<const std::function<void(const Flat&, Flat&)>> fn;
  std::int64_t capacity;
  bool deterministic;

  std::mutex in_mu;  // one worker pulls from the input at a time, numbering elements in order
  std::int64_t next_seq = 0;
  bool input_exhausted = false;  // under in_mu

  std::mutex mu;
  std::condition_variable to_consumer, to_workers;
  std::map<std::int64_t, Result> ready;
  std::int64_t in_flight = 0, next_emit = 0, end_seq = -1;
  bool input_done = false, cancelled = false, failed = false;
  std::vector<std::thread> workers;
  GroupMember member{this};  // declared last: leaves the group before the rest is destroyed

  ParallelMap(std::unique_ptr<IteratorImpl> input, std::shared_ptr<const std::function<void(const Flat&, Flat&)>> f,
              std::int64_t threads, bool det)
      : in(std::move(input)), fn(std::move(f)), capacity(threads), deterministic(det) {
    member.join();
  }

  ~ParallelMap() override {
    cancel();
    for (auto& t : workers) t.join();
  }

  void cancel() override {
    {
      std::lock_guard lk(mu);
      cancelled = true;
    }
    to_workers.notify_all();
    to_consumer.notify_all();
  }

  void work() {
    ThreadCount count(member.group());
    for (;;) {
      {
        std::unique_lock lk(mu);
        to_workers.wait(lk, [&] {
          return cancelled || input_done || in_flight + static_cast<std::int64_t>(ready.size()) < capacity;
        });
        if (cancelled || input_done) return;
        ++in_flight;
      }
      Flat x;
      bool got = false;
      std::exception_ptr error;
      std::int64_t seq;
      {
        std::lock_guard il(in_mu);
        seq = next_seq;
        if (!input_exhausted) {
          try {
            got = in->next(x);
          } catch (...) {
            error = std::current_exception();
          }
          if (!got) input_exhausted = true;
          if (got || error) ++next_seq;
        }
      }
      if (!got && !error) {
        std::lock_guard lk(mu);
        --in_flight;
        if (!input_done) {
          input_done = true;
          end_seq = seq;
        }
        to_consumer.notify_all();
        to_workers.notify_all();
        return;
      }
      Result r;
      // The input's error moves into the result: once it is published this worker holds no
      // reference to the exception, which the consumer rethrows and reads on its own thread.
      const bool input_failed = static_cast<bool>(error);
      r.error = std::move(error);
      if (!input_failed) {
        try {
          (*fn)(x, r.out);
        } catch (const std::exception& e) {
          r.error = std::make_exception_ptr(Error(kind_of(e), with_index("map", seq, e.what())));
        } catch (...) {
          r.error = std::make_exception_ptr(Error(ErrorCode::unknown, with_index("map", seq, "unknown exception")));
        }
      }
      std::lock_guard lk(mu);
      --in_flight;
      ready.emplace(seq, std::move(r));
      if (input_failed) {  // the input failed: nothing follows this element
        input_done = true;
        end_seq = seq + 1;
        to_workers.notify_all();
      }
      to_consumer.notify_all();
    }
  }

  bool next(Flat& out) override {
    std::unique_lock lk(mu);
    if (failed || cancelled) return false;
    if (workers.empty()) {
      lk.unlock();
      for (std::int64_t i = 0; i < capacity; ++i) workers.emplace_back([this] { work(); });
      lk.lock();
    }
    for (;;) {
      if (cancelled) return false;
      auto it = deterministic ? ready.find(next_emit) : ready.begin();
      if (it != ready.end()) {
        Result r = std::move(it->second);
        ready.erase(it);
        ++next_emit;
        to_workers.notify_one();
        if (r.error) {
          failed = true;
          std::rethrow_exception(r.error);
        }
        out = std::move(r.out);
        return true;
      }
      if (input_done && in_flight == 0 && (deterministic ? next_emit >= end_seq : ready.empty())) return false;
      to_consumer.wait(lk);
    }
  }
};

struct Prefetch final : IteratorImpl, Cancellable {
  std::unique_ptr<IteratorImpl> in;
  std::int64_t limit, max_limit;
  bool autotune;
  std::mutex mu;
  std::condition_variable to_consumer, to_producer;
  std::deque<Flat> buffer;
  std::exception_ptr error;
  bool done = false, cancelled = false, started = false;
  std::thread producer;
  GroupMember member{this};  // declared last: leaves the group before the rest is destroyed

  Prefetch(std::unique_ptr<IteratorImpl> input, std::int64_t size) : in(std::move(input)) {
    autotune = size == kAutotune;
    limit = autotune ? 1 : size;
    max_limit = autotune ? 16 : size;
    member.join();
  }

  ~Prefetch() override {
    cancel();
    if (producer.joinable()) producer.join();
  }

  void cancel() override {
    {
      std::lock_guard lk(mu);
      cancelled = true;
    }
    to_producer.notify_all();
    to_consumer.notify_all();
  }

  void produce() {
    ThreadCount count(member.group());
    for (;;) {
      {
        std::unique_lock lk(mu);
        to_producer.wait(lk, [&] { return cancelled || static_cast<std::int64_t>(buffer.size()) < limit; });
        if (cancelled) return;
      }
      Flat x;
      bool got = false;
      std::exception_ptr e;
      try {
        got = in->next(x);
      } catch (...) {
        e = std::current_exception();
      }
      std::lock_guard lk(mu);
      if (!got) {
        error = std::move(e);  // no reference left here once published (see ParallelMap::work)
        done = true;
        to_consumer.notify_all();
        return;
      }
      buffer.push_back(std::move(x));
      to_consumer.notify_all();
    }
  }

  bool next(Flat& out) override {
    std::unique_lock lk(mu);
    if (cancelled) return false;
    if (!started) {
      producer = std::thread([this] { produce(); });
      started = true;  // after: a thread that could not start is tried again, not waited for
    }
    if (buffer.empty() && !done && autotune && limit < max_limit) {
      ++limit;  // the consumer waits: a deeper buffer
      to_producer.notify_one();
    }
    to_consumer.wait(lk, [&] { return !buffer.empty() || done || cancelled; });
    if (cancelled) return false;
    if (!buffer.empty()) {
      out = std::move(buffer.front());
      buffer.pop_front();
      to_producer.notify_one();
      return true;
    }
    if (error) {
      std::exception_ptr e = error;
      error = nullptr;
      std::rethrow_exception(e);
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<IteratorImpl> make_parallel_map(std::unique_ptr<IteratorImpl> input,
                                                std::shared_ptr<const std::function<void(const Flat&, Flat&)>> fn,
                                                std::int64_t threads, bool deterministic) {
  return std::make_unique<ParallelMap>(std::move(input), std::move(fn), threads, deterministic);
}

std::unique_ptr<IteratorImpl> make_prefetch(std::unique_ptr<IteratorImpl> input, std::int64_t buffer_size) {
  return std::make_unique<Prefetch>(std::move(input), buffer_size);
}

}  // namespace ef::data::detail

namespace ef::data {
namespace {
struct PrefetchNode final : detail::Node {
  std::shared_ptr<const detail::Node> input;
  std::int64_t size;
  PrefetchNode(std::shared_ptr<const detail::Node> in, std::int64_t n) : Node(in->spec), input(std::move(in)), size(n) {}
  std::int64_t cardinality() const override { return input->cardinality(); }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    if (size == 0) return input->iterate();
    return detail::make_prefetch(input->iterate(), size);
  }
};
}  // namespace

Dataset Dataset::prefetch(std::int64_t buffer_size) const {
  if (buffer_size < 0 && buffer_size != kAutotune)
    detail::fail_data("prefetch: buffer_size must be >= 0 or kAutotune, got " + std::to_string(buffer_size));
  if (buffer_size > (std::int64_t{1} << 20))
    detail::fail_data("prefetch: buffer_size " + std::to_string(buffer_size) + " is more than 2^20 elements");
  return Dataset(std::make_shared<PrefetchNode>(node_ ? node_ : Dataset::range(0).node(), buffer_size));
}

}  // namespace ef::data
