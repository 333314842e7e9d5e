#include "io/hdf5_file.h"

#include <hdf5.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <set>
#include <limits>
#include <type_traits>

#include "eagerflow/core/error.h"
#include "eagerflow/io/safetensors.h"

namespace ef::io::h5 {

static_assert(std::is_same_v<hid_t, hid>, "hid_t is a 64-bit integer since HDF5 1.10");

namespace {

constexpr int kMaxRank = 32;
// A dataset whose filters (compression) make it smaller on disk may still claim at most this
// many bytes: deflate's best ratio is about 1:1032.
constexpr std::uint64_t kMaxFilterRatio = 1100;
constexpr std::uint64_t kMaxStringAttr = std::uint64_t{1} << 30;

std::recursive_mutex& hdf5_mutex() {
  static std::recursive_mutex m;
  return m;
}

// HDF5's innermost error message (the one nearest to what went wrong), then clears the stack.
herr_t walk_error(unsigned n, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::string*>(data);
  if (n == 0 && err && err->desc) *out = err->desc;
  return 0;
}
std::string hdf5_detail() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_error, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail.empty() ? "" : " (HDF5: " + detail + ")";
}

[[noreturn]] void fail_at(const FileInfo& f, const std::string& path, const std::string& message,
                          ErrorKind kind = ErrorCode::data_loss) {
  throw Error(kind, f.what + ": " + (path.empty() ? "" : "'" + path + "': ") + message);
}
[[noreturn]] void fail_hdf5(const FileInfo& f, const std::string& path, const std::string& call) {
  fail_at(f, path, call + " failed" + hdf5_detail());
}

void init_library() {
  static bool done = [] {
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors become ef::Errors, not stderr noise
    return true;
  }();
  (void)done;
}

hid_t checked(hid_t id, const FileInfo& f, const std::string& path, const char* call) {
  if (id < 0) fail_hdf5(f, path, call);
  return id;
}
void checked(herr_t r, const FileInfo& f, const std::string& path, const char* call, int) {
  if (r < 0) fail_hdf5(f, path, call);
}

// A 2-byte IEEE half (1 sign, 5 exponent, 10 mantissa bits) in native order: h5py's float16.
Handle half_type() {
  hid_t t = H5Tcopy(H5T_NATIVE_FLOAT);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  H5Tset_precision(t, 16);
  return Handle(t);
}

// h5py's bool: an enum over int8 with FALSE = 0, TRUE = 1.
Handle bool_type() {
  hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
  std::int8_t f = 0, tr = 1;
  H5Tenum_insert(t, "FALSE", &f);
  H5Tenum_insert(t, "TRUE", &tr);
  return Handle(t);
}

// The memory type eagerflow keeps `d` in (not for bfloat16, which is opaque bytes).
Handle memory_type(DType d) {
  switch (d) {
    case DType::float32: return Handle(H5Tcopy(H5T_NATIVE_FLOAT));
    case DType::float64: return Handle(H5Tcopy(H5T_NATIVE_DOUBLE));
    case DType::float16: return half_type();
    case DType::int8: return Handle(H5Tcopy(H5T_NATIVE_INT8));
    case DType::int16: return Handle(H5Tcopy(H5T_NATIVE_INT16));
    case DType::int32: return Handle(H5Tcopy(H5T_NATIVE_INT32));
    case DType::int64: return Handle(H5Tcopy(H5T_NATIVE_INT64));
    case DType::uint8: return Handle(H5Tcopy(H5T_NATIVE_UINT8));
    case DType::uint16: return Handle(H5Tcopy(H5T_NATIVE_UINT16));
    case DType::uint32: return Handle(H5Tcopy(H5T_NATIVE_UINT32));
    case DType::uint64: return Handle(H5Tcopy(H5T_NATIVE_UINT64));
    case DType::bool_: return bool_type();
    case DType::bfloat16: {
      hid_t t = H5Tcreate(H5T_OPAQUE, 2);
      return Handle(t);
    }
    default: return Handle();
  }
}

std::string type_text(hid_t t) {
  switch (H5Tget_class(t)) {
    case H5T_INTEGER: return "integer of " + std::to_string(H5Tget_size(t)) + " bytes";
    case H5T_FLOAT: return "float of " + std::to_string(H5Tget_size(t)) + " bytes";
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_OPAQUE: return "opaque of " + std::to_string(H5Tget_size(t)) + " bytes";
    case H5T_ARRAY: return "array";
    case H5T_VLEN: return "variable-length sequence";
    case H5T_REFERENCE: return "reference";
    default: return "unknown type";
  }
}

// Whether `obj` has a string attribute `name`.
bool has_string_attr(hid_t obj, const char* name, const FileInfo& f, const std::string& path) {
  htri_t exists = H5Aexists(obj, name);
  if (exists < 0) fail_hdf5(f, path, "H5Aexists");
  if (!exists) return false;
  Handle a(checked(H5Aopen(obj, name, H5P_DEFAULT), f, path, "H5Aopen"));
  Handle type(checked(H5Aget_type(a.get()), f, path, "H5Aget_type"));
  return H5Tget_class(type.get()) == H5T_STRING;
}

// The eagerflow dtype of a file type; nullopt when unsupported.
std::optional<DType> dtype_of_file_type(hid_t t, hid_t dataset, const FileInfo& f, const std::string& path) {
  std::size_t size = H5Tget_size(t);
  switch (H5Tget_class(t)) {
    case H5T_FLOAT:
      if (size == 2) return DType::float16;
      if (size == 4) return DType::float32;
      if (size == 8) return DType::float64;
      return std::nullopt;
    case H5T_INTEGER: {
      bool is_signed = H5Tget_sign(t) == H5T_SGN_2;
      if (size == 1) return is_signed ? DType::int8 : DType::uint8;
      if (size == 2) return is_signed ? DType::int16 : DType::uint16;
      if (size == 4) return is_signed ? DType::int32 : DType::uint32;
      if (size == 8) return is_signed ? DType::int64 : DType::uint64;
      return std::nullopt;
    }
    case H5T_ENUM: {  // h5py's bool
      if (size != 1 || H5Tget_nmembers(t) != 2) return std::nullopt;
      char* n0 = H5Tget_member_name(t, 0);
      char* n1 = H5Tget_member_name(t, 1);
      bool ok = n0 && n1 && std::strcmp(n0, "FALSE") == 0 && std::strcmp(n1, "TRUE") == 0;
      H5free_memory(n0);
      H5free_memory(n1);
      if (!ok) return std::nullopt;
      std::int8_t v0 = -1, v1 = -1;
      if (H5Tget_member_value(t, 0, &v0) < 0 || H5Tget_member_value(t, 1, &v1) < 0 || v0 != 0 || v1 != 1) {
        H5Eclear2(H5E_DEFAULT);
        return std::nullopt;
      }
      return DType::bool_;
    }
    case H5T_OPAQUE:
      // Keras marks bfloat16 (its only 2-byte opaque data) with a string attribute "dtype"; its
      // value is not read: variable-length strings are costly to read safely (read_vlen_isolated).
      if (size == 2 && has_string_attr(dataset, "dtype", f, path)) return DType::bfloat16;
      return std::nullopt;
    default: return std::nullopt;
  }
}

// True in the forked child that walks a file (Snapshot): it reads variable-length strings
// directly, its crash being the parent's error.
bool in_snapshot_child = false;

bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

// Variable-length strings live in the file's global heap, which libhdf5 1.10 reads without
// checking a damaged heap reference (it reads past its buffers and crashes). They are read in a
// forked child that only calls HDF5 and write(): a crash there is an error here. The child
// sends each string as <u64 length><bytes>.
std::vector<std::string> read_vlen_isolated(hid_t attr, hid_t mem, hid_t space, hsize_t n, const FileInfo& f,
                                            const std::string& path) {
  int fds[2];
  if (::pipe(fds) != 0) fail_at(f, path, "cannot read a variable-length string (pipe failed)", ErrorCode::internal);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail_at(f, path, "cannot read a variable-length string (fork failed)", ErrorCode::internal);
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::vector<char*> ptrs(n, nullptr);
    if (H5Aread(attr, mem, ptrs.data()) < 0) ::_exit(3);
    for (char* p : ptrs) {
      std::uint64_t len = p ? std::strlen(p) : 0;
      if (!write_all(fds[1], &len, 8) || (len && !write_all(fds[1], p, len))) ::_exit(4);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string data;
  char buf[65536];
  bool too_long = false;
  bool timed_out = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    // A child that loops inside HDF5 on a damaged heap is killed, not waited for forever.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = left > 0 ? ::poll(&pfd, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (data.size() + static_cast<std::size_t>(r) > kMaxStringAttr) {
      too_long = true;
      ::kill(pid, SIGKILL);
      break;
    }
    data.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  (void)space;
  if (too_long) fail_at(f, path, "a variable-length string attribute of more than 1 GiB");
  if (timed_out) fail_at(f, path, "a damaged variable-length string (reading it did not finish in 30 s)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail_at(f, path, WIFSIGNALED(status) ? "a damaged variable-length string (the HDF5 library crashed reading it)"
                                         : "cannot read the variable-length string");
  std::vector<std::string> out;
  std::size_t at = 0;
  for (hsize_t i = 0; i < n; ++i) {
    std::uint64_t len = 0;
    if (data.size() - at < 8) fail_at(f, path, "cannot read the variable-length string");
    std::memcpy(&len, data.data() + at, 8);
    at += 8;
    if (len > data.size() - at) fail_at(f, path, "cannot read the variable-length string");
    out.emplace_back(data.data() + at, len);
    at += len;
  }
  return out;
}

// Reads a string attribute's elements (fixed or variable length, any rank up to 1).
std::vector<std::string> read_strings(hid_t attr, const FileInfo& f, const std::string& path) {
  Handle type(checked(H5Aget_type(attr), f, path, "H5Aget_type"));
  Handle space(checked(H5Aget_space(attr), f, path, "H5Aget_space"));
  int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 1) fail_at(f, path, "a string attribute of rank " + std::to_string(rank) + " (0 or 1 expected)");
  hsize_t n = 1;
  if (rank == 1) checked(H5Sget_simple_extent_dims(space.get(), &n, nullptr), f, path, "H5Sget_simple_extent_dims", 0);
  if (n > kMaxStringAttr) fail_at(f, path, "a string attribute of " + std::to_string(n) + " elements");
  std::vector<std::string> out;
  // An empty list of names may come as an empty float array (numpy's np.array([]), which
  // Keras writes for a layer without weights).
  if (n == 0 && H5Sget_simple_extent_type(space.get()) != H5S_NULL) return out;
  if (H5Tget_class(type.get()) != H5T_STRING) fail_at(f, path, "is " + type_text(type.get()) + ", not a string");
  if (n == 0) return out;
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1));
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    if (n > f.size) fail_at(f, path, "a string attribute of " + std::to_string(n) + " elements");
    if (!in_snapshot_child) return read_vlen_isolated(attr, mem.get(), space.get(), n, f, path);
    std::vector<char*> ptrs(n, nullptr);
    checked(H5Aread(attr, mem.get(), ptrs.data()), f, path, "H5Aread", 0);
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    H5Dvlen_reclaim(mem.get(), space.get(), H5P_DEFAULT, ptrs.data());
    return out;
  }
  std::size_t size = H5Tget_size(type.get());
  if (size == 0 || size > kMaxStringAttr || n * size > kMaxStringAttr || n * size > f.size + 64)
    fail_at(f, path, "a fixed-length string attribute of " + std::to_string(n) + " x " + std::to_string(size) + " bytes");
  Handle mem(H5Tcopy(H5T_C_S1));
  H5Tset_size(mem.get(), size);
  H5Tset_strpad(mem.get(), H5T_STR_NULLPAD);
  H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
  std::vector<char> buf(n * size);
  checked(H5Aread(attr, mem.get(), buf.data()), f, path, "H5Aread", 0);
  for (hsize_t i = 0; i < n; ++i) {
    const char* s = buf.data() + i * size;
    out.emplace_back(s, strnlen(s, size));
  }
  return out;
}

