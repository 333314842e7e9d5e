// Chooses the widest vector kernels this CPU runs, once.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "eagerflow/core/error.h"
#include "kernels/cpu/vec_math.h"

namespace ef::cpu::vec {
namespace baseline { extern const Kernels table; }
namespace avx2 { extern const Kernels table; }
namespace avx512 { extern const Kernels table; }

namespace {

bool cpu_has(Isa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case Isa::baseline: return true;
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }
  return false;
}

const Kernels& choose() {
  Isa cap = Isa::avx512;
  if (const char* e = std::getenv("EF_ISA"); e && *e) {
    if (!std::strcmp(e, "baseline") || !std::strcmp(e, "sse2")) cap = Isa::baseline;
    else if (!std::strcmp(e, "avx2")) cap = Isa::avx2;
    else if (!std::strcmp(e, "avx512")) cap = Isa::avx512;
    else throw Error(std::string("EF_ISA=") + e + " is not one of baseline, avx2, avx512");
  }
  for (Isa isa : {Isa::avx512, Isa::avx2})
    if (static_cast<int>(isa) <= static_cast<int>(cap) && cpu_has(isa)) return *kernels_for(isa);
  return baseline::table;
}

}  // namespace

const Kernels* kernels_for(Isa isa) {
  if (!cpu_has(isa)) return nullptr;
  switch (isa) {
    case Isa::baseline: return &baseline::table;
    case Isa::avx2: return &avx2::table;
    case Isa::avx512: return &avx512::table;
  }
  return nullptr;
}

const Kernels& kernels() {
  static const Kernels& chosen = choose();
  return chosen;
}

// Half the last-level cache as the system reports it (a whole socket's on a VM: still where a
// result waits for the next op), at least 4 MiB, the old fixed threshold, also where the system
// reports no cache.
std::int64_t stream_store_bytes() {
  static const std::int64_t bytes = [] {
    const long l3 = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
    return std::max<std::int64_t>(std::int64_t{1} << 22, l3 > 0 ? l3 / 2 : 0);
  }();
  return bytes;
}

}  // namespace ef::cpu::vec
