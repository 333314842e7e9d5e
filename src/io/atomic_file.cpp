// Whole-file reads and atomic replacement of files; the temporary names writers use, and the
// clean-up of the ones killed writers leave (src/io/atomic_file.h).
#include "io/atomic_file.h"

#include "core/errno_kind.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "eagerflow/core/error.h"
#include "eagerflow/io/safetensors.h"

namespace ef::io {
namespace {

std::string os_error(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

// An ef::Error of errno's kind saying what failed on `path` (read errno before anything can change it).
Error os_failure(const std::string& what, const std::string& path, const std::string& suffix = "") {
  const int e = errno;
  return Error(ef::detail::errno_kind(e), what + " '" + path + "': " + std::strerror(e) + suffix);
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::atomic<bool> g_rename_exchange{true};

std::uint64_t pid_namespace() {
  static const std::uint64_t ns = [] {
    struct stat st {};
    return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<std::uint64_t>(st.st_ino) : std::uint64_t{0};
  }();
  return ns;
}

// The target's name as it appears in temporary names: short names as they are; long ones cut,
// with a hash of the whole name, so that ".<stem>.ef-new-<ns>-<pid>-<n>" fits in NAME_MAX.
std::string stem_of(const std::string& target_name) {
  if (target_name.size() <= 120) return target_name;
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : target_name) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return target_name.substr(0, 80) + "~" + hex;
}

// Digits [at, end) of `s` as a number; nullopt if empty, not digits or too long.
std::optional<std::uint64_t> number(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

}  // namespace

namespace detail {

std::string temp_name(const std::string& target_name, const char* kind) {
  static std::atomic<unsigned> counter{0};
  return "." + stem_of(target_name) + ".ef-" + kind + "-" + std::to_string(pid_namespace()) + "-" +
         std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

std::optional<TempName> parse_temp_name(const std::string& entry, const std::string& target_name) {
  std::string_view e(entry);
  // The current format: ".<stem>.ef-<kind>-<ns>-<pid>-<n>".
  std::string prefix = "." + stem_of(target_name) + ".ef-";
  if (e.substr(0, prefix.size()) == prefix) {
    std::string_view rest = e.substr(prefix.size());
    if (rest.size() < 4 || rest[3] != '-') return std::nullopt;
    std::string kind(rest.substr(0, 3));
    if (kind != "tmp" && kind != "new" && kind != "old") return std::nullopt;
    rest = rest.substr(4);
    std::size_t a = rest.find('-');
    if (a == std::string_view::npos) return std::nullopt;
    std::size_t b = rest.find('-', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    auto ns = number(rest.substr(0, a)), pid = number(rest.substr(a + 1, b - a - 1)), n = number(rest.substr(b + 1));
    if (!ns || !pid || !n || *pid == 0 || *pid > 0x7fffffff) return std::nullopt;
    return TempName{kind, *ns, static_cast<pid_t>(*pid), false};
  }
  // The older format of write_file_atomically: ".<name>.tmp-<pid>-<n>".
  std::string legacy = "." + target_name + ".tmp-";
  if (e.substr(0, legacy.size()) == legacy) {
    std::string_view rest = e.substr(legacy.size());
    std::size_t a = rest.find('-');
    if (a == std::string_view::npos) return std::nullopt;
    auto pid = number(rest.substr(0, a)), n = number(rest.substr(a + 1));
    if (!pid || !n || *pid == 0 || *pid > 0x7fffffff) return std::nullopt;
    return TempName{"tmp", 0, static_cast<pid_t>(*pid), true};
  }
  return std::nullopt;
}

bool writer_is_gone(const TempName& t) {
  if (t.pid == ::getpid()) return false;  // another thread of this process may be writing it
  if (!t.legacy && t.pid_namespace != pid_namespace()) return false;  // a pid we cannot see
  return ::kill(t.pid, 0) != 0 && errno == ESRCH;
}

void remove_orphans(const std::filesystem::path& target) {
  namespace fs = std::filesystem;
  std::string name = target.filename().string();
  if (name.empty()) return;
  fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) return;
  std::vector<std::pair<std::string, TempName>> found;
  while (dirent* d = ::readdir(dir)) {
    if (d->d_name[0] != '.') continue;
    if (auto t = parse_temp_name(d->d_name, name)) found.emplace_back(d->d_name, *t);
  }
  ::closedir(dir);
  for (const auto& [entry, t] : found) {
    if (!writer_is_gone(t)) continue;
    fs::path p = folder / entry;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) continue;
    std::error_code ec;
    if (t.kind == "tmp" && S_ISREG(st.st_mode)) ::unlink(p.c_str());
    else if (t.kind != "tmp" && S_ISDIR(st.st_mode)) fs::remove_all(p, ec);  // (folders a save made)
  }
}


std::filesystem::path checked_file_target(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  if (path.empty()) fail(what, "the path is empty");
  fs::path p(path);
  if (!p.has_filename()) fail(what, "'" + path + "' names a folder, not a file");
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    if (errno == ENOENT) return p;  // a new file (a missing folder is reported when writing)
    fail(ef::detail::errno_kind(errno), what, os_error("cannot use", path));
  }
  if (S_ISLNK(st.st_mode)) {
    // Replace the file the link points to, not the link.
    char* real = ::realpath(p.c_str(), nullptr);
    if (!real) fail(ef::detail::errno_kind(errno), what, os_error("cannot follow the symbolic link", path));
    p = real;
    std::free(real);
    if (::stat(p.c_str(), &st) != 0) fail(ef::detail::errno_kind(errno), what, os_error("cannot use", p.string()));
  }
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a folder"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    fail(what, "'" + path + "' is " + kind + ", not a regular file: cannot replace it (it is unchanged; choose a file path)");
  }
  return p;
}

void sync_folder(const std::filesystem::path& folder) {
  Fd dir;
  dir.fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd >= 0) ::fsync(dir.fd);
}

void set_rename_exchange_enabled(bool on) { g_rename_exchange = on; }
bool rename_exchange_enabled() { return g_rename_exchange; }

}  // namespace detail

