#pragma once
// ef::data::Dataset: input pipelines with tf.data's semantics.
//
//   auto ds = ef::data::Dataset::from_tensor_slices({images, labels})
//                 .shuffle(10000, /*seed=*/1)
//                 .map(augment, /*num_parallel_calls=*/2)
//                 .batch(64)
//                 .prefetch(ef::data::kAutotune);
//   for (const ef::data::Element& e : ds) { ... e[0], e[1] ... }
//   model.fit(ds, {.epochs = 3});
//
// An element is one tensor, a tuple of tensors or a name->tensor map (flat: no nesting; zip
// and enumerate concatenate their parts into one tuple). Its ElementSpec gives dtypes and
// shapes (a dim may be kDynamic). map and filter trace their function once, as an
// ef::function, for the element spec; the graph then replays on the pipeline's threads.
//
// Threads: map(num_parallel_calls > 0) and prefetch run on background threads with bounded
// queues (at most num_parallel_calls elements in flight per map; at most the buffer size
// waiting per prefetch). An error in a function or a source surfaces in the consumer's next()
// as an ef::Error naming the element's index. Destroying an iterator (the end of a for loop,
// break, an exception, EarlyStopping) stops and joins its threads.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::data {

// tf.data's cardinality constants.
inline constexpr std::int64_t kInfiniteCardinality = -1;
inline constexpr std::int64_t kUnknownCardinality = -2;
// num_parallel_calls / prefetch buffer chosen by the pipeline (tf.data.AUTOTUNE).
inline constexpr std::int64_t kAutotune = -1;

enum class Structure : std::uint8_t { tensor, tuple, map };

struct ElementSpec {
  Structure structure = Structure::tensor;
  std::vector<std::string> keys;  // map: sorted names, one per spec
  std::vector<TensorSpec> specs;
  std::string str() const;  // "float32[28,28]", "(float32[28,28], int64[])", "{a: int32[], b: float32[?]}"
  bool operator==(const ElementSpec& o) const { return structure == o.structure && keys == o.keys && specs == o.specs; }
};

class Element {
 public:
  Element() = default;
  Element(Tensor t);                                    // NOLINT: implicit, one tensor
  Element(std::vector<Tensor> tuple);                   // NOLINT: a tuple
  Element(std::initializer_list<Tensor> tuple);         // NOLINT
  Element(const std::map<std::string, Tensor>& map);    // NOLINT: by name (kept sorted)
  Element(Structure structure, std::vector<std::string> keys, std::vector<Tensor> values);

  Structure structure() const { return structure_; }
  const std::vector<std::string>& keys() const { return keys_; }
  const std::vector<Tensor>& values() const { return values_; }
  std::vector<Tensor>& values() { return values_; }
  std::size_t size() const { return values_.size(); }
  const Tensor& operator[](std::size_t i) const;
  const Tensor& operator[](const std::string& key) const;
  // The tensor of a one-tensor element (an error for tuples and maps).
  const Tensor& tensor() const;
  ElementSpec spec() const;

 private:
  Structure structure_ = Structure::tensor;
  std::vector<std::string> keys_;
  std::vector<Tensor> values_;
};

namespace detail {
struct Node;          // src/data/dataset_internal.h
struct IteratorImpl;  // one pass over a node
class CancelGroup;    // the pass's threaded nodes
}  // namespace detail

// One pass over a dataset. next() returns nullopt at the end. Holds the pipeline's threads;
// destroying it cancels and joins them. One thread at a time calls next(); cancel() may come
// from any thread.
class Iterator {
 public:
  Iterator() = default;
  explicit Iterator(std::shared_ptr<detail::IteratorImpl> impl, std::shared_ptr<const detail::Node> node);
  // The pass (and its threads, which read the dataset's nodes) ends before the nodes are let go.
  ~Iterator();
  Iterator(Iterator&&) noexcept = default;
  Iterator& operator=(Iterator&& o) noexcept;
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;
  std::optional<Element> next();
  std::int64_t index() const { return index_; }  // elements returned so far
  // Ends the pass from any thread: a next() waiting on the pipeline's threads (here or on
  // another thread) returns nullopt soon (a worker busy in a function or a source finishes
  // that element first), and every later next() returns nullopt. The threads are joined when
  // the iterator is destroyed.
  void cancel();

  // Input-iterator interface for range-for.
  class Position {
   public:
    Position() = default;
    explicit Position(std::shared_ptr<Iterator> it);
    const Element& operator*() const { return *current_; }
    const Element* operator->() const { return &*current_; }
    Position& operator++();
    bool operator==(const Position& o) const { return !current_.has_value() && !o.current_.has_value(); }

   private:
    std::shared_ptr<Iterator> it_;  // shared by copies of the position; the pass ends with the last
    std::optional<Element> current_;
  };

 private:
  std::shared_ptr<const detail::Node> node_;  // declared first: destroyed after impl_
  friend class Dataset;  // iterator() gives the pass its group
  std::shared_ptr<detail::CancelGroup> group_;
  std::shared_ptr<detail::IteratorImpl> impl_;
  std::int64_t index_ = 0;
};

struct CsvOptions {
  // One dtype per column (float32, float64, int32, int64). Empty: every column float32.
  std::vector<DType> column_types;
  bool header = true;  // the first line of each file names the columns
  char delimiter = ',';
  // Defaults for empty fields, one per column (an empty field without one is an error).
  std::vector<std::optional<double>> column_defaults;
  // Bounds against hostile files (errors, never a crash or a quadratic read).
  std::size_t max_record_bytes = std::size_t{1} << 24;
  std::size_t max_columns = 1 << 16;
};

