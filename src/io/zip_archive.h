#pragma once
// ZIP archives as Keras' `.keras` files use them: a few members, written uncompressed ("stored",
// as Keras writes them), read stored or deflated (zlib), ZIP64 records both ways for members over
// 4 GiB. Reading never trusts the archive: every offset and size is checked against the bytes
// there are, a member's CRC-32 is verified, and a member may not inflate past `max_member_bytes`
// (a zip bomb is an ef::Error, not an allocation).
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ef::io {

struct ZipMember {
  std::string name;
  std::vector<std::byte> bytes;
};

// The archive holding `members` in that order.
std::vector<std::byte> zip_archive(const std::vector<ZipMember>& members);

// Whether `bytes` start like a ZIP archive ("PK\3\4", or the empty archive's "PK\5\6").
bool looks_like_zip(std::span<const std::byte> bytes);

// The members of the archive, in the order of its central directory. `what` names the file in
// errors (ef::Error, kind data_loss for a damaged archive, invalid_argument for a non-archive).
std::vector<ZipMember> unzip_archive(std::span<const std::byte> archive, const std::string& what,
                                     std::size_t max_member_bytes = std::size_t{1} << 36);

}  // namespace ef::io