// Dims of a dataspace, checked: simple, rank <= 32, no overflow of elements * element_size.
std::vector<std::int64_t> checked_dims(hid_t space, std::size_t element_size, bool filtered, const FileInfo& f,
                                       const std::string& path) {
  H5S_class_t cls = H5Sget_simple_extent_type(space);
  if (cls == H5S_NULL) fail_at(f, path, "the dataset has no data (null dataspace)");
  if (cls != H5S_SIMPLE && cls != H5S_SCALAR) fail_at(f, path, "the dataset's dataspace is not simple");
  int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail_hdf5(f, path, "H5Sget_simple_extent_ndims");
  if (rank > kMaxRank) fail_at(f, path, "the dataset has rank " + std::to_string(rank) + " (at most 32 is supported)");
  hsize_t dims[H5S_MAX_RANK];
  if (rank > 0) checked(H5Sget_simple_extent_dims(space, dims, nullptr), f, path, "H5Sget_simple_extent_dims", 0);
  std::vector<std::int64_t> out(rank);
  std::uint64_t bytes = element_size;
  std::uint64_t limit = filtered ? f.size * kMaxFilterRatio : f.size;
  std::string shape_text = "[";
  for (int i = 0; i < rank; ++i) shape_text += (i ? ", " : "") + std::to_string(dims[i]);
  shape_text += "]";
  for (int i = 0; i < rank; ++i) {
    if (dims[i] > static_cast<hsize_t>(std::numeric_limits<std::int64_t>::max()))
      fail_at(f, path, "the dataset's shape " + shape_text + " is too large");
    out[i] = static_cast<std::int64_t>(dims[i]);
    if (dims[i] != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / dims[i])
      fail_at(f, path, "the dataset's shape " + shape_text + " overflows");
    bytes *= dims[i];
  }
  for (int i = 0; i < rank; ++i)
    if (dims[i] == 0) bytes = 0;
  if (bytes > limit)
    fail_at(f, path, "the dataset's shape " + shape_text + " claims " + std::to_string(bytes) +
                         " bytes, more than the file of " + std::to_string(f.size) + " bytes can hold");
  return out;
}

