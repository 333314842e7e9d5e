// LevelDB's table layout for TF's bundle index: see sstable.h. Written from the format's
// description (block entries, restarts, trailers, footer); reading checks every offset and
// length against the file before using it.
#include "sstable.h"

#include "eagerflow/core/error.h"
#include "eagerflow/summary/event_file.h"
#include "proto_wire.h"

namespace ef::io::sstable {
namespace {

constexpr std::uint64_t kMagic = 0xdb4775248b80fb57ull;
constexpr std::size_t kFooterSize = 48;  // two handles padded to 40 bytes, then the magic
constexpr std::size_t kTrailerSize = 5;  // compression type byte + masked CRC-32C
constexpr int kRestartInterval = 16;
constexpr std::size_t kMaxKeyBytes = 1 << 20;  // a bundle's keys are variable paths: far shorter

class BlockBuilder {
 public:
  void add(const std::string& key, const std::string& value) {
    std::size_t shared = 0;
    if (count_ % kRestartInterval == 0) {
      restarts_.push_back(static_cast<std::uint32_t>(buf_.size()));
    } else {
      while (shared < key.size() && shared < last_.size() && key[shared] == last_[shared]) ++shared;
    }
    wire::put_varint(buf_, shared);
    wire::put_varint(buf_, key.size() - shared);
    wire::put_varint(buf_, value.size());
    buf_.append(key, shared, std::string::npos);
    buf_.append(value);
    last_ = key;
    ++count_;
  }
  std::size_t size() const { return buf_.size() + 4 * restarts_.size() + 4; }
  bool empty() const { return count_ == 0; }
  const std::string& last_key() const { return last_; }
  std::string finish() {
    if (restarts_.empty()) restarts_.push_back(0);
    std::string out = std::move(buf_);
    for (auto r : restarts_) wire::put_fixed32(out, r);
    wire::put_fixed32(out, static_cast<std::uint32_t>(restarts_.size()));
    *this = BlockBuilder();
    return out;
  }

