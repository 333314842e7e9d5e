// Whole-file reads and atomic replacement of files.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "eagerflow/core/error.h"
#include "eagerflow/io/safetensors.h"

namespace ef::io {
namespace {

std::string os_error(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void write_file_atomically(const std::string& path, std::span<const std::byte> bytes) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  static std::atomic<unsigned> counter{0};
  fs::path temp = folder / ("." + target.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                            std::to_string(counter.fetch_add(1)));
  Fd file;
  file.fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (file.fd < 0) throw Error(os_error("cannot create a temporary file in", folder.string()));
  auto cleanup_fail = [&](const std::string& why) {
    std::string message = os_error(why, path);
    ::close(file.fd);
    file.fd = -1;
    ::unlink(temp.c_str());
    throw Error(message + " (the previous file, if any, is unchanged)");
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      cleanup_fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(file.fd) != 0) cleanup_fail("cannot sync");
  if (::close(file.fd) != 0) {
    file.fd = -1;
    ::unlink(temp.c_str());
    throw Error(os_error("cannot close", path) + " (the previous file, if any, is unchanged)");
  }
  file.fd = -1;
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    std::string message = os_error("cannot replace", path);
    ::unlink(temp.c_str());
    throw Error(message + " (the previous file, if any, is unchanged)");
  }
  // The rename itself survives a crash only once the folder is synced.
  Fd dir;
  dir.fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd >= 0) ::fsync(dir.fd);
}

std::vector<std::byte> read_file(const std::string& path, std::size_t max_bytes) {
  Fd file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) throw Error(os_error("cannot open", path));
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw Error(os_error("cannot stat", path));
  if (!S_ISREG(st.st_mode)) throw Error("'" + path + "' is not a regular file");
  auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes) throw Error("'" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
  std::vector<std::byte> out(size);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(file.fd, out.data() + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(os_error("cannot read", path));
    }
    if (n == 0) throw Error("'" + path + "' changed size while being read");
    done += static_cast<std::size_t>(n);
  }
  return out;
}

}  // namespace ef::io