std::uint64_t u64_at(std::span<const std::byte> b, std::size_t at) {
  std::uint64_t v = 0;
  std::memcpy(&v, b.data() + at, 8);
  return v;  // HDF5 stores little-endian; eagerflow runs on little-endian machines
}

// libhdf5 1.10 trusts the object sizes inside a global heap collection (where variable-length
// strings live) and reads past its buffer when one is damaged: every collection ("GCOL",
// version 1) is checked here first, so that such a file is an error rather than a crash.
void check_global_heaps(std::span<const std::byte> b, const FileInfo& f) {
  const std::size_t n = b.size();
  for (std::size_t p = 0; p + 16 <= n; ++p) {
    if (std::memcmp(b.data() + p, "GCOL", 4) != 0 || static_cast<unsigned char>(b[p + 4]) != 1) continue;
    std::uint64_t size = u64_at(b, p + 8);
    if (size < 16 || size > n - p)
      fail_at(f, "", "a global heap collection at byte " + std::to_string(p) + " claims " + std::to_string(size) +
                         " bytes, past the end of the file");
    std::uint64_t end = p + size, off = p + 16;
    while (off + 16 <= end) {
      unsigned idx = static_cast<unsigned>(static_cast<unsigned char>(b[off])) |
                     static_cast<unsigned>(static_cast<unsigned char>(b[off + 1])) << 8;
      std::uint64_t object = u64_at(b, off + 8);
      std::uint64_t room = end - off;
      if (idx == 0) {  // the free space, which ends the collection: its size counts its header
        if (object > room) fail_at(f, "", "a global heap collection at byte " + std::to_string(p) + " is damaged");
        break;
      }
      if (object > room || 16 + ((object + 7) / 8) * 8 > room)
        fail_at(f, "", "a global heap object at byte " + std::to_string(off) + " claims " + std::to_string(object) +
                           " bytes, more than its collection holds");
      off += 16 + ((object + 7) / 8) * 8;
    }
  }
}

std::shared_ptr<FileInfo> info_for(const std::string& what) {
  auto info = std::make_shared<FileInfo>();
  info->what = what;
  return info;
}

}  // namespace

Lock::Lock() : lock_(hdf5_mutex()) { init_library(); }
Lock::~Lock() = default;

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    o.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: break;
  }
  H5Eclear2(H5E_DEFAULT);
  id_ = -1;
}

// ---------------------------------------------------------------- Group

std::string Group::child_path(const std::string& name) const {
  return path_.empty() || path_ == "/" ? name : path_ + "/" + name;
}

int Group::kind_of(const std::string& name) const {
  const FileInfo& f = *file_;
  std::string p = child_path(name);
  // Our lookups are single names: a '/' would walk links we have not checked.
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    fail_at(f, p, "not a member name", ErrorCode::invalid_argument);
  htri_t exists = H5Lexists(h_.get(), name.c_str(), H5P_DEFAULT);
  if (exists < 0) fail_hdf5(f, p, "H5Lexists");
  if (!exists) return 0;
  H5L_info_t li;
  checked(H5Lget_info(h_.get(), name.c_str(), &li, H5P_DEFAULT), f, p, "H5Lget_info", 0);
  if (li.type != H5L_TYPE_HARD)
    fail_at(f, p, li.type == H5L_TYPE_SOFT ? "is a soft link (only hard links are read)"
                                           : "is an external link (only hard links are read)");
  H5O_info_t oi;
  checked(H5Oget_info_by_name2(h_.get(), name.c_str(), &oi, H5O_INFO_BASIC, H5P_DEFAULT), f, p, "H5Oget_info_by_name", 0);
  if (oi.type == H5O_TYPE_GROUP) return 1;
  if (oi.type == H5O_TYPE_DATASET) return 2;
  return 3;
}

