// TF's tensor bundle (see include/eagerflow/io/tensor_bundle.h): the index is a sorted table
// (sstable.h) of BundleEntryProtos under the tensors' keys and a BundleHeaderProto under "".
#include "eagerflow/io/tensor_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "atomic_file.h"
#include "eagerflow/core/error.h"
#include "eagerflow/core/string_tensor.h"
#include "eagerflow/io/safetensors.h"
#include "eagerflow/summary/event_file.h"
#include "proto_wire.h"
#include "sstable.h"
#include "tf_dtype.h"

namespace ef::io {
namespace {

constexpr std::size_t kMaxIndexBytes = std::size_t{1} << 30;
constexpr int kMaxRank = 64;

[[noreturn]] void data_loss(const std::string& message) { fail(ErrorCode::data_loss, "checkpoint", message); }

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::string os_error() { return std::strerror(errno); }

// TensorShapeProto: dims (field 2, each with size as field 1); unknown_rank (3) is refused.
std::vector<std::int64_t> parse_shape(std::string_view bytes, const std::string& what) {
  wire::Reader r(bytes, what);
  std::vector<std::int64_t> dims;
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field == 2) {
      r.expect(type, wire::kLengthDelimited, "shape.dim");
      wire::Reader d(r.length_delimited(), what);
      std::int64_t size = 0;
      while (!d.done()) {
        auto [f, t] = d.tag();
        if (f == 1) {
          d.expect(t, wire::kVarint, "shape.dim.size");
          size = static_cast<std::int64_t>(d.varint());
        } else {
          d.skip(t);
        }
      }
      if (size < 0) r.bad("a dimension of size " + std::to_string(size));
      if (dims.size() >= kMaxRank) r.bad("a shape of more than 64 dimensions");
      dims.push_back(size);
    } else if (field == 3) {
      r.expect(type, wire::kVarint, "shape.unknown_rank");
      if (r.varint() != 0) r.bad("a shape of unknown rank");
    } else {
      r.skip(type);
    }
  }
  return dims;
}

std::string encode_shape(const std::vector<std::int64_t>& dims) {
  std::string out;
  for (auto d : dims) {
    std::string dim;
    if (d != 0) wire::put_varint_field(dim, 1, static_cast<std::uint64_t>(d));
    wire::put_bytes_field(out, 2, dim);
  }
  return out;
}

// The element count of `dims`, or nullopt past 2^62 (no file holds that).
std::optional<std::uint64_t> element_count(const std::vector<std::int64_t>& dims) {
  std::uint64_t n = 1;
  for (auto d : dims) {
    if (d == 0) return 0;
    if (n > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(d)) return std::nullopt;
    n *= static_cast<std::uint64_t>(d);
  }
  return n;
}

void check_header(std::string_view bytes, const std::string& what) {
  wire::Reader r(bytes, what);
  std::uint64_t shards = 1, endianness = 0;
  while (!r.done()) {
    auto [field, type] = r.tag();
    if (field == 1) {
      r.expect(type, wire::kVarint, "header.num_shards");
      shards = r.varint();
    } else if (field == 2) {
      r.expect(type, wire::kVarint, "header.endianness");
      endianness = r.varint();
    } else {
      r.skip(type);
    }
  }
  if (endianness != 0)
    fail(ErrorCode::unimplemented, "checkpoint",
         what + ": a big-endian checkpoint (eagerflow reads little-endian ones)");
  if (shards != 1)
    fail(ErrorCode::unimplemented, "checkpoint",
         what + ": a checkpoint of " + std::to_string(shards) +
             " data shards (eagerflow reads single-shard checkpoints, as TF writes on one machine)");
}

// A string length as the CRC of a string tensor's lengths counts it: 4 little-endian bytes when
// it fits (what older checkpoints wrote), 8 otherwise.
std::uint32_t extend_length(std::uint32_t crc, std::uint64_t len) {
  std::string le;
  if (len <= 0xffffffffu) wire::put_fixed32(le, static_cast<std::uint32_t>(len));
  else wire::put_fixed64(le, len);
  return summary::crc32c(le, crc);
}

