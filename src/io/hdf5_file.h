#pragma once
// A small RAII layer over the HDF5 C library (Debian's libhdf5, serial build) for Keras' weight
// files. Internal: this header does not include hdf5.h (handles are HDF5's 64-bit hid_t), so
// its users need not see HDF5's macros; only src/io/hdf5*.cpp get HDF5's include folder.
//
// Every failed HDF5 call is an ef::Error naming the file and the object path, with HDF5's own
// innermost message; HDF5's automatic error printing is off. The serial library is not thread
// safe: hold an h5::Lock around everything that touches HDF5 objects (handles included).
//
// Hostile files: only hard links are followed (soft and external links are errors, so a file
// cannot make a lookup loop or reach another file), datasets of rank > 32, of more elements than
// the file could hold (or with a product of dims that overflows), and dtypes other than the ones
// below are errors before anything is allocated.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::io::h5 {

using hid = std::int64_t;

// Serializes HDF5 calls (the serial library keeps global state).
class Lock {
 public:
  Lock();
  ~Lock();
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
};

// One HDF5 identifier, closed by the matching H5*close when the handle goes.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid id) : id_(id) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(o.id_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();

 private:
  hid id_ = -1;
};

struct FileInfo {
  std::string what;         // the file's name in messages
  std::uint64_t size = 0;   // bytes: bounds what a dataset may claim to hold
};

class Group {
 public:
  enum class Order { name, creation };
  // Link names of the members (groups and datasets); at most max_members, else an error. By
  // creation order only where the file tracks it (h5py does not by default): by name otherwise.
  std::vector<std::string> members(std::size_t max_members = 1 << 20, Order order = Order::name) const;
  // Whether a hard link `name` leads to a group / a dataset here (a soft or external link: error).
  bool has_group(const std::string& name) const;
  bool has_dataset(const std::string& name) const;
  bool has(const std::string& name) const { return has_group(name) || has_dataset(name); }
  Group group(const std::string& name) const;  // an error naming the path when missing
  Group create_group(const std::string& name);

  // The dataset as a tensor: float16/32/64, bfloat16 (Keras: opaque 2-byte values with the
  // attribute dtype="bfloat16"), int8/16/32/64, uint8/16/32/64, bool (h5py's enum).
  Tensor read_dataset(const std::string& name) const;
  // Only the dataset's dtype and shape (no data read).
  TensorSpec dataset_spec(const std::string& name) const;
  void write_dataset(const std::string& name, const Tensor& value);

  bool has_attr(const std::string& name) const;
  // A string attribute, fixed or variable length, scalar or 1-D (joined elements are separate
  // entries); nullopt when absent. Non-string attributes are an error.
  std::optional<std::vector<std::string>> string_list_attr(const std::string& name) const;
  std::optional<std::string> string_attr(const std::string& name) const;
  // Writes a scalar variable-length UTF-8 string (h5py's str), a 1-D array of fixed-length byte
  // strings (Keras 2's layer_names), or an array of fixed-length strings (the legacy format).
  void set_string_attr(const std::string& name, const std::string& value);
  void set_fixed_string_array_attr(const std::string& name, const std::vector<std::string>& values);

  const std::string& path() const { return path_; }
  const FileInfo& file() const { return *file_; }

 private:
  friend class File;
  Group(std::shared_ptr<const FileInfo> file, Handle h, std::string path)
      : file_(std::move(file)), h_(std::move(h)), path_(std::move(path)) {}
  std::string child_path(const std::string& name) const;
  // 0 missing, 1 group, 2 dataset, 3 something else; soft/external links are errors.
  int kind_of(const std::string& name) const;
  std::shared_ptr<const FileInfo> file_;
  Handle h_;
  std::string path_;
};

class File {
 public:
  // Reads an existing file / an in-memory image of one (copied: the bytes need not outlive it).
  static File open(const std::string& path);
  static File open_image(std::span<const std::byte> bytes, const std::string& what);
  // A new file in memory (HDF5's core driver); image() gives its bytes, save() writes them to a
  // path atomically (temporary sibling, fsync, rename).
  static File create(const std::string& what);

  Group root() const;
  std::vector<std::byte> image();
  void save(const std::string& path);
  const FileInfo& info() const { return *info_; }
  std::shared_ptr<const FileInfo> info_ptr() const { return info_; }
  hid handle() const { return h_.get(); }

 private:
  File() = default;
  std::shared_ptr<FileInfo> info_;
  Handle h_;
};

// Whether `path` starts with the HDF5 signature (at offset 0; HDF5 also allows 512, 1024, ...).
bool has_signature(const std::string& path);

}  // namespace ef::io::h5

namespace ef::io::h5 {

// A read-only copy of a whole file's groups, datasets (dtype, shape, bytes) and string
// attributes, made by walking the file in a forked child process: libhdf5 1.10 can crash on
// damaged files (it trusts sizes and references it reads), and a crash in the child is an
// ef::Error here. The walk follows hard links only, at most 64 groups deep, each object once.
// Loaders of files from elsewhere read snapshots; the live Group API is for files we make.
class SnapshotGroup {
 public:
  std::vector<std::string> members(std::size_t max_members = 1 << 20) const;
  bool has_group(const std::string& name) const { return groups_.count(name) > 0; }
  bool has_dataset(const std::string& name) const { return datasets_.count(name) > 0; }
  const SnapshotGroup& group(const std::string& name) const;
  TensorSpec dataset_spec(const std::string& name) const;
  Tensor read_dataset(const std::string& name) const;
  bool has_attr(const std::string& name) const { return attrs_.count(name) > 0; }
  std::optional<std::vector<std::string>> string_list_attr(const std::string& name) const;
  std::optional<std::string> string_attr(const std::string& name) const;
  const std::string& path() const { return path_; }
  const FileInfo& file() const { return *file_; }

 private:
  friend struct SnapshotBuilder;
  struct Dataset {
    std::optional<DType> dtype;  // nullopt: a type eagerflow does not read (type_text says which)
    std::string type_text;
    std::vector<std::int64_t> dims;
    std::vector<std::byte> data;
  };
  struct Attr {
    bool is_string = false;
    std::vector<std::string> values;  // strings; for other types, empty when it has no elements
    std::uint64_t elements = 0;
    std::string type_text;
  };
  std::shared_ptr<const FileInfo> file_;
  std::string path_;
  std::map<std::string, SnapshotGroup> groups_;
  std::map<std::string, Dataset> datasets_;
  std::map<std::string, Attr> attrs_;
};

class Snapshot {
 public:
  static Snapshot of_file(const std::string& path);
  static Snapshot of_image(std::span<const std::byte> bytes, const std::string& what);
  const SnapshotGroup& root() const { return *root_; }
  const FileInfo& info() const { return root_->file(); }

 private:
  std::shared_ptr<SnapshotGroup> root_;
};

}  // namespace ef::io::h5