bool Group::has_group(const std::string& name) const { return kind_of(name) == 1; }
bool Group::has_dataset(const std::string& name) const { return kind_of(name) == 2; }

std::vector<std::string> Group::members(std::size_t max_members, Order order) const {
  const FileInfo& f = *file_;
  H5_index_t index = H5_INDEX_NAME;
  if (order == Order::creation) {
    Handle gcpl(checked(H5Gget_create_plist(h_.get()), f, path_, "H5Gget_create_plist"));
    unsigned flags = 0;
    checked(H5Pget_link_creation_order(gcpl.get(), &flags), f, path_, "H5Pget_link_creation_order", 0);
    if ((flags & H5P_CRT_ORDER_TRACKED) && (flags & H5P_CRT_ORDER_INDEXED)) index = H5_INDEX_CRT_ORDER;
  }
  H5G_info_t gi;
  checked(H5Gget_info(h_.get(), &gi), f, path_, "H5Gget_info", 0);
  if (gi.nlinks > max_members)
    fail_at(f, path_, "the group has " + std::to_string(gi.nlinks) + " members (at most " + std::to_string(max_members) + ")");
  std::vector<std::string> out;
  for (hsize_t i = 0; i < gi.nlinks; ++i) {
    ssize_t n = H5Lget_name_by_idx(h_.get(), ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (n < 0) fail_hdf5(f, path_, "H5Lget_name_by_idx");
    if (static_cast<std::uint64_t>(n) > (1u << 16)) fail_at(f, path_, "a member name of " + std::to_string(n) + " bytes");
    std::string name(static_cast<std::size_t>(n) + 1, '\0');
    if (H5Lget_name_by_idx(h_.get(), ".", index, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT) < 0)
      fail_hdf5(f, path_, "H5Lget_name_by_idx");
    name.resize(static_cast<std::size_t>(n));
    out.push_back(std::move(name));
  }
  return out;
}

Group Group::group(const std::string& name) const {
  std::string p = child_path(name);
  int k = kind_of(name);
  if (k == 0) fail_at(*file_, p, "no such group", ErrorCode::not_found);
  if (k != 1) fail_at(*file_, p, "is not a group");
  hid_t g = checked(H5Gopen2(h_.get(), name.c_str(), H5P_DEFAULT), *file_, p, "H5Gopen2");
  return Group(file_, Handle(g), p);
}

Group Group::create_group(const std::string& name) {
  std::string p = child_path(name);
  hid_t g = checked(H5Gcreate2(h_.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), *file_, p, "H5Gcreate2");
  return Group(file_, Handle(g), p);
}

namespace {
struct OpenDataset {
  Handle dataset, type, space;
  DType dtype;
  std::vector<std::int64_t> dims;
};

OpenDataset open_dataset(hid_t parent, const std::string& name, const FileInfo& f, const std::string& p) {
  OpenDataset d;
  d.dataset = Handle(checked(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), f, p, "H5Dopen2"));
  d.type = Handle(checked(H5Dget_type(d.dataset.get()), f, p, "H5Dget_type"));
  std::optional<DType> dt = dtype_of_file_type(d.type.get(), d.dataset.get(), f, p);
  if (!dt) fail_at(f, p, "the dataset's type (" + type_text(d.type.get()) + ") is not one eagerflow reads", kWrongType);
  d.dtype = *dt;
  d.space = Handle(checked(H5Dget_space(d.dataset.get()), f, p, "H5Dget_space"));
  Handle dcpl(checked(H5Dget_create_plist(d.dataset.get()), f, p, "H5Dget_create_plist"));
  int filters = H5Pget_nfilters(dcpl.get());
  if (filters < 0) fail_hdf5(f, p, "H5Pget_nfilters");
  d.dims = checked_dims(d.space.get(), H5Tget_size(d.type.get()), filters > 0, f, p);
  return d;
}
}  // namespace

TensorSpec Group::dataset_spec(const std::string& name) const {
  std::string p = child_path(name);
  int k = kind_of(name);
  if (k == 0) fail_at(*file_, p, "no such dataset", ErrorCode::not_found);
  if (k != 2) fail_at(*file_, p, "is not a dataset");
  OpenDataset d = open_dataset(h_.get(), name, *file_, p);
  return TensorSpec{d.dtype, Shape(d.dims), {}};
}

Tensor Group::read_dataset(const std::string& name) const {
  const FileInfo& f = *file_;
  std::string p = child_path(name);
  int k = kind_of(name);
  if (k == 0) fail_at(f, p, "no such dataset", ErrorCode::not_found);
  if (k != 2) fail_at(f, p, "is not a dataset");
  OpenDataset d = open_dataset(h_.get(), name, f, p);
  Tensor t = Tensor::empty(d.dtype, Shape(d.dims));
  if (t.num_elements() == 0) return t;
  Handle mem = d.dtype == DType::bfloat16 ? Handle(H5Tcopy(d.type.get())) : memory_type(d.dtype);
  checked(H5Dread(d.dataset.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw_mutable_data()), f, p, "H5Dread", 0);
  if (d.dtype == DType::bool_) {
    const auto* b = static_cast<const unsigned char*>(t.raw_data());
    for (std::int64_t i = 0; i < t.num_elements(); ++i)
      if (b[i] > 1) fail_at(f, p, "a bool dataset holds a value that is not 0 or 1");
  }
  return t;
}