void write_file_atomically(const std::string& path, std::span<const std::byte> bytes) {
  namespace fs = std::filesystem;
  fs::path target = detail::checked_file_target(path, "save");
  fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  detail::remove_orphans(target);  // temporary files of writers killed before they renamed them
  fs::path temp = folder / detail::temp_name(target.filename().string(), "tmp");
  Fd file;
  file.fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (file.fd < 0) throw os_failure("cannot create a temporary file in", folder.string());
  auto cleanup_fail = [&](const std::string& why) {
    Error error = os_failure(why, path, " (the previous file, if any, is unchanged)");
    ::close(file.fd);
    file.fd = -1;
    ::unlink(temp.c_str());
    throw error;
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
    Error error = os_failure("cannot close", path, " (the previous file, if any, is unchanged)");
    file.fd = -1;
    ::unlink(temp.c_str());
    throw error;
  }
  file.fd = -1;
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    Error error = os_failure("cannot replace", path, " (the previous file, if any, is unchanged)");
    ::unlink(temp.c_str());
    throw error;
  }
  // The rename itself survives a crash only once the folder is synced.
  detail::sync_folder(folder);
}

std::vector<std::byte> read_file(const std::string& path, std::size_t max_bytes) {
  Fd file;
  if (path.empty()) throw Error("cannot open '': the path is empty");
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused as not a regular
  // file); for regular files the flag changes nothing.
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (file.fd < 0) throw os_failure("cannot open", path);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw os_failure("cannot stat", path);
  if (!S_ISREG(st.st_mode)) throw Error(ErrorCode::failed_precondition, "'" + path + "' is not a regular file");
  auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes)
    throw Error(ErrorCode::resource_exhausted, "'" + path + "' is larger than " + std::to_string(max_bytes) + " bytes");
  std::vector<std::byte> out(size);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(file.fd, out.data() + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw os_failure("cannot read", path);
    }
    if (n == 0) throw Error(ErrorCode::aborted, "'" + path + "' changed size while being read");
    done += static_cast<std::size_t>(n);
  }
  return out;
}

}  // namespace ef::io
