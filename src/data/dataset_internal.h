#pragma once
// The machinery behind ef::data::Dataset: a dataset is an immutable graph of Nodes; each pass
// makes a chain of IteratorImpls (one per node) that pull flat elements (one tensor per
// component of the element spec) from their inputs.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/data/dataset.h"

namespace ef::data::detail {

using Flat = std::vector<Tensor>;

struct IteratorImpl {
  virtual ~IteratorImpl() = default;
  // The next element into `out`; false at the end (then never called again by well-behaved
  // consumers, but calling again keeps returning false).
  virtual bool next(Flat& out) = 0;
};

struct Node {
  explicit Node(ElementSpec s) : spec(std::move(s)) {}
  virtual ~Node() = default;
  virtual std::int64_t cardinality() const = 0;
  virtual std::unique_ptr<IteratorImpl> iterate() const = 0;
  ElementSpec spec;
};

[[noreturn]] void fail_data(const std::string& message);  // "[data] ...", INVALID_ARGUMENT
[[noreturn]] void fail_data(ErrorKind kind, const std::string& message);

// The threaded nodes of one pass (prefetch, parallel map), wherever they sit in the chain
// (interleave makes inner passes while it runs), so that Iterator::cancel() wakes every wait:
// a consumer blocked in next() on another thread returns the end instead of waiting for an
// element that may never come.
struct Cancellable {
  virtual void cancel() = 0;

 protected:
  ~Cancellable() = default;
};

class CancelGroup {
 public:
  void add(Cancellable* member);  // cancels it at once when the group already is
  void remove(Cancellable* member);
  void cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  std::mutex mu_;
  std::vector<Cancellable*> members_;
  std::atomic<bool> cancelled_{false};
};

// The group of the pass this thread works for: set by Iterator while it makes and advances its
// pass, and by the pipeline's threads for theirs; null outside a pass.
const std::shared_ptr<CancelGroup>& current_cancel_group();
// Whether this thread's pass was cancelled: nodes that drop an input pass when it ends (repeat,
// interleave) keep it instead, since its end may be the cancellation and dropping it would
// join threads that wait on a stuck source.
bool pass_cancelled();
class CancelGroupScope {
 public:
  explicit CancelGroupScope(std::shared_ptr<CancelGroup> group);
  ~CancelGroupScope();
  CancelGroupScope(const CancelGroupScope&) = delete;
  CancelGroupScope& operator=(const CancelGroupScope&) = delete;

 private:
  std::shared_ptr<CancelGroup> saved_;
};

// Whether `t` fits `spec` (kDynamic dims match any size).
bool fits(const TensorSpec& spec, const Tensor& t);
// An ef::Error naming the element index and both specs when `flat` does not fit `spec`.
void check_element(const ElementSpec& spec, const Flat& flat, const std::string& what, std::int64_t index);
ElementSpec spec_of(const Element& e);
Element element_of(const ElementSpec& spec, Flat flat);

// A spec where every dim that differs between a and b is kDynamic (ranks must match).
TensorSpec relaxed(const TensorSpec& a, const TensorSpec& b);

// The pipeline's threads run host code that may throw; errors carry the element index.
std::string with_index(const std::string& what, std::int64_t index, const std::string& message);

// Worker threads for kAutotune.
std::int64_t autotune_threads();

// Threaded nodes (dataset_threads.cpp).
std::unique_ptr<IteratorImpl> make_parallel_map(std::unique_ptr<IteratorImpl> input,
                                                std::shared_ptr<const std::function<void(const Flat&, Flat&)>> fn,
                                                std::int64_t threads, bool deterministic);
std::unique_ptr<IteratorImpl> make_prefetch(std::unique_ptr<IteratorImpl> input, std::int64_t buffer_size);

// Test hook: prefetch and parallel-map threads alive now (the cancellation tests check it
// returns to its value before a pass).
std::int64_t live_pipeline_threads();
void note_thread(int delta);

}  // namespace ef::data::detail
