#include "dist/comm.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "eagerflow/core/error.h"

#ifdef EF_WITH_MPI
#include <mpi.h>
#endif

namespace ef::dist::comm {

#ifndef EF_WITH_MPI

bool built_with_mpi() { return false; }
[[noreturn]] static void no_mpi() {
  fail("dist", "this build has no MPI: ef::dist needs eagerflow built with EF_WITH_MPI=ON (install Open MPI, "
               "e.g. Debian's libopenmpi-dev, and configure again)");
}
void ensure_init() { no_mpi(); }
bool initialized() { return false; }
int rank() { no_mpi(); }
int size() { no_mpi(); }
void barrier() { no_mpi(); }
std::vector<std::int64_t> allgather_ints(std::span<const std::int64_t>) { no_mpi(); }
void allreduce(void*, std::int64_t, DType, Op) { no_mpi(); }
void reduce(const void*, void*, std::int64_t, DType, Op, int) { no_mpi(); }
void bcast(void*, std::int64_t, int) { no_mpi(); }
void allgatherv(const void*, std::int64_t, void*, std::span<const std::int64_t>, std::span<const std::int64_t>) { no_mpi(); }
void reduce_scatter(const void*, void*, std::span<const std::int64_t>, DType, Op) { no_mpi(); }
void abort_job(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

#else

namespace {

// MPI_THREAD_SERIALIZED: any thread may call, one at a time (this mutex).
std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}
bool we_initialized = false;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail("dist", std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::int64: return MPI_INT64_T;
    case DType::bool_: case DType::bfloat16: break;
  }
  fail("dist", "reductions take float32, float64, int32 or int64 tensors, not " + std::string(name_of(t)));
}

MPI_Op mpi_op(Op op) { return op == Op::sum ? MPI_SUM : op == Op::max ? MPI_MAX : MPI_MIN; }

int as_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) fail("dist", std::string(what) + ": " + std::to_string(v) + " is more than MPI's int counts take (2^31 - 1)");
  return static_cast<int>(v);
}

void finalize_at_exit() {
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
}

void ensure_init_locked() {
  int done = 0;
  MPI_Finalized(&done);
  if (done) fail("dist", "MPI was finalized already; ef::dist cannot start it again in this process");
  int inited = 0;
  MPI_Initialized(&inited);
  if (inited) return;
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  we_initialized = true;
  std::atexit(finalize_at_exit);
  // Errors come back as return codes (turned into ef::Error), not as MPI's default abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED && provided < MPI_THREAD_FUNNELED)
    fail("dist", "this MPI gives thread level " + std::to_string(provided) + "; ef::dist needs MPI_THREAD_FUNNELED or more");
}

}  // namespace

bool built_with_mpi() { return true; }

void ensure_init() {
  std::lock_guard lock(mpi_mutex());
  ensure_init_locked();
}

bool initialized() {
  int inited = 0, done = 0;
  MPI_Initialized(&inited);
  MPI_Finalized(&done);
  return inited && !done;
}

int rank() {
  ensure_init();
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  ensure_init();
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

void barrier() {
  ensure_init();
  std::lock_guard lock(mpi_mutex());
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

std::vector<std::int64_t> allgather_ints(std::span<const std::int64_t> mine) {
  int n = size();
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(n));
  std::lock_guard lock(mpi_mutex());
  check(MPI_Allgather(mine.data(), as_int(static_cast<std::int64_t>(mine.size()), "header"), MPI_INT64_T, all.data(),
                      static_cast<int>(mine.size()), MPI_INT64_T, MPI_COMM_WORLD),
        "MPI_Allgather");
  return all;
}

// Counts past INT_MAX go in chunks.
constexpr std::int64_t kChunk = std::int64_t{1} << 28;

void allreduce(void* data, std::int64_t count, DType dtype, Op op) {
  ensure_init();
  MPI_Datatype t = mpi_type(dtype);
  std::lock_guard lock(mpi_mutex());
  auto* p = static_cast<char*>(data);
  for (std::int64_t at = 0; at < count; at += kChunk) {
    int n = static_cast<int>(std::min(kChunk, count - at));
    check(MPI_Allreduce(MPI_IN_PLACE, p + at * static_cast<std::int64_t>(size_of(dtype)), n, t, mpi_op(op), MPI_COMM_WORLD),
          "MPI_Allreduce");
  }
}

void reduce(const void* send, void* recv, std::int64_t count, DType dtype, Op op, int root) {
  ensure_init();
  MPI_Datatype t = mpi_type(dtype);
  std::lock_guard lock(mpi_mutex());
  const auto* s = static_cast<const char*>(send);
  auto* r = static_cast<char*>(recv);
  std::int64_t es = static_cast<std::int64_t>(size_of(dtype));
  for (std::int64_t at = 0; at < count; at += kChunk) {
    int n = static_cast<int>(std::min(kChunk, count - at));
    check(MPI_Reduce(s + at * es, r + at * es, n, t, mpi_op(op), root, MPI_COMM_WORLD), "MPI_Reduce");
  }
}

void bcast(void* data, std::int64_t bytes, int root) {
  ensure_init();
  std::lock_guard lock(mpi_mutex());
  auto* p = static_cast<char*>(data);
  for (std::int64_t at = 0; at < bytes; at += kChunk * 4) {
    int n = static_cast<int>(std::min(kChunk * 4, bytes - at));
    check(MPI_Bcast(p + at, n, MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
}

void allgatherv(const void* send, std::int64_t send_bytes, void* recv, std::span<const std::int64_t> bytes,
                std::span<const std::int64_t> displs) {
  ensure_init();
  std::vector<int> counts, offsets;
  for (std::size_t r = 0; r < bytes.size(); ++r) {
    counts.push_back(as_int(bytes[r], "all_gather bytes"));
    offsets.push_back(as_int(displs[r], "all_gather bytes"));
  }
  std::lock_guard lock(mpi_mutex());
  check(MPI_Allgatherv(send, as_int(send_bytes, "all_gather bytes"), MPI_BYTE, recv, counts.data(), offsets.data(), MPI_BYTE,
                       MPI_COMM_WORLD),
        "MPI_Allgatherv");
}

void reduce_scatter(const void* send, void* recv, std::span<const std::int64_t> counts, DType dtype, Op op) {
  ensure_init();
  MPI_Datatype t = mpi_type(dtype);
  std::vector<int> c;
  for (std::int64_t v : counts) c.push_back(as_int(v, "reduce_scatter elements"));
  std::lock_guard lock(mpi_mutex());
  check(MPI_Reduce_scatter(send, recv, c.data(), t, mpi_op(op), MPI_COMM_WORLD), "MPI_Reduce_scatter");
}

void abort_job(int code) {
  std::fflush(nullptr);
  if (initialized()) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

#endif

}  // namespace ef::dist::comm