std::string describe(const std::string& prefix) { return "checkpoint " + bundle_index_path(prefix); }

}  // namespace

std::string bundle_index_path(const std::string& prefix) { return prefix + ".index"; }
std::string bundle_data_path(const std::string& prefix) { return prefix + ".data-00000-of-00001"; }

bool is_tensor_bundle(const std::string& prefix) {
  std::error_code ec;
  auto path = bundle_index_path(prefix);
  auto size = std::filesystem::file_size(path, ec);
  if (ec || size < 48) return false;
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  char magic[8];
  if (f.fd < 0 || ::pread(f.fd, magic, 8, static_cast<off_t>(size - 8)) != 8) return false;
  return wire::get_fixed64(magic) == 0xdb4775248b80fb57ull;
}

BundleReader::BundleReader(const std::string& prefix) : prefix_(prefix) {
  const std::string index_path = bundle_index_path(prefix);
  const std::string what = describe(prefix);
  std::error_code ec;
  if (!std::filesystem::exists(index_path, ec))
    fail(kFileNotFound, "checkpoint",
         "Unsuccessful TensorSliceReader constructor: Failed to find any matching files for " + prefix + " (no " +
             index_path + ")");
  auto bytes = read_file(index_path, kMaxIndexBytes);
  std::string_view file(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  auto table = sstable::read(file, what);
  if (table.empty() || !table.front().first.empty()) data_loss(what + ": the index has no header entry");
  check_header(table.front().second, what + " (header)");

  const std::string data_path = bundle_data_path(prefix);
  struct stat st {};
  if (::stat(data_path.c_str(), &st) != 0)
    fail(ErrorCode::data_loss, "checkpoint", what + ": its data file " + data_path + " cannot be read: " + os_error());
  data_size_ = static_cast<std::uint64_t>(st.st_size);

  for (std::size_t i = 1; i < table.size(); ++i) {
    const auto& [key, value] = table[i];
    const std::string ewhat = what + " (entry \"" + key.substr(0, 200) + "\")";
    wire::Reader r(value, ewhat);
    Entry e;
    std::uint64_t code = 0, shard = 0;
    bool sliced = false;
    while (!r.done()) {
      auto [field, type] = r.tag();
      switch (field) {
        case 1:
          r.expect(type, wire::kVarint, "dtype");
          code = r.varint();
          break;
        case 2:
          r.expect(type, wire::kLengthDelimited, "shape");
          e.shape = parse_shape(r.length_delimited(), ewhat);
          break;
        case 3:
          r.expect(type, wire::kVarint, "shard_id");
          shard = r.varint();
          break;
        case 4:
          r.expect(type, wire::kVarint, "offset");
          e.offset = r.varint();
          break;
        case 5:
          r.expect(type, wire::kVarint, "size");
          e.size = r.varint();
          break;
        case 6:
          r.expect(type, wire::kFixed32, "crc32c");
          e.crc32c = summary::unmask_crc(r.fixed32());
          break;
        case 7:
          r.skip(type);
          sliced = true;
          break;
        default: r.skip(type);
      }
    }
    if (sliced)
      fail(ErrorCode::unimplemented, "checkpoint",
           ewhat + ": a partitioned (sliced) variable, which eagerflow does not read");
    auto dtype = dtype_of_tf_code(code);
    if (!dtype)
      fail(ErrorCode::unimplemented, "checkpoint",
           ewhat + ": TF dtype number " + std::to_string(code) + " is not one eagerflow has");
    e.dtype = *dtype;
    if (shard != 0) data_loss(ewhat + ": shard " + std::to_string(shard) + " of a single-shard checkpoint");
    if (e.offset > data_size_ || e.size > data_size_ - e.offset)
      data_loss(ewhat + ": its bytes [" + std::to_string(e.offset) + ", +" + std::to_string(e.size) +
                ") lie outside the data file of " + std::to_string(data_size_) + " bytes");
    auto n = element_count(e.shape);
    if (!n) data_loss(ewhat + ": a shape of more than 2^62 elements");
    if (e.dtype == DType::string) {
      // each string takes at least its one-byte length; the lengths' CRC 4 more bytes
      if (*n > 0 && (*n > e.size || e.size - *n < 4))
        data_loss(ewhat + ": " + std::to_string(*n) + " strings cannot fit in " + std::to_string(e.size) + " bytes");
    } else if (*n > (std::uint64_t{1} << 62) / size_of(e.dtype) || *n * size_of(e.dtype) != e.size) {
      data_loss(ewhat + ": " + std::to_string(e.size) + " bytes do not hold its shape's elements");
    }
    entries_.emplace(key, std::move(e));
  }
}

std::vector<std::string> BundleReader::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [k, _] : entries_) out.push_back(k);
  return out;
}

