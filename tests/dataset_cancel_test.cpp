// Ending a threaded pipeline early: Iterator::cancel() from another thread wakes a next() that
// waits on the pipeline's threads (prefetch, parallel map, interleave's inner passes), and
// iterators dropped mid-stream (a stuck source, a failed source, nested threaded nodes) join
// every thread they started.
#include <eagerflow/data/dataset.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "data/dataset_internal.h"
#include "test_util.h"

namespace {

using ef::data::Dataset;
using ef::data::Element;
using ef::data::ElementSpec;

const ElementSpec kScalarInt{ef::data::Structure::tensor, {}, {ef::TensorSpec{ef::DType::int64, ef::Shape{}, {}}}};

// A source that gives `free` elements, then blocks in its next element until released.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int waiting = 0;
  void release() {
    {
      std::lock_guard lk(mu);
      open = true;
    }
    cv.notify_all();
  }
  void wait_until_waiting() {
    std::unique_lock lk(mu);
    cv.wait(lk, [&] { return waiting > 0; });
  }
};

Dataset gated(std::shared_ptr<Gate> gate, std::int64_t free) {
  return Dataset::from_generator(
      [gate, free]() -> Dataset::Generator {
        auto i = std::make_shared<std::int64_t>(0);
        return [gate, free, i]() -> std::optional<Element> {
          if (*i >= free) {
            std::unique_lock lk(gate->mu);
            ++gate->waiting;
            gate->cv.notify_all();
            gate->cv.wait(lk, [&] { return gate->open; });
          }
          return Element(ef::scalar<std::int64_t>((*i)++));
        };
      },
      kScalarInt);
}

Dataset endless() {
  return Dataset::from_generator(
      [] {
        auto i = std::make_shared<std::int64_t>(0);
        return Dataset::Generator([i]() -> std::optional<Element> { return Element(ef::scalar<std::int64_t>((*i)++)); });
      },
      kScalarInt);
}

Element twice(const Element& e) { return Element(e.tensor() * ef::scalar<std::int64_t>(2)); }

// cancel() from another thread while the consumer waits for an element that the stuck source
// has not made: the consumer's next() returns the end; later calls too.
void expect_cancel_wakes_consumer(const std::function<Dataset(Dataset)>& wrap) {
  const std::int64_t before = ef::data::detail::live_pipeline_threads();
  auto gate = std::make_shared<Gate>();
  {
    ef::data::Iterator it = wrap(gated(gate, 1)).iterator();
    ASSERT_TRUE(it.next().has_value());
    std::thread canceller([&] {
      gate->wait_until_waiting();
      it.cancel();
    });
    EXPECT_FALSE(it.next().has_value());
    canceller.join();
    EXPECT_FALSE(it.next().has_value());
    gate->release();  // the stuck element finishes; the destructor joins the threads
  }
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
}

TEST(DatasetCancel, CancelWakesANextWaitingOnPrefetch) {
  expect_cancel_wakes_consumer([](Dataset d) { return d.prefetch(4); });
}

TEST(DatasetCancel, CancelWakesANextWaitingOnParallelMap) {
  expect_cancel_wakes_consumer([](Dataset d) { return d.map(twice, 3); });
}

TEST(DatasetCancel, CancelReachesThreadsBelowOtherNodes) {
  expect_cancel_wakes_consumer([](Dataset d) { return d.map(twice, 2).prefetch(2).batch(1).prefetch(3).take(100); });
}

TEST(DatasetCancel, CancelReachesInterleavesInnerPasses) {
  auto gate = std::make_shared<Gate>();
  const std::int64_t before = ef::data::detail::live_pipeline_threads();
  {
    // Each inner pass is made inside next(): its prefetch joins the outer pass's group.
    Dataset ds = Dataset::range(2).interleave([gate](const Element&) { return gated(gate, 1).prefetch(2); }, 1);
    ef::data::Iterator it = ds.iterator();
    ASSERT_TRUE(it.next().has_value());
    std::thread canceller([&] {
      gate->wait_until_waiting();
      it.cancel();
    });
    EXPECT_FALSE(it.next().has_value());
    canceller.join();
    gate->release();
  }
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
}

TEST(DatasetCancel, CancelBeforeTheFirstElementStartsNoThread) {
  const std::int64_t before = ef::data::detail::live_pipeline_threads();
  ef::data::Iterator it = endless().map(twice, 4).prefetch(8).iterator();
  it.cancel();
  EXPECT_FALSE(it.next().has_value());
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
}

TEST(DatasetCancel, DroppedMidStreamJoinsEveryThread) {
  const std::int64_t before = ef::data::detail::live_pipeline_threads();
  for (int take : {0, 1, 7, 40}) {
    // Full buffers everywhere: producers blocked on their queues when the iterator goes.
    ef::data::Iterator it = endless().map(twice, 4).prefetch(8).map(twice, 2).prefetch(ef::data::kAutotune).iterator();
    for (int i = 0; i < take; ++i) ASSERT_TRUE(it.next().has_value());
  }
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
}

TEST(DatasetCancel, AFailedSourceDroppedMidStreamJoinsEveryThread) {
  const std::int64_t before = ef::data::detail::live_pipeline_threads();
  Dataset failing = Dataset::from_generator(
      [] {
        auto i = std::make_shared<std::int64_t>(0);
        return Dataset::Generator([i]() -> std::optional<Element> {
          if (*i == 3) throw std::runtime_error("source broke");
          return Element(ef::scalar<std::int64_t>((*i)++));
        });
      },
      kScalarInt);
  {
    ef::data::Iterator it = failing.map(twice, 3).prefetch(4).iterator();
    ef::testing::expect_error(
        [&] {
          for (;;)
            if (!it.next()) break;
        },
        {"source broke"});
  }
  {
    ef::data::Iterator it = failing.prefetch(2).map(twice, 2).iterator();
    ASSERT_TRUE(it.next().has_value());
  }
  EXPECT_EQ(ef::data::detail::live_pipeline_threads(), before);
}

}  // namespace