void Group::write_dataset(const std::string& name, const Tensor& value) {
  const FileInfo& f = *file_;
  std::string p = child_path(name);
  Handle mem = memory_type(value.dtype());
  if (!mem.valid())
    fail_at(f, p, "cannot write a " + std::string(name_of(value.dtype())) + " tensor to HDF5", kWrongType);
  const Shape& s = value.shape();
  std::vector<hsize_t> dims(s.rank());
  for (int i = 0; i < s.rank(); ++i) dims[i] = static_cast<hsize_t>(s[i]);
  Handle space(checked(s.rank() == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(s.rank(), dims.data(), nullptr), f, p,
                       "H5Screate"));
  // Stored little-endian as h5py stores numpy's native arrays on this platform.
  Handle file_type(H5Tcopy(mem.get()));
  Handle ds(checked(H5Dcreate2(h_.get(), name.c_str(), file_type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                    f, p, "H5Dcreate2"));
  if (value.num_elements() > 0)
    checked(H5Dwrite(ds.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.raw_data()), f, p, "H5Dwrite", 0);
  if (value.dtype() == DType::bfloat16) {
    Handle type(H5Tcopy(H5T_C_S1));
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    Handle sp(H5Screate(H5S_SCALAR));
    Handle a(checked(H5Acreate2(ds.get(), "dtype", type.get(), sp.get(), H5P_DEFAULT, H5P_DEFAULT), f, p, "H5Acreate2"));
    const char* text = "bfloat16";
    checked(H5Awrite(a.get(), type.get(), &text), f, p, "H5Awrite", 0);
  }
}

bool Group::has_attr(const std::string& name) const {
  htri_t e = H5Aexists(h_.get(), name.c_str());
  if (e < 0) fail_hdf5(*file_, path_, "H5Aexists");
  return e > 0;
}

std::optional<std::vector<std::string>> Group::string_list_attr(const std::string& name) const {
  if (!has_attr(name)) return std::nullopt;
  std::string p = path_ + "@" + name;
  Handle a(checked(H5Aopen(h_.get(), name.c_str(), H5P_DEFAULT), *file_, p, "H5Aopen"));
  return read_strings(a.get(), *file_, p);
}

std::optional<std::string> Group::string_attr(const std::string& name) const {
  auto v = string_list_attr(name);
  if (!v) return std::nullopt;
  if (v->size() != 1)
    fail_at(*file_, path_ + "@" + name, "holds " + std::to_string(v->size()) + " strings where one is expected");
  return (*v)[0];
}

void Group::set_string_attr(const std::string& name, const std::string& value) {
  const FileInfo& f = *file_;
  std::string p = path_ + "@" + name;
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle sp(H5Screate(H5S_SCALAR));
  Handle a(checked(H5Acreate2(h_.get(), name.c_str(), type.get(), sp.get(), H5P_DEFAULT, H5P_DEFAULT), f, p, "H5Acreate2"));
  const char* text = value.c_str();
  checked(H5Awrite(a.get(), type.get(), &text), f, p, "H5Awrite", 0);
}

void Group::set_fixed_string_array_attr(const std::string& name, const std::vector<std::string>& values) {
  const FileInfo& f = *file_;
  std::string p = path_ + "@" + name;
  std::size_t width = 1;
  for (const auto& v : values) width = std::max(width, v.size());
  std::vector<char> buf(width * values.size(), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) std::memcpy(buf.data() + i * width, values[i].data(), values[i].size());
  Handle type(H5Tcopy(H5T_C_S1));
  H5Tset_size(type.get(), width);
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  hsize_t n = values.size();
  Handle sp(H5Screate_simple(1, &n, nullptr));
  Handle a(checked(H5Acreate2(h_.get(), name.c_str(), type.get(), sp.get(), H5P_DEFAULT, H5P_DEFAULT), f, p, "H5Acreate2"));
  if (n) checked(H5Awrite(a.get(), type.get(), buf.data()), f, p, "H5Awrite", 0);
}

// ---------------------------------------------------------------- File

File File::open(const std::string& path) {
  auto info = info_for(path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(kFileNotFound, path + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) fail_at(*info, "", "is not a regular file", ErrorCode::invalid_argument);
  if (!has_signature(path)) fail_at(*info, "", "is not an HDF5 file (no HDF5 signature at its start)", ErrorCode::invalid_argument);
  // Read whole, so that the bytes are checked before HDF5 parses them (check_global_heaps).
  std::vector<std::byte> bytes = read_file(path);
  return open_image(bytes, path);
}

File File::open_image(std::span<const std::byte> bytes, const std::string& what) {
  File out;
  out.info_ = info_for(what);
  if (bytes.size() < 8 || std::memcmp(bytes.data(), "\x89HDF\r\n\x1a\n", 8) != 0)
    fail_at(*out.info_, "", "is not an HDF5 file (no HDF5 signature at its start)", ErrorCode::invalid_argument);
  check_global_heaps(bytes, *out.info_);
  // The core driver on a copy of the bytes: reads never touch the caller's buffer.
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  checked(H5Pset_fapl_core(fapl.get(), 1 << 16, 0), *out.info_, "", "H5Pset_fapl_core", 0);
  checked(H5Pset_file_image(fapl.get(), const_cast<std::byte*>(bytes.data()), bytes.size()), *out.info_, "",
          "H5Pset_file_image", 0);
  // A name no file has: the core driver would otherwise read a file of that name from disk.
  static std::uint64_t images = 0;
  std::string name = "<ef-hdf5-image-" + std::to_string(++images) + ">";
  out.h_ = Handle(checked(H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get()), *out.info_, "", "H5Fopen"));
  out.info_->size = bytes.size();
  return out;
}

File File::create(const std::string& what) {
  File out;
  out.info_ = info_for(what);
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS));
  checked(H5Pset_fapl_core(fapl.get(), 1 << 16, 0), *out.info_, "", "H5Pset_fapl_core", 0);
  static std::uint64_t created = 0;
  std::string name = "<ef-hdf5-new-" + std::to_string(++created) + ">";
  out.h_ = Handle(checked(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), *out.info_, "", "H5Fcreate"));
  return out;
}

Group File::root() const {
  hid_t g = checked(H5Gopen2(h_.get(), "/", H5P_DEFAULT), *info_, "/", "H5Gopen2");
  return Group(info_, Handle(g), "");
}

