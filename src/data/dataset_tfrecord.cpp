// The tfrecord source: TF's record files (optionally gzip or zlib streams), read in chunks so a
// file never has to fit in memory and a declared length is trusted only as far as bytes arrive.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <zlib.h>

#include "core/errno_kind.h"
#include "data/dataset_internal.h"
#include "eagerflow/core/string_tensor.h"
#include "eagerflow/summary/event_file.h"

namespace ef::data {
using detail::fail_data;
using detail::Flat;

namespace {

constexpr ErrorKind kDataLoss{ErrorCode::data_loss};

// Bytes of one file, inflated when compressed.
class RecordSource {
 public:
  RecordSource(const std::string& path, RecordCompression c) : path_(path), c_(c) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) {
      const int e = errno;
      fail_data(ef::detail::errno_kind(e), "tfrecord: cannot open " + path + ": " + std::strerror(e));
    }
    if (c_ != RecordCompression::none) {
      std::memset(&z_, 0, sizeof z_);
      // TF's GZIP option writes a gzip stream, ZLIB a zlib one.
      if (inflateInit2(&z_, c_ == RecordCompression::gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK)
        fail_data(ErrorCode::internal, "tfrecord: zlib did not start");
      z_open_ = true;
    }
  }
  ~RecordSource() {
    if (z_open_) inflateEnd(&z_);
    if (f_) std::fclose(f_);
  }
  RecordSource(const RecordSource&) = delete;
  RecordSource& operator=(const RecordSource&) = delete;
  const std::string& path() const { return path_; }

  // Up to n bytes appended to out; fewer only at the end of the data.
  std::size_t read(std::string& out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      if (pos_ == len_ && !fill()) break;
      std::size_t k = std::min(n - got, len_ - pos_);
      out.append(out_.data() + pos_, k);
      pos_ += k;
      got += k;
    }
    return got;
  }

 private:
  bool fill() {
    pos_ = len_ = 0;
    if (c_ == RecordCompression::none) {
      len_ = std::fread(out_.data(), 1, out_.size(), f_);
      if (len_ == 0 && std::ferror(f_)) fail_data(ef::detail::errno_kind(errno), "tfrecord: " + path_ + ": read failed");
      return len_ > 0;
    }
    while (len_ == 0) {
      if (z_.avail_in == 0) {
        std::size_t n = std::fread(in_.data(), 1, in_.size(), f_);
        if (n == 0) {
          // A stream cut off mid-way (an empty file, or one ending after a whole stream, is fine).
          if (saw_input_ && !z_end_) fail_data(kDataLoss, "tfrecord: " + path_ + ": the compressed stream ends early (truncated file)");
          return false;
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(n);
      }
      if (z_end_) {  // more bytes after a stream: a further gzip member, as gzip's tools allow
        if (inflateReset(&z_) != Z_OK) fail_data(kDataLoss, "tfrecord: " + path_ + ": damaged compressed data");
        z_end_ = false;
      }
      saw_input_ = true;
      z_.next_out = reinterpret_cast<Bytef*>(out_.data());
      z_.avail_out = static_cast<uInt>(out_.size());
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
        fail_data(kDataLoss, "tfrecord: " + path_ + ": damaged compressed data (" + (z_.msg ? z_.msg : "zlib error") + ")");
      len_ = out_.size() - z_.avail_out;
      if (rc == Z_STREAM_END) z_end_ = true;
    }
    return true;
  }

  std::string path_;
  RecordCompression c_;
  std::FILE* f_ = nullptr;
  z_stream z_{};
  bool z_open_ = false, z_end_ = false, saw_input_ = false;
  std::vector<char> in_ = std::vector<char>(1 << 16), out_ = std::vector<char>(1 << 16);
  std::size_t pos_ = 0, len_ = 0;
};

std::uint64_t le64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
std::uint32_t le32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

struct TFRecordNode final : detail::Node {
  std::vector<std::string> files;
  RecordCompression compression;
  TFRecordNode(std::vector<std::string> f, RecordCompression c)
      : Node(ElementSpec{Structure::tensor, {}, {TensorSpec{DType::string, Shape{}, {}}}}), files(std::move(f)), compression(c) {}
  std::int64_t cardinality() const override { return files.empty() ? 0 : kUnknownCardinality; }
  std::unique_ptr<detail::IteratorImpl> iterate() const override {
    struct It final : detail::IteratorImpl {
      const TFRecordNode* node;
      std::size_t file = 0;
      std::unique_ptr<RecordSource> r;
      std::uint64_t offset = 0;  // of the record being read, in the (inflated) stream
      std::string buf;
      bool next(Flat& out) override {
        for (;;) {
          if (!r) {
            if (file >= node->files.size()) return false;
            r = std::make_unique<RecordSource>(node->files[file++], node->compression);
            offset = 0;
          }
          buf.clear();
          std::size_t n = r->read(buf, 12);
          if (n == 0) {
            r.reset();
            continue;
          }
          if (n < 12) loss("truncated record");
          std::uint64_t len = le64(buf.data());
          if (summary::mask_crc(summary::crc32c(std::string_view(buf.data(), 8))) != le32(buf.data() + 8))
            loss("corrupted record");
          buf.clear();
          // Grown as the bytes arrive: a damaged length cannot make a huge allocation.
          constexpr std::uint64_t kChunk = 1 << 20;
          for (std::uint64_t got = 0; got < len;) {
            std::uint64_t want = std::min(kChunk, len - got);
            std::size_t k = r->read(buf, static_cast<std::size_t>(want));
            got += k;
            if (k < want) loss("truncated record");
          }
          std::string footer;
          if (r->read(footer, 4) < 4) loss("truncated record");
          if (summary::mask_crc(summary::crc32c(buf)) != le32(footer.data())) loss("corrupted record");
          offset += 16 + len;
          out.clear();
          out.push_back(ef::string_scalar(buf));
          return true;
        }
      }
      // TF's DATA_LOSS messages ("corrupted record at N", "truncated record at N").
      [[noreturn]] void loss(const char* what) const {
        fail_data(kDataLoss, std::string(what) + " at " + std::to_string(offset) + " in " + r->path());
      }
    };
    auto it = std::make_unique<It>();
    it->node = this;
    return it;
  }
};

}  // namespace

Dataset Dataset::tfrecord(std::vector<std::string> files, RecordCompression compression) {
  for (const auto& f : files) {
    std::error_code ec;
    if (!std::filesystem::exists(f, ec)) fail_data(kFileNotFound, "tfrecord: " + f + " does not exist");
    if (!std::filesystem::is_regular_file(f, ec))
      fail_data(ErrorCode::failed_precondition, "tfrecord: " + f + " is not a regular file");
  }
  return Dataset(std::make_shared<TFRecordNode>(std::move(files), compression));
}

}  // namespace ef::data
