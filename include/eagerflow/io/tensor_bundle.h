#pragma once
// TensorFlow's checkpoint files (the "tensor bundle" tf.train.Checkpoint and tf.compat.v1's Saver
// write): `<prefix>.index`, a sorted table (LevelDB's layout) mapping each key to a
// BundleEntryProto (dtype, shape, offset, size, masked CRC-32C of the bytes) plus a header under
// the empty key, and `<prefix>.data-00000-of-00001`, the tensors' bytes (little endian; strings
// as varint64 lengths, a masked CRC-32C of those lengths, then the bytes).
//
//   ef::io::BundleWriter w("run/ckpt-1");
//   w.add("w/.ATTRIBUTES/VARIABLE_VALUE", tensor);
//   w.finish();                        // both files, written atomically each
//   ef::io::BundleReader r("run/ckpt-1");
//   ef::Tensor t = r.read("w/.ATTRIBUTES/VARIABLE_VALUE");   // its CRC-32C checked
//
// Dtypes: float32/64, float16, bfloat16, int8/16/32/64, uint8/16/32/64, bool, string,
// complex64/128. Single-shard bundles only (what TF writes on one machine); partitioned
// (sliced) entries are refused with an error naming the key.
//
// Crash safety: the data file and then the index are each written to a temporary sibling,
// synced and renamed, so an index that exists always names complete data. Saving to a new
// prefix (as Checkpoint.save does: ckpt-1, ckpt-2, ...) therefore leaves the old checkpoint or
// the new one; overwriting a prefix in place can, if killed between the two renames, pair the
// new data with the old index, which every read then reports as DATA_LOSS (the entries' CRCs),
// never as silently mixed values.
//
// Damaged or hostile files (truncated, bit-flipped, huge shapes or offsets, bad varints)
// give ef::Errors naming the file: DATA_LOSS for damage, NOT_FOUND for a missing file,
// UNIMPLEMENTED for valid features eagerflow does not read (several shards, slices, compression).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::io {

// "<prefix>.index" and "<prefix>.data-00000-of-00001".
std::string bundle_index_path(const std::string& prefix);
std::string bundle_data_path(const std::string& prefix);
// Whether `<prefix>.index` exists and starts as a bundle index would (the table's magic number).
bool is_tensor_bundle(const std::string& prefix);

class BundleReader {
 public:
  // Reads and checks the index (the data file is read per key). NOT_FOUND without an index.
  explicit BundleReader(const std::string& prefix);

  const std::string& prefix() const { return prefix_; }
  std::vector<std::string> keys() const;  // sorted, as TF's list_variables
  bool contains(const std::string& key) const { return entries_.count(key) != 0; }
  DType dtype(const std::string& key) const;
  Shape shape(const std::string& key) const;
  // The tensor, its bytes checked against the entry's CRC-32C. NOT_FOUND for an unknown key.
  Tensor read(const std::string& key) const;

 private:
  struct Entry {
    DType dtype = DType::float32;
    std::vector<std::int64_t> shape;
    std::uint64_t offset = 0, size = 0;
    std::uint32_t crc32c = 0;  // unmasked
  };
  const Entry& entry(const std::string& key) const;
  std::string prefix_;
  std::map<std::string, Entry> entries_;
  std::uint64_t data_size_ = 0;
};

class BundleWriter {
 public:
  struct Options {
    std::size_t index_block_size = 256 * 1024;  // TF's table block size (tests make it small)
  };
  explicit BundleWriter(std::string prefix) : BundleWriter(std::move(prefix), Options()) {}
  BundleWriter(std::string prefix, Options options);
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  // A concrete tensor under `key` (non-empty, not added before). Its bytes go to a temporary
  // data file now; nothing is visible under the prefix until finish().
  void add(const std::string& key, const Tensor& value);
  // Writes the data file, then the index, each atomically. Without finish() (an error, a
  // destroyed writer) the temporary file is removed and the prefix left as it was.
  void finish();

 private:
  struct Pending {
    DType dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t offset, size;
    std::uint32_t crc32c;
  };
  void append(std::string_view bytes);
  std::string prefix_;
  Options options_;
  std::string tmp_data_;
  int fd_ = -1;
  std::uint64_t written_ = 0;
  std::map<std::string, Pending> entries_;
  bool finished_ = false;
};

}  // namespace ef::io