std::vector<std::byte> File::image() {
  checked(H5Fflush(h_.get(), H5F_SCOPE_GLOBAL), *info_, "", "H5Fflush", 0);
  ssize_t n = H5Fget_file_image(h_.get(), nullptr, 0);
  if (n < 0) fail_hdf5(*info_, "", "H5Fget_file_image");
  std::vector<std::byte> out(static_cast<std::size_t>(n));
  if (H5Fget_file_image(h_.get(), out.data(), out.size()) < 0) fail_hdf5(*info_, "", "H5Fget_file_image");
  return out;
}

void File::save(const std::string& path) { write_file_atomically(path, image()); }

bool has_signature(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char sig[8] = {};
  if (!in.read(sig, 8)) return false;
  return std::memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0;
}

}  // namespace ef::io::h5

// ---------------------------------------------------------------- Snapshot

namespace ef::io::h5 {
namespace {

constexpr int kMaxDepth = 64;
constexpr std::size_t kMaxObjects = 1 << 20;
constexpr std::size_t kMaxAttrs = 4096;

void put_u64(std::string& out, std::uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void put_str(std::string& out, const std::string& s) {
  put_u64(out, s.size());
  out += s;
}

// The child's walk: records 'G' (a group: path), 'A' (a group's attribute: path, name, is-string,
// element count, type text, strings), 'D' (a dataset: path, dtype code or 255, type text, rank,
// dims, bytes), then 'E'.
struct Walker {
  const FileInfo& f;
  std::string out;
  std::set<haddr_t> visited;
  std::size_t objects = 0;

  void attrs(hid_t obj, const std::string& path) {
    H5O_info_t oi;
    checked(H5Oget_info2(obj, &oi, H5O_INFO_NUM_ATTRS), f, path, "H5Oget_info2", 0);
    if (oi.num_attrs > kMaxAttrs) fail_at(f, path, "has " + std::to_string(oi.num_attrs) + " attributes");
    for (hsize_t i = 0; i < oi.num_attrs; ++i) {
      ssize_t len = H5Aget_name_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
      if (len < 0 || len > (1 << 16)) fail_at(f, path, "an attribute name cannot be read");
      std::string name(static_cast<std::size_t>(len) + 1, '\0');
      if (H5Aget_name_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT) < 0)
        fail_hdf5(f, path, "H5Aget_name_by_idx");
      name.resize(static_cast<std::size_t>(len));
      std::string where = path + "@" + name;
      Handle a(checked(H5Aopen_by_idx(obj, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), f, where,
                       "H5Aopen_by_idx"));
      Handle type(checked(H5Aget_type(a.get()), f, where, "H5Aget_type"));
      Handle space(checked(H5Aget_space(a.get()), f, where, "H5Aget_space"));
      hssize_t n = H5Sget_simple_extent_npoints(space.get());
      if (n < 0) fail_hdf5(f, where, "H5Sget_simple_extent_npoints");
      out += 'A';
      put_str(out, path);
      put_str(out, name);
      bool is_string = H5Tget_class(type.get()) == H5T_STRING;
      int rank = H5Sget_simple_extent_ndims(space.get());
      std::vector<std::string> values;
      if (is_string && rank >= 0 && rank <= 1) values = read_strings(a.get(), f, where);
      out += is_string && rank >= 0 && rank <= 1 ? '\1' : '\0';
      put_u64(out, static_cast<std::uint64_t>(n));
      put_str(out, type_text(type.get()));
      put_u64(out, values.size());
      for (const auto& v : values) put_str(out, v);
    }
  }

  void dataset(hid_t parent, const std::string& name, const std::string& path) {
    Handle d(checked(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), f, path, "H5Dopen2"));
    Handle type(checked(H5Dget_type(d.get()), f, path, "H5Dget_type"));
    std::optional<DType> probed = dtype_of_file_type(type.get(), d.get(), f, path);
    bool known = probed.has_value();
    DType dtype = DType::float32;
    if (known) dtype = *probed;
    std::string text = type_text(type.get());
    Handle dcpl(checked(H5Dget_create_plist(d.get()), f, path, "H5Dget_create_plist"));
    H5D_layout_t layout = H5Pget_layout(dcpl.get());
    int filters = H5Pget_nfilters(dcpl.get());
    if (layout != H5D_CONTIGUOUS && layout != H5D_COMPACT) {
      known = false;
      text = "a chunked or virtual dataset (eagerflow reads contiguous and compact ones, as Keras writes)";
    } else if (filters != 0) {
      known = false;
      text = "a filtered dataset";
    }
    Handle space(checked(H5Dget_space(d.get()), f, path, "H5Dget_space"));
    std::vector<std::int64_t> dims = checked_dims(space.get(), H5Tget_size(type.get()), false, f, path);
    out += 'D';
    put_str(out, path);
    out += static_cast<char>(known ? static_cast<int>(dtype) : 255);
    put_str(out, text);
    put_u64(out, dims.size());
    std::uint64_t count = 1;
    for (auto v : dims) {
      put_u64(out, static_cast<std::uint64_t>(v));
      count *= static_cast<std::uint64_t>(v);
    }
    if (!known) {
      put_u64(out, 0);
      return;
    }
    std::uint64_t bytes = count * size_of(dtype);
    // libhdf5 1.10 trusts the layout's address and size: both are checked against the file first.
    hsize_t stored = H5Dget_storage_size(d.get());
    if (bytes > 0) {
      if (stored != bytes)
        fail_at(f, path, "the dataset stores " + std::to_string(stored) + " bytes for " + std::to_string(bytes));
      if (layout == H5D_CONTIGUOUS) {
        haddr_t at = H5Dget_offset(d.get());
        if (at == HADDR_UNDEF || at > f.size || bytes > f.size - at)
          fail_at(f, path, "the dataset's data lies outside the file");
      }
    }
    std::string data(bytes, '\0');
    if (bytes > 0) {
      Handle mem = dtype == DType::bfloat16 ? Handle(H5Tcopy(type.get())) : memory_type(dtype);
      checked(H5Dread(d.get(), mem.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), f, path, "H5Dread", 0);
    }
    put_u64(out, bytes);
    out += data;
  }

