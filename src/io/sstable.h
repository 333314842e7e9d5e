#pragma once
// The sorted-table file TF's tensor bundles use for their `.index` (LevelDB's table layout, as
// tensorflow/core/lib/io/table* describes it): data blocks of prefix-compressed entries with
// restart points, each block followed by a trailer (a compression byte and the masked CRC-32C
// of the block and that byte), a meta-index block, an index block mapping each data block's
// last key to its handle, and a 48-byte footer (two block handles, padding, magic number).
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ef::io::sstable {

using Entries = std::vector<std::pair<std::string, std::string>>;

// The table of `entries` (keys strictly increasing), uncompressed, in blocks of about block_size bytes.
std::string build(const Entries& entries, std::size_t block_size = 256 * 1024);

// Every entry of a table, in order. Throws ef::Error(DATA_LOSS) naming `what` when the bytes are
// not a well-formed table: bad footer or magic, handles outside the file, CRC mismatches,
// compressed blocks, malformed entries, keys that are not strictly increasing.
Entries read(std::string_view file, const std::string& what);

}  // namespace ef::io::sstable
