#include "io/zip_archive.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <set>

#include "eagerflow/core/error.h"

namespace ef::io {
namespace {

constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50,
                        kEnd64 = 0x06064b50, kEnd64Locator = 0x07064b50;
constexpr std::uint32_t kMax32 = 0xffffffffu;
constexpr std::uint16_t kZip64Extra = 0x0001;
// A member count no `.keras` file comes near; it bounds the work a hostile directory can ask for.
constexpr std::uint64_t kMaxMembers = 1u << 16;

void put(std::vector<std::byte>& b, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
}

std::uint32_t crc_of(std::span<const std::byte> bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  std::size_t left = bytes.size();
  while (left > 0) {  // zlib's length is a uInt
    uInt chunk = static_cast<uInt>(std::min<std::size_t>(left, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    left -= chunk;
  }
  return static_cast<std::uint32_t>(crc);
}

// A bounds-checked little-endian reader over the archive.
struct Reader {
  std::span<const std::byte> b;
  const std::string& what;
  Error damaged(const std::string& why) const { return Error(ErrorCode::data_loss, what + ": damaged ZIP archive: " + why); }
  std::uint64_t get(std::uint64_t at, int n) const {
    if (at > b.size() || static_cast<std::uint64_t>(n) > b.size() - at) throw damaged("a record runs past the end of the file");
    std::uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::uint64_t>(i)]);
    return v;
  }
  std::span<const std::byte> slice(std::uint64_t at, std::uint64_t n) const {
    if (at > b.size() || n > b.size() - at) throw damaged("a member runs past the end of the file");
    return b.subspan(static_cast<std::size_t>(at), static_cast<std::size_t>(n));
  }
};

std::vector<std::byte> inflate_member(std::span<const std::byte> in, std::uint64_t size, const Reader& r,
                                      const std::string& name) {
  std::vector<std::byte> out(static_cast<std::size_t>(size));
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw Error(r.what + ": zlib could not start inflating '" + name + "'");
  std::size_t in_at = 0, out_at = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    uInt in_chunk = static_cast<uInt>(std::min<std::size_t>(in.size() - in_at, 1u << 30));
    uInt out_chunk = static_cast<uInt>(std::min<std::size_t>(out.size() - out_at, 1u << 30));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + in_at));
    z.avail_in = in_chunk;
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_at);
    z.avail_out = out_chunk;
    // One byte of room past the declared size tells a member longer than declared apart.
    unsigned char spare;
    if (out_chunk == 0) {
      z.next_out = &spare;
      z.avail_out = 1;
    }
    rc = inflate(&z, Z_NO_FLUSH);
    if (out_chunk == 0 && z.avail_out == 0) rc = Z_DATA_ERROR;
    std::size_t used_in = in_chunk - z.avail_in, made = out_chunk == 0 ? 0 : out_chunk - z.avail_out;
    in_at += used_in;
    out_at += made;
    if (rc == Z_OK && used_in == 0 && made == 0) rc = Z_BUF_ERROR;  // no progress: truncated input
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out_at != out.size())
    throw r.damaged("member '" + name + "' does not inflate to its declared " + std::to_string(size) + " bytes");
  return out;
}

}  // namespace

bool looks_like_zip(std::span<const std::byte> bytes) {
  if (bytes.size() < 4) return false;
  auto u = [&](int i) { return static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]); };
  return u(0) == 'P' && u(1) == 'K' && ((u(2) == 3 && u(3) == 4) || (u(2) == 5 && u(3) == 6));
}