  void group(hid_t g, const std::string& path, int depth) {
    out += 'G';
    put_str(out, path);
    attrs(g, path);
    H5G_info_t gi;
    checked(H5Gget_info(g, &gi), f, path, "H5Gget_info", 0);
    if (gi.nlinks > kMaxObjects) fail_at(f, path, "the group has " + std::to_string(gi.nlinks) + " members");
    for (hsize_t i = 0; i < gi.nlinks; ++i) {
      ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
      if (len < 0 || len > (1 << 16)) fail_at(f, path, "a member name cannot be read");
      std::string name(static_cast<std::size_t>(len) + 1, '\0');
      if (H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT) < 0)
        fail_hdf5(f, path, "H5Lget_name_by_idx");
      name.resize(static_cast<std::size_t>(len));
      if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") continue;
      std::string child = path.empty() ? name : path + "/" + name;
      H5L_info_t li;
      checked(H5Lget_info(g, name.c_str(), &li, H5P_DEFAULT), f, child, "H5Lget_info", 0);
      if (li.type != H5L_TYPE_HARD) continue;  // soft and external links are not followed
      if (!visited.insert(li.u.address).second) continue;  // each object once: no hard-link loops
      if (++objects > kMaxObjects) fail_at(f, path, "more than " + std::to_string(kMaxObjects) + " objects");
      H5O_info_t oi;
      checked(H5Oget_info_by_name2(g, name.c_str(), &oi, H5O_INFO_BASIC, H5P_DEFAULT), f, child, "H5Oget_info_by_name", 0);
      if (oi.type == H5O_TYPE_GROUP) {
        if (depth + 1 > kMaxDepth) fail_at(f, child, "groups nested more than 64 deep");
        Handle sub(checked(H5Gopen2(g, name.c_str(), H5P_DEFAULT), f, child, "H5Gopen2"));
        group(sub.get(), child, depth + 1);
      } else if (oi.type == H5O_TYPE_DATASET) {
        dataset(g, name, child);
      }
    }
  }
};

struct Reader {
  const std::string& data;
  std::size_t at = 0;
  const FileInfo& f;
  [[noreturn]] void bad() { fail_at(f, "", "the file's walk returned malformed records", ErrorCode::internal); }
  std::uint64_t u64() {
    if (data.size() - at < 8) bad();
    std::uint64_t v;
    std::memcpy(&v, data.data() + at, 8);
    at += 8;
    return v;
  }
  char byte() {
    if (at >= data.size()) bad();
    return data[at++];
  }
  std::string str() {
    std::uint64_t n = u64();
    if (n > data.size() - at) bad();
    std::string s = data.substr(at, n);
    at += n;
    return s;
  }
};

}  // namespace

