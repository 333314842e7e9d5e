// Open MPI's libmpi, dlopen'ed on first use (dist/mpi_loader.h). Compiled only with EF_WITH_MPI
// (it needs <mpi.h>); in a build without MPI this file is empty.
#ifdef EF_WITH_MPI

#include "distributed/mpi_loader.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "eagerflow/core/error.h"

namespace ef::dist::comm {
namespace {

constexpr const char* kDefaultLibrary = "libmpi.so.40";  // Open MPI 4.x's soname

struct Loaded {
  MpiLibrary lib;
  std::string error;  // empty: loaded, every symbol found
};

// EF_MPI_LIBRARY from the environment (empty or unset: the default), and whether it was set.
std::string library_name(bool* from_environment = nullptr) {
  const char* env = std::getenv("EF_MPI_LIBRARY");
  const bool set = env && *env;
  if (from_environment) *from_environment = set;
  return set ? env : kDefaultLibrary;
}

Loaded load() {
  Loaded l;
  bool from_environment = false;
  const std::string name = library_name(&from_environment);
  const std::string which = "Open MPI's library " + name + (from_environment ? " (named by EF_MPI_LIBRARY)" : "");
  const std::string install =
      "install Open MPI 4.x to use ef.dist (Debian/Ubuntu: apt-get install openmpi-bin libopenmpi3; elsewhere put "
      "the directory holding libmpi.so.40 on LD_LIBRARY_PATH); everything else in eagerflow works without it";
  ::dlerror();  // clear
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char* why = ::dlerror();
    l.error = which + " is not installed or cannot be loaded: " + install + " (dlopen: " + (why ? why : "no reason given") + ")";
    return l;
  }
  std::string missing;
  auto find = [&](const char* symbol) -> void* {
    void* p = ::dlsym(handle, symbol);
    if (!p) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
    return p;
  };
#define EF_MPI_RESOLVE_FUNCTION(name) l.lib.name = reinterpret_cast<decltype(l.lib.name)>(find("MPI_" #name));
  EF_MPI_FUNCTIONS(EF_MPI_RESOLVE_FUNCTION)
#undef EF_MPI_RESOLVE_FUNCTION
  // The handles are the addresses of libmpi's predefined objects (OMPI_PREDEFINED_GLOBAL).
#define EF_MPI_RESOLVE_HANDLE(type, member, symbol) l.lib.member = static_cast<type>(find(#symbol));
  EF_MPI_HANDLES(EF_MPI_RESOLVE_HANDLE)
#undef EF_MPI_RESOLVE_HANDLE
  l.lib.comm_null_copy_fn = reinterpret_cast<MPI_Comm_copy_attr_function*>(find("OMPI_C_MPI_COMM_NULL_COPY_FN"));
  if (!missing.empty()) {
    l.lib = MpiLibrary{};
    l.error = which + " was loaded but lacks " + missing + ": ef::dist needs Open MPI 4.x's libmpi.so.40; " + install;
  }
  return l;
}

std::atomic<bool> attempted{false};  // load() has run (its result is in loaded()'s static)

const Loaded& loaded() {
  static const Loaded l = load();
  attempted.store(true, std::memory_order_release);
  return l;
}

}  // namespace

const MpiLibrary& mpi_library() {
  const Loaded& l = loaded();
  if (!l.error.empty()) fail(ErrorCode::unavailable, "dist", l.error);
  return l.lib;
}

const MpiLibrary* mpi_library_if_loaded() {
  if (!attempted.load(std::memory_order_acquire)) {
    // RTLD_NOLOAD: a handle only if the library is in the process already (matched by soname).
    void* handle = ::dlopen(library_name().c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (!handle) return nullptr;
    ::dlclose(handle);  // the reference this dlopen took; loaded() takes its own
  }
  const Loaded& l = loaded();
  return l.error.empty() ? &l.lib : nullptr;
}

}  // namespace ef::dist::comm

#endif  // EF_WITH_MPI