std::vector<std::byte> zip_archive(const std::vector<ZipMember>& members) {
  std::vector<std::byte> out, central;
  for (const auto& m : members) {
    if (m.name.empty() || m.name.size() > 0xffff) throw Error("zip_archive: a member needs a name of 1 to 65535 bytes");
    std::uint64_t size = m.bytes.size(), offset = out.size();
    bool big = size >= kMax32 || offset >= kMax32;
    std::uint32_t crc = crc_of(m.bytes);
    // Local header: sizes in a ZIP64 extra field when they do not fit 32 bits.
    put(out, kLocalHeader, 4);
    put(out, big ? 45 : 20, 2);  // version needed (4.5: ZIP64)
    put(out, 0x0800, 2);         // flags: the name is UTF-8
    put(out, 0, 2);              // method: stored
    put(out, 0, 2);
    put(out, 0x21, 2);  // DOS time and date (1980-01-01: reproducible bytes)
    put(out, crc, 4);
    put(out, big ? kMax32 : size, 4);
    put(out, big ? kMax32 : size, 4);
    put(out, m.name.size(), 2);
    put(out, big ? 20 : 0, 2);
    for (char c : m.name) out.push_back(static_cast<std::byte>(c));
    if (big) {
      put(out, kZip64Extra, 2);
      put(out, 16, 2);
      put(out, size, 8);
      put(out, size, 8);
    }
    out.insert(out.end(), m.bytes.begin(), m.bytes.end());
    // Its central-directory record.
    put(central, kCentralHeader, 4);
    put(central, big ? 45 : 20, 2);  // made by
    put(central, big ? 45 : 20, 2);
    put(central, 0x0800, 2);
    put(central, 0, 2);
    put(central, 0, 2);
    put(central, 0x21, 2);
    put(central, crc, 4);
    put(central, big ? kMax32 : size, 4);
    put(central, big ? kMax32 : size, 4);
    put(central, m.name.size(), 2);
    put(central, big ? 28 : 0, 2);
    put(central, 0, 2);  // comment
    put(central, 0, 2);  // disk
    put(central, 0, 2);  // internal attributes
    put(central, 0x81a40000u, 4);  // external: a regular file, rw-r--r--
    put(central, big ? kMax32 : offset, 4);
    for (char c : m.name) central.push_back(static_cast<std::byte>(c));
    if (big) {
      put(central, kZip64Extra, 2);
      put(central, 24, 2);
      put(central, size, 8);
      put(central, size, 8);
      put(central, offset, 8);
    }
  }
  std::uint64_t dir_at = out.size(), dir_size = central.size(), count = members.size();
  out.insert(out.end(), central.begin(), central.end());
  bool big = dir_at >= kMax32 || count >= 0xffff;
  if (big) {
    std::uint64_t end64_at = out.size();
    put(out, kEnd64, 4);
    put(out, 44, 8);
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, count, 8);
    put(out, count, 8);
    put(out, dir_size, 8);
    put(out, dir_at, 8);
    put(out, kEnd64Locator, 4);
    put(out, 0, 4);
    put(out, end64_at, 8);
    put(out, 1, 4);
  }
  put(out, kEnd, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, big ? 0xffff : count, 2);
  put(out, big ? 0xffff : count, 2);
  put(out, big ? kMax32 : dir_size, 4);
  put(out, big ? kMax32 : dir_at, 4);
  put(out, 0, 2);
  return out;
}

