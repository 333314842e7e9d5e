// TFRecord framing: writing one record, reading a file of them without trusting its lengths.
#include <cstring>
#include <fstream>
#include <iterator>

#include "eagerflow/core/error.h"
#include "eagerflow/summary/event_file.h"

namespace ef::summary {
namespace {

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

}  // namespace

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_u64(out, data.size());
  put_u32(out, mask_crc(crc32c(std::string_view(out.data(), 8))));
  out.append(data);
  put_u32(out, mask_crc(crc32c(data)));
  return out;
}

RecordFile read_records(std::string_view bytes) {
  RecordFile r;
  std::uint64_t pos = 0;
  const std::uint64_t size = bytes.size();
  auto stop = [&](RecordFile::Status s, std::string msg) {
    r.status = s;
    r.message = std::move(msg) + " at byte " + std::to_string(pos);
    r.offset = pos;
    return r;
  };
  while (pos < size) {
    if (size - pos < 12) return stop(RecordFile::Status::truncated, "an incomplete record header");
    const char* h = bytes.data() + pos;
    std::uint64_t len = get_u64(h);
    if (mask_crc(crc32c(std::string_view(h, 8))) != get_u32(h + 8))
      return stop(RecordFile::Status::corrupt, "the length's CRC does not match");
    // Trusted only now, and only as far as the file reaches: nothing is allocated for a
    // length the file does not hold.
    if (len > size - pos - 12) {
      if (len > (std::uint64_t{1} << 40)) return stop(RecordFile::Status::corrupt, "an impossible record length " + std::to_string(len));
      return stop(RecordFile::Status::truncated, "a record of " + std::to_string(len) + " bytes that the file does not hold");
    }
    if (size - pos - 12 - len < 4) return stop(RecordFile::Status::truncated, "a record without its data CRC");
    std::string_view data(h + 12, len);
    if (mask_crc(crc32c(data)) != get_u32(h + 12 + len)) return stop(RecordFile::Status::corrupt, "the data's CRC does not match");
    r.records.emplace_back(data);
    pos += 16 + len;
  }
  r.offset = pos;
  return r;
}

RecordFile read_record_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(kFileNotFound, "summary", "cannot open the event file '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return read_records(bytes);
}

}  // namespace ef::summary