const BundleReader::Entry& BundleReader::entry(const std::string& key) const {
  auto it = entries_.find(key);
  if (it == entries_.end()) fail(ErrorCode::not_found, "checkpoint", "Key " + key + " not found in checkpoint");
  return it->second;
}

DType BundleReader::dtype(const std::string& key) const { return entry(key).dtype; }
Shape BundleReader::shape(const std::string& key) const { return Shape(entry(key).shape); }

Tensor BundleReader::read(const std::string& key) const {
  const Entry& e = entry(key);
  const std::string what = describe(prefix_) + " (entry \"" + key.substr(0, 200) + "\")";
  const std::string data_path = bundle_data_path(prefix_);
  Fd f;
  f.fd = ::open(data_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) data_loss(what + ": cannot open " + data_path + ": " + os_error());
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < e.offset + e.size)
    data_loss(what + ": the data file " + data_path + " is shorter than the index says (truncated?)");
  std::string bytes(e.size, '\0');
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = ::pread(f.fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(e.offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) data_loss(what + ": cannot read " + data_path + ": " + (got < 0 ? os_error() : "end of file"));
    done += static_cast<std::size_t>(got);
  }
  const Shape shape(e.shape);
  if (e.dtype != DType::string) {
    if (summary::crc32c(bytes) != e.crc32c) data_loss(what + ": its bytes fail their CRC-32C check (a damaged file)");
    Tensor t = Tensor::empty(e.dtype, shape);
    if (!bytes.empty()) std::memcpy(t.raw_mutable_data(), bytes.data(), bytes.size());
    return t;
  }
  // Strings: varint64 lengths, the masked CRC-32C of the lengths, the bytes.
  const std::uint64_t n = *element_count(e.shape);
  if (n == 0 && bytes.empty()) return StringTensorBuilder().finish(shape);
  wire::Reader r(bytes, what);
  std::vector<std::uint64_t> lengths(n);
  std::uint32_t crc = 0;
  std::uint64_t total = 0;
  for (auto& len : lengths) {
    len = r.varint();
    if (len > r.left()) r.bad("a string length of " + std::to_string(len) + " runs past the entry");
    total += len;
    crc = extend_length(crc, len);
  }
  auto length_crc = r.bytes(4);
  if (summary::unmask_crc(wire::get_fixed32(length_crc.data())) != crc)
    r.bad("the string lengths fail their CRC-32C check (a damaged file)");
  crc = summary::crc32c(length_crc, crc);
  if (total != r.left()) r.bad("the string lengths do not add up to the entry's size");
  StringTensorBuilder builder(static_cast<std::size_t>(n));
  for (auto len : lengths) {
    auto s = r.bytes(static_cast<std::size_t>(len));
    crc = summary::crc32c(s, crc);
    builder.append(s);
  }
  if (crc != e.crc32c) data_loss(what + ": its bytes fail their CRC-32C check (a damaged file)");
  return std::move(builder).finish(shape);
}