std::vector<ZipMember> unzip_archive(std::span<const std::byte> archive, const std::string& what,
                                     std::size_t max_member_bytes) {
  Reader r{archive, what};
  if (!looks_like_zip(archive))
    throw Error(ErrorCode::invalid_argument, what + ": not a ZIP archive (a .keras file is one)");
  // The end record is within the last 22 + 65535 bytes (its comment is at most 65535 bytes).
  if (archive.size() < 22) throw r.damaged("too short for an end-of-directory record");
  std::uint64_t end_at = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t lowest = archive.size() > 22 + 0xffff ? archive.size() - 22 - 0xffff : 0;
  for (std::uint64_t at = archive.size() - 22 + 1; at-- > lowest;)
    if (r.get(at, 4) == kEnd && at + 22 + r.get(at + 20, 2) == archive.size()) {
      end_at = at;
      break;
    }
  if (end_at == std::numeric_limits<std::uint64_t>::max()) throw r.damaged("no end-of-directory record (truncated?)");
  std::uint64_t count = r.get(end_at + 10, 2), dir_size = r.get(end_at + 12, 4), dir_at = r.get(end_at + 16, 4);
  if (r.get(end_at + 4, 2) != 0 || r.get(end_at + 6, 2) != 0) throw r.damaged("archives split over several disks are not supported");
  if (count == 0xffff || dir_size == kMax32 || dir_at == kMax32) {  // ZIP64
    if (end_at < 20 || r.get(end_at - 20, 4) != kEnd64Locator) throw r.damaged("a ZIP64 end record is announced but missing");
    std::uint64_t end64_at = r.get(end_at - 20 + 8, 8);
    if (end64_at > end_at - 20 || r.get(end64_at, 4) != kEnd64) throw r.damaged("the ZIP64 end record is not where its locator says");
    count = r.get(end64_at + 32, 8);
    dir_size = r.get(end64_at + 40, 8);
    dir_at = r.get(end64_at + 48, 8);
  }
  if (count > kMaxMembers) throw r.damaged(std::to_string(count) + " members (at most " + std::to_string(kMaxMembers) + ")");
  if (dir_at > end_at || dir_size > end_at - dir_at) throw r.damaged("the central directory lies outside the file");
  std::vector<ZipMember> members;
  std::set<std::string> names;
  std::uint64_t at = dir_at;
  for (std::uint64_t i = 0; i < count; ++i) {
    if (r.get(at, 4) != kCentralHeader) throw r.damaged("central directory record " + std::to_string(i) + " is damaged");
    std::uint64_t flags = r.get(at + 8, 2), method = r.get(at + 10, 2), crc = r.get(at + 16, 4);
    std::uint64_t packed = r.get(at + 20, 4), size = r.get(at + 24, 4), offset = r.get(at + 42, 4);
    std::uint64_t name_len = r.get(at + 28, 2), extra_len = r.get(at + 30, 2), comment_len = r.get(at + 32, 2);
    auto name_bytes = r.slice(at + 46, name_len);
    std::string name(reinterpret_cast<const char*>(name_bytes.data()), name_bytes.size());
    // ZIP64: the fields that read 0xffffffff are in the extra field, in this order.
    for (std::uint64_t e = at + 46 + name_len, e_end = e + extra_len; e + 4 <= e_end;) {
      std::uint64_t id = r.get(e, 2), len = r.get(e + 2, 2);
      if (e + 4 + len > e_end) throw r.damaged("member '" + name + "' has a damaged extra field");
      if (id == kZip64Extra) {
        std::uint64_t p = e + 4, p_end = p + len;
        auto next = [&]() {
          if (p + 8 > p_end) throw r.damaged("member '" + name + "' has a short ZIP64 field");
          std::uint64_t v = r.get(p, 8);
          p += 8;
          return v;
        };
        if (size == kMax32) size = next();
        if (packed == kMax32) packed = next();
        if (offset == kMax32) offset = next();
      }
      e += 4 + len;
    }
    at += 46 + name_len + extra_len + comment_len;
    if (flags & 0x1) throw Error(ErrorCode::unimplemented, what + ": member '" + name + "' is encrypted");
    if (method != 0 && method != 8)
      throw Error(ErrorCode::unimplemented, what + ": member '" + name + "' uses compression method " + std::to_string(method) +
                                                " (stored and deflated members are read)");
    if (!names.insert(name).second) throw r.damaged("member '" + name + "' appears twice");
    if (size > max_member_bytes)
      throw r.damaged("member '" + name + "' declares " + std::to_string(size) + " bytes (at most " +
                      std::to_string(max_member_bytes) + ")");
    // Deflate expands at most ~1032x; a declared size beyond that of its packed bytes is a lie.
    if (method == 8 && size > packed * 1032 + 64) throw r.damaged("member '" + name + "' declares an impossible size");
    if (method == 0 && size != packed) throw r.damaged("stored member '" + name + "' has two different sizes");
    if (r.get(offset, 4) != kLocalHeader) throw r.damaged("member '" + name + "' has no local header where the directory says");
    std::uint64_t data_at = offset + 30 + r.get(offset + 26, 2) + r.get(offset + 28, 2);
    auto data = r.slice(data_at, packed);
    std::vector<std::byte> bytes = method == 0 ? std::vector<std::byte>(data.begin(), data.end())
                                               : inflate_member(data, size, r, name);
    if (crc_of(bytes) != crc) throw r.damaged("member '" + name + "' does not match its CRC-32");
    members.push_back({std::move(name), std::move(bytes)});
  }
  return members;
}

}  // namespace ef::io