struct SnapshotBuilder {
  static std::shared_ptr<SnapshotGroup> build(std::span<const std::byte> bytes, std::shared_ptr<FileInfo> info);
  static SnapshotGroup* find(SnapshotGroup& root, const std::string& path) {
    SnapshotGroup* g = &root;
    std::size_t start = 0;
    while (!path.empty()) {
      std::size_t end = path.find('/', start);
      std::string part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
      auto it = g->groups_.find(part);
      if (it == g->groups_.end()) return nullptr;
      g = &it->second;
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return g;
  }
  static std::pair<SnapshotGroup*, std::string> parent_of(SnapshotGroup& root, const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return {&root, path};
    return {find(root, path.substr(0, slash)), path.substr(slash + 1)};
  }
};

std::shared_ptr<SnapshotGroup> SnapshotBuilder::build(std::span<const std::byte> bytes, std::shared_ptr<FileInfo> info) {
  const FileInfo& f = *info;
  if (bytes.size() < 8 || std::memcmp(bytes.data(), "\x89HDF\r\n\x1a\n", 8) != 0)
    fail_at(f, "", "is not an HDF5 file (no HDF5 signature at its start)", ErrorCode::invalid_argument);
  check_global_heaps(bytes, f);
  int fds[2];
  if (::pipe(fds) != 0) fail_at(f, "", "cannot read the file (pipe failed)", ErrorCode::internal);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail_at(f, "", "cannot read the file (fork failed)", ErrorCode::internal);
  }
  if (pid == 0) {  // the child: HDF5, malloc and write() only; never returns
    ::close(fds[0]);
    in_snapshot_child = true;
    std::string out;
    try {
      File file = File::open_image(bytes, f.what);
      Walker w{*file.info_ptr(), {}, {}, 0};
      Handle root(checked(H5Gopen2(file.handle(), "/", H5P_DEFAULT), f, "/", "H5Gopen2"));
      w.group(root.get(), "", 0);
      out = std::move(w.out);
      out += 'E';
    } catch (const std::exception& e) {
      out = std::string("X") + e.what();
    }
    ::_exit(write_all(fds[1], out.data(), out.size()) ? 0 : 4);
  }
  ::close(fds[1]);
  std::string data;
  char buf[65536];
  bool too_long = false, timed_out = false;
  const std::uint64_t cap = 2 * static_cast<std::uint64_t>(bytes.size()) + (std::uint64_t{1} << 24);
  // libhdf5 may also loop on a damaged file: the child gets 5 s plus 1 s per 20 MB.
  auto limit = std::chrono::seconds(5 + static_cast<std::int64_t>(bytes.size() / (20u << 20)));
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = left > 0 ? ::poll(&pfd, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    ssize_t r = ::read(fds[0], buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (data.size() + static_cast<std::size_t>(r) > cap) {
      too_long = true;
      ::kill(pid, SIGKILL);
      break;
    }
    data.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    fail_at(f, "", "reading the file did not finish in " + std::to_string(limit.count()) + " s (a damaged file)");
  if (too_long) fail_at(f, "", "reading the file gave more data than the file can hold (a damaged file)");
  if (WIFSIGNALED(status))
    fail_at(f, "", "the HDF5 library crashed reading the file (signal " + std::to_string(WTERMSIG(status)) +
                       "): the file is damaged");
  if (!data.empty() && data[0] == 'X') throw Error(ErrorCode::data_loss, data.substr(1));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || data.empty() || data.back() != 'E')
    fail_at(f, "", "the file could not be read");

  auto root = std::make_shared<SnapshotGroup>();
  std::shared_ptr<const FileInfo> shared_info = info;
  Reader r{data, 0, f};
  while (true) {
    char tag = r.byte();
    if (tag == 'E') break;
    std::string path = r.str();
    if (tag == 'G') {
      if (path.empty()) {
        root->file_ = shared_info;
        continue;
      }
      auto [parent, name] = SnapshotBuilder::parent_of(*root, path);
      if (!parent) r.bad();
      SnapshotGroup& g = parent->groups_[name];
      g.file_ = shared_info;
      g.path_ = path;
    } else if (tag == 'A') {
      SnapshotGroup* g = SnapshotBuilder::find(*root, path);
      if (!g) r.bad();
      std::string name = r.str();
      SnapshotGroup::Attr a;
      a.is_string = r.byte() != 0;
      a.elements = r.u64();
      a.type_text = r.str();
      std::uint64_t n = r.u64();
      for (std::uint64_t i = 0; i < n; ++i) a.values.push_back(r.str());
      g->attrs_[name] = std::move(a);
    } else if (tag == 'D') {
      auto [parent, name] = SnapshotBuilder::parent_of(*root, path);
      if (!parent) r.bad();
      SnapshotGroup::Dataset d;
      int code = static_cast<unsigned char>(r.byte());
      if (code != 255) d.dtype = static_cast<DType>(code);
      d.type_text = r.str();
      std::uint64_t rank = r.u64();
      if (rank > 32) r.bad();
      for (std::uint64_t i = 0; i < rank; ++i) d.dims.push_back(static_cast<std::int64_t>(r.u64()));
      std::string bytes_text = r.str();
      d.data.resize(bytes_text.size());
      if (!bytes_text.empty()) std::memcpy(d.data.data(), bytes_text.data(), bytes_text.size());
      parent->datasets_[name] = std::move(d);
    } else {
      r.bad();
    }
  }
  return root;
}

Snapshot Snapshot::of_image(std::span<const std::byte> bytes, const std::string& what) {
  Lock lock;  // the child inherits HDF5's state: no other thread may be inside HDF5 at fork()
  Snapshot s;
  s.root_ = SnapshotBuilder::build(bytes, info_for(what));
  return s;
}

Snapshot Snapshot::of_file(const std::string& path) {
  auto info = info_for(path);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(kFileNotFound, path + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) fail_at(*info, "", "is not a regular file", ErrorCode::invalid_argument);
  std::vector<std::byte> bytes = read_file(path);
  return of_image(bytes, path);
}

std::vector<std::string> SnapshotGroup::members(std::size_t max_members) const {
  std::vector<std::string> out;
  for (const auto& [n, g] : groups_) out.push_back(n);
  for (const auto& [n, d] : datasets_) out.push_back(n);
  std::sort(out.begin(), out.end());
  if (out.size() > max_members)
    fail_at(*file_, path_, "the group has " + std::to_string(out.size()) + " members (at most " + std::to_string(max_members) + ")");
  return out;
}

const SnapshotGroup& SnapshotGroup::group(const std::string& name) const {
  std::string p = path_.empty() ? name : path_ + "/" + name;
  auto it = groups_.find(name);
  if (it != groups_.end()) return it->second;
  if (datasets_.count(name)) fail_at(*file_, p, "is not a group");
  fail_at(*file_, p, "no such group", ErrorCode::not_found);
}

TensorSpec SnapshotGroup::dataset_spec(const std::string& name) const {
  std::string p = path_.empty() ? name : path_ + "/" + name;
  auto it = datasets_.find(name);
  if (it == datasets_.end()) fail_at(*file_, p, groups_.count(name) ? "is not a dataset" : "no such dataset", ErrorCode::not_found);
  if (!it->second.dtype)
    fail_at(*file_, p, "the dataset's type (" + it->second.type_text + ") is not one eagerflow reads", kWrongType);
  return TensorSpec{*it->second.dtype, Shape(it->second.dims), {}};
}

Tensor SnapshotGroup::read_dataset(const std::string& name) const {
  std::string p = path_.empty() ? name : path_ + "/" + name;
  TensorSpec spec = dataset_spec(name);
  const Dataset& d = datasets_.at(name);
  Tensor t = Tensor::empty(spec.dtype, spec.shape);
  if (t.nbytes() != d.data.size()) fail_at(*file_, p, "the dataset's data has the wrong size");
  if (t.nbytes()) std::memcpy(t.raw_mutable_data(), d.data.data(), t.nbytes());
  if (spec.dtype == DType::bool_)
    for (std::byte b : d.data)
      if (static_cast<unsigned char>(b) > 1) fail_at(*file_, p, "a bool dataset holds a value that is not 0 or 1");
  return t;
}

std::optional<std::vector<std::string>> SnapshotGroup::string_list_attr(const std::string& name) const {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return std::nullopt;
  const Attr& a = it->second;
  if (!a.is_string) {
    if (a.elements == 0) return std::vector<std::string>{};  // numpy's empty array for "no names"
    fail_at(*file_, path_ + "@" + name, "is " + a.type_text + ", not a string");
  }
  return a.values;
}

std::optional<std::string> SnapshotGroup::string_attr(const std::string& name) const {
  auto v = string_list_attr(name);
  if (!v) return std::nullopt;
  if (v->size() != 1)
    fail_at(*file_, path_ + "@" + name, "holds " + std::to_string(v->size()) + " strings where one is expected");
  return (*v)[0];
}

}  // namespace ef::io::h5