BundleWriter::BundleWriter(std::string prefix, Options options) : prefix_(std::move(prefix)), options_(options) {
  if (prefix_.empty()) fail("checkpoint", "BundleWriter: an empty prefix");
  std::filesystem::path data(bundle_data_path(prefix_));
  std::filesystem::path folder = data.has_parent_path() ? data.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  detail::remove_orphans(data);
  tmp_data_ = (folder / detail::temp_name(data.filename().string(), "tmp")).string();
  fd_ = ::open(tmp_data_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(ErrorCode::permission_denied, "checkpoint", "cannot create " + tmp_data_ + ": " + os_error());
}

BundleWriter::~BundleWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_) ::unlink(tmp_data_.c_str());
}

void BundleWriter::append(std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(ErrorCode::data_loss, "checkpoint", "cannot write " + tmp_data_ + ": " + os_error());
    done += static_cast<std::size_t>(n);
  }
  written_ += bytes.size();
}

void BundleWriter::add(const std::string& key, const Tensor& value) {
  if (finished_) fail(ErrorCode::failed_precondition, "checkpoint", "BundleWriter::add after finish()");
  if (key.empty()) fail("checkpoint", "BundleWriter::add: an empty key (the index keeps its header there)");
  if (entries_.count(key))
    fail(ErrorCode::already_exists, "checkpoint", "BundleWriter::add: key " + key + " added twice");
  if (!value.defined() || value.is_symbolic())
    fail("checkpoint", "BundleWriter::add: " + key + " is not a concrete tensor");
  Pending p{value.dtype(), {}, written_, 0, 0};
  for (int i = 0; i < value.shape().rank(); ++i) p.shape.push_back(value.shape()[i]);
  if (value.dtype() == DType::string) {
    auto strings = string_values(value);
    std::string head;
    std::uint32_t crc = 0;
    for (const auto& s : strings) {
      wire::put_varint(head, s.size());
      crc = extend_length(crc, s.size());
    }
    std::string check;
    wire::put_fixed32(check, summary::mask_crc(crc));
    crc = summary::crc32c(check, crc);
    append(head);
    append(check);
    for (const auto& s : strings) {
      crc = summary::crc32c(s, crc);
      append(s);
    }
    p.crc32c = crc;
  } else {
    std::string_view bytes(static_cast<const char*>(value.raw_data()), value.nbytes());
    p.crc32c = summary::crc32c(bytes);
    append(bytes);
  }
  p.size = written_ - p.offset;
  entries_.emplace(key, std::move(p));
}

void BundleWriter::finish() {
  if (finished_) fail(ErrorCode::failed_precondition, "checkpoint", "BundleWriter::finish called twice");
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    fail(ErrorCode::data_loss, "checkpoint", "cannot sync " + tmp_data_ + ": " + os_error());
  }
  fd_ = -1;
  sstable::Entries table;
  std::string header;
  wire::put_varint_field(header, 1, 1);  // num_shards
  std::string version;
  wire::put_varint_field(version, 1, 1);  // producer: the bundle format's version 1
  wire::put_bytes_field(header, 3, version);
  table.emplace_back("", header);
  for (const auto& [key, p] : entries_) {
    std::string e;
    wire::put_varint_field(e, 1, static_cast<std::uint64_t>(tf_dtype_code(p.dtype)));
    wire::put_bytes_field(e, 2, encode_shape(p.shape));
    if (p.offset) wire::put_varint_field(e, 4, p.offset);
    if (p.size) wire::put_varint_field(e, 5, p.size);
    wire::put_tag(e, 6, wire::kFixed32);
    wire::put_fixed32(e, summary::mask_crc(p.crc32c));
    table.emplace_back(key, std::move(e));
  }
  std::string index = sstable::build(table, options_.index_block_size);
  const std::string data_path = bundle_data_path(prefix_);
  if (::rename(tmp_data_.c_str(), data_path.c_str()) != 0)
    fail(ErrorCode::permission_denied, "checkpoint",
         "cannot rename " + tmp_data_ + " to " + data_path + ": " + os_error());
  finished_ = true;
  write_file_atomically(bundle_index_path(prefix_),
                        std::span<const std::byte>(reinterpret_cast<const std::byte*>(index.data()), index.size()));
}

}  // namespace ef::io
