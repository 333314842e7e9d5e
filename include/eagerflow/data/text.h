#pragma once
// Text for language models: a file's bytes (gzip or plain) and next-byte training windows.
#include <cstdint>
#include <optional>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::data {

// The whole (decompressed) file as bytes. Only regular files; more than `max_bytes` after
// decompression is an ef::Error (a decompression bomb stops early), as is a damaged file.
std::string read_text(const std::string& path, std::size_t max_bytes = std::size_t{1} << 30);

// ../shared/data/text/<name> relative to the working directory or one of its parents (where
// the project's shared data lives); empty when not found.
std::optional<std::string> find_shared_text(const std::string& name = "fortunes.txt.gz");

// Byte-level language-model windows over text[begin, end): x [n, context] int32 bytes and y
// [n, context] the next byte of each, windows starting every `stride` bytes.
struct ByteWindows {
  Tensor x, y;
};
ByteWindows byte_windows(const std::string& text, std::int64_t context, std::int64_t stride, std::size_t begin = 0,
                         std::size_t end = std::string::npos);

}  // namespace ef::data