struct TextLineOptions {
  // A longer line is an ef::Error naming the file, the line and this bound. At least 1.
  std::size_t max_line_bytes = std::size_t{1} << 24;
};

// tfrecord files: plain, or one gzip / zlib stream (TF's TFRecordOptions compression_type).
enum class RecordCompression { none, gzip, zlib };

struct ImageFolderOptions {
  int channels = 0;  // 1, 3 or 4; 0: those of the first image (all must then match)
  // Every image resized (bilinear) to [height, width]; without it all images must share a size.
  std::optional<std::pair<std::int64_t, std::int64_t>> image_size;
};

class Dataset {
 public:
  using MapFn = std::function<Element(const Element&)>;
  using Predicate = std::function<Tensor(const Element&)>;  // a bool (or numeric) scalar
  using Generator = std::function<std::optional<Element>()>;  // nullopt: the end

  Dataset() = default;  // an empty dataset of no elements (assign a real one)

  // ---- sources
  // Slices along axis 0 of every tensor (all must have the same first dim).
  static Dataset from_tensor_slices(const Element& tensors);
  // One element: the tensors themselves.
  static Dataset from_tensors(const Element& tensors);
  // `make` is called at the start of each pass and returns the generator for it; every element
  // it yields must match `spec` (dims kDynamic match any size).
  static Dataset from_generator(std::function<Generator()> make, ElementSpec spec);
  static Dataset range(std::int64_t stop);
  static Dataset range(std::int64_t start, std::int64_t stop, std::int64_t step = 1, DType dtype = DType::int64);
  // The lines of the files, in order, without their line endings ("\n" or "\r\n"): each a
  // string scalar (TF's TextLineDataset).
  static Dataset text_line(std::vector<std::string> files, TextLineOptions options = {});
  // RFC 4180 CSV: a map by column name (header) or a tuple of columns, each a scalar of the
  // column's dtype. A bad row is an ef::Error naming file:line and the column.
  static Dataset csv(std::vector<std::string> files, CsvOptions options = {});
  // The records of TFRecord files (TF's TFRecordDataset), each a string scalar, streamed. A
  // damaged or truncated record is a DATA_LOSS ef::Error naming the file and the offset.
  static Dataset tfrecord(std::vector<std::string> files, RecordCompression compression = RecordCompression::none);
  // dir/<class>/<image>.png|.jpg|.jpeg: (image float32 [h, w, c] in 0..255, label int64 []),
  // classes numbered in sorted order of the sub-folder names, files in sorted order.
  static Dataset image_folder(const std::string& dir, ImageFolderOptions options = {});
  // The sorted class (sub-folder) names image_folder numbers.
  static std::vector<std::string> image_folder_classes(const std::string& dir);
  static Dataset zip(const std::vector<Dataset>& datasets);

  // ---- transformations
  // num_parallel_calls 0: on the consumer's thread; n > 0 (or kAutotune): n worker threads,
  // results in input order unless deterministic is false.
  Dataset map(MapFn fn, std::int64_t num_parallel_calls = 0, bool deterministic = true) const;
  Dataset filter(Predicate predicate) const;
  // tf.data's buffer semantics: a buffer of buffer_size elements, each output drawn uniformly
  // from it and replaced by the next input. seed: repeatable order (each pass reshuffles
  // differently but repeatably when reshuffle_each_iteration); none: drawn from ef's generator
  // when a pass starts (ef::random::set_seed repeats it).
  Dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  Dataset batch(std::int64_t batch_size, bool drop_remainder = false) const;
  // Pads every component to padded_shapes (kDynamic or empty list: the longest in the batch)
  // with padding_values (one per component; default 0).
  Dataset padded_batch(std::int64_t batch_size, std::vector<Shape> padded_shapes = {},
                       std::vector<double> padding_values = {}, bool drop_remainder = false) const;
  Dataset prefetch(std::int64_t buffer_size) const;  // kAutotune: grows when the consumer waits
  Dataset repeat(std::int64_t count = -1) const;     // -1: forever
  Dataset take(std::int64_t count) const;            // -1: all
  Dataset skip(std::int64_t count) const;            // -1: all
  // Empty filename: in memory. Otherwise the first complete pass writes the file (atomically,
  // at its end) and later passes (and programs) read it. A partial pass caches nothing.
  Dataset cache(const std::string& filename = "") const;
  // Maps each element to a dataset and interleaves them: cycle_length open at once, taking
  // block_length elements from each in turn (tf.data's order).
  Dataset interleave(std::function<Dataset(const Element&)> fn, std::int64_t cycle_length,
                     std::int64_t block_length = 1) const;
  // (index int64 [], element...): a tuple.
  Dataset enumerate(std::int64_t start = 0) const;

  // ---- inspection and iteration
  const ElementSpec& element_spec() const;
  std::int64_t cardinality() const;  // kInfiniteCardinality, kUnknownCardinality or the count
  Iterator iterator() const;
  // Range-for: each begin() starts a pass, which ends with the loop.
  Iterator::Position begin() const;
  static Iterator::Position end() { return Iterator::Position(); }

  const std::shared_ptr<const detail::Node>& node() const { return node_; }
  explicit Dataset(std::shared_ptr<const detail::Node> node) : node_(std::move(node)) {}

 private:
  std::shared_ptr<const detail::Node> node_;
};

// A string scalar (a text_line element), or int32 [length] bytes, as a std::string.
std::string to_string(const Tensor& bytes);

}  // namespace ef::data
