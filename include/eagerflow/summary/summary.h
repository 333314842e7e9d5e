#pragma once
// TensorBoard summaries, as tf.summary: a file writer per run directory, and scalar /
// histogram / text summaries written to the default writer.
//
//   auto writer = ef::summary::create_file_writer("logs/train");
//   {
//     auto scope = writer.as_default();
//     ef::summary::scalar("loss", 0.25, /*step=*/3);
//   }
//
// A summary is an op with an effect (like ef::print): called eagerly it writes at once;
// called inside an ef::function it writes at every execution of the traced graph, in order,
// and is never pruned. The writer is the default writer when the function traces (as
// tf.function captures it); the value and the step may be tensors computed by the graph.
// With no default writer a summary writes nothing and returns false, as tf.summary.
//
// The files are TensorBoard's own: events.out.tfevents.<secs>.<host>.<pid>.<n>, records of
// Event protocol buffers framed with masked CRC-32C (eagerflow/summary/event_file.h reads
// them back).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "eagerflow/core/tensor.h"

namespace ef {
class ConcreteFunction;
}

namespace ef::summary {

struct WriterOptions {
  // Records buffered before a flush (tf.summary's max_queue) and the longest time a written
  // record waits for one (flush_millis): whichever comes first. Closing flushes.
  int max_queue = 10;
  double flush_secs = 2.0;
  std::string filename_suffix;  // appended to the file name
};

class SummaryWriter;

// The previous default writer comes back when this scope ends.
class DefaultWriterScope {
 public:
  explicit DefaultWriterScope(const SummaryWriter& writer);
  ~DefaultWriterScope();
  DefaultWriterScope(const DefaultWriterScope&) = delete;
  DefaultWriterScope& operator=(const DefaultWriterScope&) = delete;

 private:
  std::shared_ptr<void> previous_;
};

namespace detail {
class EventWriter;  // src/summary/event_writer.h
}

// A handle on one event file (copies share it). The file is flushed and closed when the last
// handle goes, or by close().
class SummaryWriter {
 public:
  SummaryWriter() = default;
  bool valid() const { return impl_ != nullptr; }
  const std::string& path() const;  // the event file
  const std::string& logdir() const;
  // tf.summary's writer.as_default(): this writer is the default for the scope's lifetime.
  [[nodiscard]] DefaultWriterScope as_default() const { return DefaultWriterScope(*this); }
  // Writes what is buffered to the file now.
  void flush() const;
  // Flushes and closes the file; later summaries to this writer are ef::Errors.
  void close() const;
  bool closed() const;
  // The graph of a traced function as traced (before fusion: the ops the code called), for
  // TensorBoard's graph dashboard (a GraphDef event).
  void write_graph(const ConcreteFunction& function, std::int64_t step = 0) const;
  // A raw, already serialized GraphDef (tests; other producers).
  void write_graph_def(const std::string& serialized_graph_def, std::int64_t step = 0) const;

  const std::shared_ptr<detail::EventWriter>& impl() const { return impl_; }
  explicit SummaryWriter(std::shared_ptr<detail::EventWriter> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::EventWriter> impl_;
};

// Creates logdir (and its parents) and a new event file in it.
SummaryWriter create_file_writer(const std::string& logdir, const WriterOptions& options = {});

// The default writer for this process (tf.summary's is per thread; eagerflow's fit and
// callbacks run on the caller's thread, so one per process is what a user sees). An invalid
// writer clears it.
void set_default_writer(const SummaryWriter& writer);
SummaryWriter default_writer();

// The step of a summary: an integer, a tensor (a traced graph's step counter, an optimizer's
// iterations), or unset: then the step set by set_step, which must exist.
struct Step {
  Step() = default;
  Step(std::int64_t s) : value(s) {}          // NOLINT: implicit, as tf.summary takes step=3
  Step(int s) : value(std::int64_t{s}) {}     // NOLINT
  Step(Tensor t) : value(std::move(t)) {}     // NOLINT
  std::variant<std::monostate, std::int64_t, Tensor> value;
};
// tf.summary.experimental.set_step: the step used when a summary gets none.
void set_step(std::optional<std::int64_t> step);
std::optional<std::int64_t> get_step();

// A scalar: one number (a tensor of one element, any dtype). Returns false when there is no
// default writer (nothing is written).
bool scalar(const std::string& name, const Tensor& value, const Step& step = {});
bool scalar(const std::string& name, double value, const Step& step = {});
// A histogram of a tensor's finite values in `buckets` equal-width buckets between its
// minimum and maximum (tf.summary.histogram's default is 30).
bool histogram(const std::string& name, const Tensor& data, const Step& step = {}, int buckets = 30);
// Text (markdown), shown by TensorBoard's text dashboard.
bool text(const std::string& name, const std::string& data, const Step& step = {});

}  // namespace ef::summary
