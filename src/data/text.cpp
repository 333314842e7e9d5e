#include "eagerflow/data/text.h"

#include <zlib.h>

#include <filesystem>
#include <memory>
#include <vector>

#include "eagerflow/core/error.h"

namespace ef::data {
namespace fs = std::filesystem;

std::string read_text(const std::string& path, std::size_t max_bytes) {
  // A FIFO would block the open until a writer comes, /dev/zero would never end: only
  // regular files (after symlinks) are read.
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) fail(kFileNotFound, "read_text", "cannot open '" + path + "': no such file");
  if (!fs::is_regular_file(status))
    fail(ErrorCode::failed_precondition, "read_text", "'" + path + "' is not a regular file");
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) fail(ErrorCode::permission_denied, "read_text", "cannot open '" + path + "'");
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(f, gzclose);
  std::string out;
  std::vector<char> buf(1 << 16);
  while (true) {
    int n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()));
    if (n < 0) {
      int err = 0;
      const char* msg = gzerror(f, &err);
      fail(ErrorCode::data_loss, "read_text", "'" + path + "' is damaged: " + (msg ? msg : "read error"));
    }
    if (n == 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
    if (out.size() > max_bytes)
      fail(ErrorCode::resource_exhausted, "read_text",
           "'" + path + "' holds more than " + std::to_string(max_bytes) + " bytes (max_bytes)");
  }
  return out;
}

std::optional<std::string> find_shared_text(const std::string& name) {
  std::error_code ec;
  for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
    for (const char* rel : {"../shared/data/text", "shared/data/text"}) {
      fs::path candidate = p / rel / name;
      if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal().string();
    }
    if (p == p.parent_path()) break;
  }
  return std::nullopt;
}

ByteWindows byte_windows(const std::string& text, std::int64_t context, std::int64_t stride, std::size_t begin,
                         std::size_t end) {
  if (context < 1 || stride < 1) fail("byte_windows", "context and stride must be >= 1");
  end = std::min(end, text.size());
  if (begin > end) fail("byte_windows", "begin is past end");
  std::size_t span = end - begin;
  if (span < static_cast<std::size_t>(context) + 1)
    fail("byte_windows", "the text (" + std::to_string(span) + " bytes) is shorter than one window of " +
                             std::to_string(context) + " bytes plus its target");
  std::int64_t n = static_cast<std::int64_t>((span - static_cast<std::size_t>(context) - 1) / static_cast<std::size_t>(stride)) + 1;
  std::vector<std::int32_t> xs(static_cast<std::size_t>(n * context)), ys(xs.size());
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t t = 0; t < context; ++t) {
      std::size_t at = begin + static_cast<std::size_t>(i * stride + t);
      xs[static_cast<std::size_t>(i * context + t)] = static_cast<unsigned char>(text[at]);
      ys[static_cast<std::size_t>(i * context + t)] = static_cast<unsigned char>(text[at + 1]);
    }
  return {tensor(xs, Shape{n, context}), tensor(ys, Shape{n, context})};
}

}  // namespace ef::data