 private:
  std::string buf_, last_;
  std::vector<std::uint32_t> restarts_;
  int count_ = 0;
};

std::string handle(std::uint64_t offset, std::uint64_t size) {
  std::string h;
  wire::put_varint(h, offset);
  wire::put_varint(h, size);
  return h;
}

// Appends a block and its trailer to `file`; returns the block's handle.
std::string emit(std::string& file, const std::string& contents) {
  std::uint64_t offset = file.size();
  file += contents;
  const char type = 0;  // uncompressed
  file.push_back(type);
  std::uint32_t crc = summary::crc32c(std::string_view(&type, 1), summary::crc32c(contents));
  wire::put_fixed32(file, summary::mask_crc(crc));
  return handle(offset, contents.size());
}

struct Handle {
  std::uint64_t offset = 0, size = 0;
};

Handle decode_handle(wire::Reader& r) {
  Handle h;
  h.offset = r.varint();
  h.size = r.varint();
  return h;
}

// The contents of the block at `h`, its trailer checked.
std::string_view block_at(std::string_view file, Handle h, const std::string& what, const char* which) {
  const std::uint64_t end = file.size() - kFooterSize;
  if (h.offset > end || h.size > end - h.offset || kTrailerSize > end - h.offset - h.size)
    fail(ErrorCode::data_loss, "checkpoint",
         what + ": the " + which + " block's handle (offset " + std::to_string(h.offset) + ", size " +
             std::to_string(h.size) + ") lies outside the file of " + std::to_string(file.size()) + " bytes");
  std::string_view contents = file.substr(h.offset, h.size);
  const char type = file[h.offset + h.size];
  std::uint32_t stored = wire::get_fixed32(file.data() + h.offset + h.size + 1);
  std::uint32_t actual = summary::crc32c(std::string_view(&type, 1), summary::crc32c(contents));
  if (summary::unmask_crc(stored) != actual)
    fail(ErrorCode::data_loss, "checkpoint",
         what + ": the " + which + " block at offset " + std::to_string(h.offset) + " fails its CRC-32C check");
  if (type != 0)
    fail(ErrorCode::data_loss, "checkpoint",
         what + ": the " + which + " block is compressed (type " + std::to_string(static_cast<int>(type)) +
             "); eagerflow reads the uncompressed tables TF's checkpoints use");
  return contents;
}

// Appends a block's entries to `out`, keys strictly after `last` (and after each other).
void parse_block(std::string_view contents, const std::string& what, const char* which, Entries& out,
                 std::size_t& budget) {
  wire::Reader tail(contents, what);
  if (contents.size() < 4) tail.bad(std::string("a ") + which + " block shorter than its restart count");
  std::uint32_t restarts = wire::get_fixed32(contents.data() + contents.size() - 4);
  if (restarts == 0 || restarts > (contents.size() - 4) / 4)
    tail.bad(std::string("a ") + which + " block's restart count " + std::to_string(restarts) + " does not fit it");
  const std::size_t limit = contents.size() - 4 - 4 * static_cast<std::size_t>(restarts);
  for (std::uint32_t i = 0; i < restarts; ++i) {
    std::uint32_t at = wire::get_fixed32(contents.data() + limit + 4 * i);
    if (at > limit || (limit > 0 && at == limit))
      tail.bad(std::string("a ") + which + " block's restart point " + std::to_string(at) + " lies past its entries");
  }
  wire::Reader r(contents.substr(0, limit), what);
  std::string key;
  bool first = true;
  while (!r.done()) {
    std::uint32_t shared = r.varint32(), non_shared = r.varint32(), value_len = r.varint32();
    if (shared > key.size() || (first && shared != 0))
      r.bad(std::string("a ") + which + " block entry shares " + std::to_string(shared) +
            " bytes with a previous key of " + std::to_string(key.size()));
    auto suffix = r.bytes(non_shared);
    auto value = r.bytes(value_len);
    key.resize(shared);
    key.append(suffix);
    if (key.size() > kMaxKeyBytes) r.bad("a key longer than 1 MiB");
    if (key.size() + value.size() > budget) r.bad("the table's keys expand past any plausible size");
    budget -= key.size() + value.size();
    if (!out.empty() && !(out.back().first < key))
      r.bad("keys out of order (\"" + key.substr(0, 80) + "\" after \"" + out.back().first.substr(0, 80) + "\")");
    out.emplace_back(key, std::string(value));
    first = false;
  }
}

}  // namespace

std::string build(const Entries& entries, std::size_t block_size) {
  std::string file;
  BlockBuilder data, index;
  auto flush = [&] {
    std::string last = data.last_key();
    index.add(last, emit(file, data.finish()));
  };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0 && !(entries[i - 1].first < entries[i].first))
      fail("checkpoint", "sstable::build: keys must be strictly increasing");
    data.add(entries[i].first, entries[i].second);
    if (data.size() >= block_size) flush();
  }
  if (!data.empty()) flush();
  std::string meta = emit(file, BlockBuilder().finish());
  std::string idx = emit(file, index.finish());
  std::string footer = meta + idx;
  footer.resize(kFooterSize - 8, '\0');
  wire::put_fixed64(footer, kMagic);
  return file + footer;
}

Entries read(std::string_view file, const std::string& what) {
  if (file.size() < kFooterSize)
    fail(ErrorCode::data_loss, "checkpoint",
         what + ": " + std::to_string(file.size()) + " bytes is too short for a table (truncated?)");
  std::string_view footer = file.substr(file.size() - kFooterSize);
  if (wire::get_fixed64(footer.data() + kFooterSize - 8) != kMagic)
    fail(ErrorCode::data_loss, "checkpoint", what + ": not a TensorFlow checkpoint index (bad magic number)");
  wire::Reader fr(footer.substr(0, kFooterSize - 8), what);
  decode_handle(fr);  // the meta-index block: bundles store nothing there
  Handle index_handle = decode_handle(fr);
  std::size_t budget = 64 * file.size() + (64u << 20);
  Entries index;
  parse_block(block_at(file, index_handle, what, "index"), what, "index", index, budget);
  Entries out;
  for (const auto& [last_key, value] : index) {
    wire::Reader hr(value, what);
    Handle h = decode_handle(hr);
    if (!hr.done()) hr.bad("an index entry has bytes after its block handle");
    parse_block(block_at(file, h, what, "data"), what, "data", out, budget);
    if (!out.empty() && last_key < out.back().first)
      fail(ErrorCode::data_loss, "checkpoint", what + ": an index key is below the keys of its block");
  }
  return out;
}

}  // namespace ef::io::sstable
