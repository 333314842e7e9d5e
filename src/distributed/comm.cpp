#include "distributed/comm.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include "eagerflow/core/error.h"

#ifdef EF_WITH_MPI
#include "distributed/mpi_loader.h"  // <mpi.h>, and Open MPI loaded at run time
#endif

namespace ef::dist::comm {

#ifndef EF_WITH_MPI

bool built_with_mpi() { return false; }
[[noreturn]] static void no_mpi() {
  fail(ErrorCode::unimplemented, "dist",
       "this build has no MPI: ef::dist needs eagerflow built with EF_WITH_MPI=ON (install Open MPI, "
       "e.g. Debian's libopenmpi-dev, and configure again)");
}
void ensure_init() { no_mpi(); }
bool initialized() { return false; }
int rank() { no_mpi(); }
int size() { no_mpi(); }
void barrier() { no_mpi(); }
std::vector<std::int64_t> allgather_ints(std::span<const std::int64_t>) { no_mpi(); }
void allreduce(const void*, void*, std::int64_t, DType, Op) { no_mpi(); }
bool shared_memory_world() { return false; }
void set_shared_memory(bool) { no_mpi(); }
std::int64_t shared_chunk_bytes() { return 0; }
void shared_reduce(std::int64_t, std::size_t, const SharedFill&, const SharedCombine&) { no_mpi(); }
void reduce(const void*, void*, std::int64_t, DType, Op, int) { no_mpi(); }
void bcast(void*, std::int64_t, int) { no_mpi(); }
void allgatherv(const void*, std::int64_t, void*, std::span<const std::int64_t>, std::span<const std::int64_t>) { no_mpi(); }
void reduce_scatter(const void*, void*, std::span<const std::int64_t>, DType, Op) { no_mpi(); }
void abort_job(int code) {
  std::fflush(nullptr);
  std::_Exit(code);
}

#else

// Every MPI function and predefined handle comes from mpi_library() (dist/mpi_loader.h): Open
// MPI is dlopen'ed by the first call that needs it, and a machine without it gets an ef::Error
// saying what to install from ensure_init (every ef::dist call) but `false` from initialized().

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
  mpi_library().Error_string(rc, text, &len);
  fail(ErrorCode::unavailable, "dist",
       std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

MPI_Datatype mpi_type(DType t) {
  const MpiLibrary& mpi = mpi_library();
  switch (t) {
    case DType::float32: return mpi.type_float;
    case DType::float64: return mpi.type_double;
    case DType::int32: return mpi.type_int32;
    case DType::int64: return mpi.type_int64;
    case DType::bool_: case DType::bfloat16: case DType::float16: case DType::string: break;
    case DType::uint8: case DType::int8: case DType::int16: case DType::uint16: case DType::uint32: case DType::uint64: break;
    case DType::complex64: case DType::complex128: break;
  }
  fail(kWrongType, "dist", "reductions take float32, float64, int32 or int64 tensors, not " + std::string(name_of(t)));
}

MPI_Op mpi_op(Op op) {
  const MpiLibrary& mpi = mpi_library();
  return op == Op::sum ? mpi.op_sum : op == Op::max ? mpi.op_max : mpi.op_min;
}

int as_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) fail("dist", std::string(what) + ": " + std::to_string(v) + " is more than MPI's int counts take (2^31 - 1)");
  return static_cast<int>(v);
}

int world_rank(const MpiLibrary& mpi) {
  int r = 0;
  mpi.Comm_rank(mpi.comm_world, &r);
  return r;
}
int world_size(const MpiLibrary& mpi) {
  int n = 1;
  mpi.Comm_size(mpi.comm_world, &n);
  return n;
}

// The end of a process that started MPI. MPI_Finalize waits for every rank to finalize too,
// and a rank still waiting in a collective for this one never will: the job would hang. So a
// process that ends with a non-zero status (exit(1), a return of 1 from main, Python's
// sys.exit(1) or uncaught exception, which reach exit() with 1) has failed, and it ends every
// rank with MPI_Abort instead; status 0 is a normal end and finalizes, waiting for the others
// as MPI requires (they may still be working: a slow rank is no error). No MPI call here
// takes the MPI mutex: another thread may hold it, blocked in a collective.
void end_at_exit(int status, void*) {
  const MpiLibrary& mpi = mpi_library();
  int done = 0;
  mpi.Finalized(&done);
  if (done) return;
  if (status != 0) {
    std::fprintf(stderr,
                 "[dist] rank %d of %d exits with status %d: ending every rank of the job (MPI_Abort), "
                 "whose next collective would wait for it forever\n",
                 world_rank(mpi), world_size(mpi), status);
    std::fflush(nullptr);
    mpi.Abort(mpi.comm_world, status);
  }
  mpi.Finalize();
}

// An uncaught C++ exception ends this process through std::terminate; with MPI running, the
// others would wait for it forever in their next collective (Open MPI may see the abort
// signal late, or not at all where a handler catches it), so it ends every rank at once,
// saying what was thrown.
std::terminate_handler previous_terminate = nullptr;
[[noreturn]] void terminate_job() {
  const MpiLibrary* mpi = mpi_library_if_loaded();
  int inited = 0, done = 1;
  if (mpi) {
    mpi->Initialized(&inited);
    mpi->Finalized(&done);
  }
  if (inited && !done) {
    std::string what = "not a std::exception";
    if (std::exception_ptr e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        what = x.what();
      } catch (...) {}
    } else {
      what = "std::terminate called without an exception";
    }
    std::fprintf(stderr,
                 "[dist] rank %d of %d: uncaught exception: %s\n[dist] ending every rank of the job (MPI_Abort)\n",
                 world_rank(*mpi), world_size(*mpi), what.c_str());
    std::fflush(nullptr);
    mpi->Abort(mpi->comm_world, 1);
  }
  if (previous_terminate) previous_terminate();
  std::abort();
}

void ensure_init_locked() {
  const MpiLibrary& mpi = mpi_library();  // loads Open MPI, or throws saying what to install
  int done = 0;
  mpi.Finalized(&done);
  if (done)
    fail(ErrorCode::failed_precondition, "dist",
         "MPI was finalized already; ef::dist cannot start it again in this process");
  int inited = 0;
  mpi.Initialized(&inited);
  if (inited) return;
  int provided = 0;
  check(mpi.Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  we_initialized = true;
  // on_exit (glibc) rather than atexit: the handler needs the exit status.
#ifdef __GLIBC__
  on_exit(end_at_exit, nullptr);
#else
  std::atexit([] { end_at_exit(0, nullptr); });
#endif
  previous_terminate = std::set_terminate(terminate_job);
  // Errors come back as return codes (turned into ef::Error), not as MPI's default abort.
  mpi.Comm_set_errhandler(mpi.comm_world, mpi.errors_return);
  if (provided < MPI_THREAD_SERIALIZED && provided < MPI_THREAD_FUNNELED)
    fail(ErrorCode::failed_precondition, "dist",
         "this MPI gives thread level " + std::to_string(provided) + "; ef::dist needs MPI_THREAD_FUNNELED or more");
}

}  // namespace

bool built_with_mpi() { return true; }

void ensure_init() {
  std::lock_guard lock(mpi_mutex());
  ensure_init_locked();
}

bool initialized() {
  // Without libmpi in the process nobody started MPI: false, and Open MPI stays unloaded (a
  // program that saves weights asks this; so does abort_job), or absent without an error.
  const MpiLibrary* mpi = mpi_library_if_loaded();
  if (!mpi) return false;
  int inited = 0, done = 0;
  mpi->Initialized(&inited);
  mpi->Finalized(&done);
  return inited && !done;
}

int rank() {
  ensure_init();
  const MpiLibrary& mpi = mpi_library();
  int r = 0;
  mpi.Comm_rank(mpi.comm_world, &r);
  return r;
}

int size() {
  ensure_init();
  const MpiLibrary& mpi = mpi_library();
  int n = 1;
  mpi.Comm_size(mpi.comm_world, &n);
  return n;
}

void barrier() {
  ensure_init();
  const MpiLibrary& mpi = mpi_library();
  std::lock_guard lock(mpi_mutex());
  check(mpi.Barrier(mpi.comm_world), "MPI_Barrier");
}

std::vector<std::int64_t> allgather_ints(std::span<const std::int64_t> mine) {
  int n = size();
  const MpiLibrary& mpi = mpi_library();
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(n));
  std::lock_guard lock(mpi_mutex());
  check(mpi.Allgather(mine.data(), as_int(static_cast<std::int64_t>(mine.size()), "header"), mpi.type_int64, all.data(),
                      static_cast<int>(mine.size()), mpi.type_int64, mpi.comm_world),
        "MPI_Allgather");
  return all;
}

// Counts past INT_MAX go in chunks.
constexpr std::int64_t kChunk = std::int64_t{1} << 28;

// ---------------------------------------------------------------- shared memory
// One window over the ranks of this machine: each rank's segment holds two halves of
// kSharedChunk bytes, used alternately (a rank may fill half h of round k + 1 while another
// still reads half h' of round k; it cannot reach round k + 2 before every rank passed round
// k + 1's barrier, which comes after its reads of round k).
namespace {
constexpr std::int64_t kSharedChunk = std::int64_t{4} << 20;

struct SharedWindow {
  int state = -1;  // -1 not decided yet, 0 not available, 1 available
  bool enabled = true;  // set_shared_memory (and EF_DIST_SHARED_MEMORY=0 at the start)
  // MPI_COMM_NULL and MPI_WIN_NULL from the first decision on (the handles exist only once
  // Open MPI is loaded); nullptr before.
  MPI_Comm node = nullptr;
  MPI_Win win = nullptr;
  std::vector<char*> segment;  // every rank's, rank order
  unsigned round = 0;
};

SharedWindow& shared_window() {
  static SharedWindow w;
  return w;
}

void free_shared_window(SharedWindow& w) {
  const MpiLibrary& mpi = mpi_library();
  if (w.win != mpi.win_null) {
    mpi.Win_unlock_all(w.win);
    mpi.Win_free(&w.win);
  }
  if (w.node != mpi.comm_null) mpi.Comm_free(&w.node);
  w.segment.clear();
  w.state = 0;
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: the window goes before MPI does,
// whoever finalizes (ef at exit, or mpi4py).
int free_at_finalize(MPI_Comm, int, void*, void*) {
  free_shared_window(shared_window());
  return MPI_SUCCESS;
}

// Under the MPI mutex.
SharedWindow* shared_window_locked() {
  SharedWindow& w = shared_window();
  if (w.state == 1) return w.enabled ? &w : nullptr;
  if (w.state == 0) return nullptr;
  const MpiLibrary& mpi = mpi_library();
  w.state = 0;
  w.node = mpi.comm_null;
  w.win = mpi.win_null;
  const char* env = std::getenv("EF_DIST_SHARED_MEMORY");
  if (env && std::strcmp(env, "0") == 0) w.enabled = false;
  int world = 1, me = 0;
  mpi.Comm_size(mpi.comm_world, &world);
  mpi.Comm_rank(mpi.comm_world, &me);
  if (world < 2) return nullptr;
  check(mpi.Comm_split_type(mpi.comm_world, MPI_COMM_TYPE_SHARED, me, mpi.info_null, &w.node), "MPI_Comm_split_type");
  int local = 0, local_rank = -1;
  mpi.Comm_size(w.node, &local);
  mpi.Comm_rank(w.node, &local_rank);
  // Every rank takes the same decision: a job on several machines keeps MPI_Allreduce.
  int all_local = local == world && local_rank == me, everywhere = 0;
  check(mpi.Allreduce(&all_local, &everywhere, 1, mpi.type_int, mpi.op_min, mpi.comm_world), "MPI_Allreduce");
  if (!everywhere) {
    mpi.Comm_free(&w.node);
    return nullptr;
  }
  MPI_Info info;
  mpi.Info_create(&info);
  mpi.Info_set(info, "alloc_shared_noncontig", "true");  // each rank's segment on its own pages
  char* mine = nullptr;
  int rc = mpi.Win_allocate_shared(2 * kSharedChunk, 1, info, w.node, &mine, &w.win);
  mpi.Info_free(&info);
  check(rc, "MPI_Win_allocate_shared");
  mpi.Win_set_errhandler(w.win, mpi.errors_return);
  check(mpi.Win_lock_all(MPI_MODE_NOCHECK, w.win), "MPI_Win_lock_all");
  w.segment.resize(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    MPI_Aint bytes = 0;
    int unit = 0;
    check(mpi.Win_shared_query(w.win, r, &bytes, &unit, &w.segment[static_cast<std::size_t>(r)]), "MPI_Win_shared_query");
  }
  int key = MPI_KEYVAL_INVALID;
  mpi.Comm_create_keyval(mpi.comm_null_copy_fn, free_at_finalize, &key, nullptr);
  mpi.Comm_set_attr(mpi.comm_self, key, nullptr);
  w.state = 1;
  return w.enabled ? &w : nullptr;
}

template <class T>
void combine_values(std::span<const void* const> all, T* out, std::int64_t n, Op op) {
  const T* a = static_cast<const T*>(all[0]);
  auto apply = [op](T x, T y) { return op == Op::sum ? x + y : op == Op::max ? (x < y ? y : x) : (y < x ? y : x); };
  if (all.size() == 2) {
    const T* b = static_cast<const T*>(all[1]);
    if (op == Op::sum)
      for (std::int64_t j = 0; j < n; ++j) out[j] = a[j] + b[j];
    else
      for (std::int64_t j = 0; j < n; ++j) out[j] = apply(a[j], b[j]);
    return;
  }
  std::memcpy(out, a, static_cast<std::size_t>(n) * sizeof(T));
  for (std::size_t r = 1; r < all.size(); ++r) {  // rank order: the same bits on every rank
    const T* b = static_cast<const T*>(all[r]);
    for (std::int64_t j = 0; j < n; ++j) out[j] = apply(out[j], b[j]);
  }
}

void shared_reduce_locked(SharedWindow& w, std::int64_t count, std::size_t element_size, const SharedFill& fill,
                          const SharedCombine& combine) {
  const std::int64_t es = static_cast<std::int64_t>(element_size);
  const std::int64_t per_chunk = kSharedChunk / es;
  const MpiLibrary& mpi = mpi_library();
  std::vector<const void*> all(w.segment.size());
  int me = 0;
  mpi.Comm_rank(w.node, &me);
  for (std::int64_t first = 0; first < count; first += per_chunk) {
    const std::int64_t n = std::min(per_chunk, count - first);
    const std::int64_t half = (w.round++ & 1u) * kSharedChunk;
    fill(w.segment[static_cast<std::size_t>(me)] + half, first, n);
    mpi.Win_sync(w.win);
    check(mpi.Barrier(w.node), "MPI_Barrier");
    mpi.Win_sync(w.win);
    for (std::size_t r = 0; r < all.size(); ++r) all[r] = w.segment[r] + half;
    combine(all, first, n);
  }
}

}  // namespace

bool shared_memory_world() {
  ensure_init();
  std::lock_guard lock(mpi_mutex());
  return shared_window_locked() != nullptr;
}

void set_shared_memory(bool on) {
  ensure_init();
  std::lock_guard lock(mpi_mutex());
  shared_window_locked();  // decided (and the window made) on every rank alike, now
  shared_window().enabled = on;
}

std::int64_t shared_chunk_bytes() { return kSharedChunk; }

void shared_reduce(std::int64_t count, std::size_t element_size, const SharedFill& fill, const SharedCombine& combine) {
  ensure_init();
  if (element_size == 0 || kSharedChunk % static_cast<std::int64_t>(element_size) != 0)
    fail("dist", "shared_reduce: element size " + std::to_string(element_size) + " does not divide the chunk");
  std::lock_guard lock(mpi_mutex());
  SharedWindow* w = shared_window_locked();
  if (!w)
    fail(ErrorCode::failed_precondition, "dist", "shared_reduce: the ranks do not all share this machine's memory");
  shared_reduce_locked(*w, count, element_size, fill, combine);
}

namespace {
void mpi_allreduce_locked(void* data, std::int64_t count, MPI_Datatype t, std::size_t es, Op op) {
  const MpiLibrary& mpi = mpi_library();
  auto* p = static_cast<char*>(data);
  for (std::int64_t at = 0; at < count; at += kChunk) {
    int n = static_cast<int>(std::min(kChunk, count - at));
    check(mpi.Allreduce(MPI_IN_PLACE, p + at * static_cast<std::int64_t>(es), n, t, mpi_op(op), mpi.comm_world), "MPI_Allreduce");
  }
}
}  // namespace

void allreduce(const void* send, void* recv, std::int64_t count, DType dtype, Op op) {
  ensure_init();
  MPI_Datatype t = mpi_type(dtype);
  const std::size_t es = size_of(dtype);
  std::lock_guard lock(mpi_mutex());
  if (SharedWindow* w = shared_window_locked()) {
    const char* s = static_cast<const char*>(send);
    char* r = static_cast<char*>(recv);
    shared_reduce_locked(
        *w, count, es, [&](void* mine, std::int64_t first, std::int64_t n) { std::memcpy(mine, s + first * es, static_cast<std::size_t>(n) * es); },
        [&](std::span<const void* const> all, std::int64_t first, std::int64_t n) {
          void* out = r + first * es;
          switch (dtype) {
            case DType::float32: combine_values(all, static_cast<float*>(out), n, op); break;
            case DType::float64: combine_values(all, static_cast<double*>(out), n, op); break;
            case DType::int32: combine_values(all, static_cast<std::int32_t*>(out), n, op); break;
            default: combine_values(all, static_cast<std::int64_t*>(out), n, op); break;
          }
        });
    return;
  }
  if (send != recv && count > 0) std::memcpy(recv, send, static_cast<std::size_t>(count) * es);
  mpi_allreduce_locked(recv, count, t, es, op);
}

void reduce(const void* send, void* recv, std::int64_t count, DType dtype, Op op, int root) {
  ensure_init();
  const MpiLibrary& mpi = mpi_library();
  MPI_Datatype t = mpi_type(dtype);
  std::lock_guard lock(mpi_mutex());
  const auto* s = static_cast<const char*>(send);
  auto* r = static_cast<char*>(recv);
  std::int64_t es = static_cast<std::int64_t>(size_of(dtype));
  for (std::int64_t at = 0; at < count; at += kChunk) {
    int n = static_cast<int>(std::min(kChunk, count - at));
    check(mpi.Reduce(s + at * es, r + at * es, n, t, mpi_op(op), root, mpi.comm_world), "MPI_Reduce");
  }
}

void bcast(void* data, std::int64_t bytes, int root) {
  ensure_init();
  const MpiLibrary& mpi = mpi_library();
  std::lock_guard lock(mpi_mutex());
  auto* p = static_cast<char*>(data);
  for (std::int64_t at = 0; at < bytes; at += kChunk * 4) {
    int n = static_cast<int>(std::min(kChunk * 4, bytes - at));
    check(mpi.Bcast(p + at, n, mpi.type_byte, root, mpi.comm_world), "MPI_Bcast");
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
  const MpiLibrary& mpi = mpi_library();
  std::lock_guard lock(mpi_mutex());
  check(mpi.Allgatherv(send, as_int(send_bytes, "all_gather bytes"), mpi.type_byte, recv, counts.data(), offsets.data(),
                       mpi.type_byte, mpi.comm_world),
        "MPI_Allgatherv");
}

void reduce_scatter(const void* send, void* recv, std::span<const std::int64_t> counts, DType dtype, Op op) {
  ensure_init();
  MPI_Datatype t = mpi_type(dtype);
  std::vector<int> c;
  for (std::int64_t v : counts) c.push_back(as_int(v, "reduce_scatter elements"));
  const MpiLibrary& mpi = mpi_library();
  std::lock_guard lock(mpi_mutex());
  check(mpi.Reduce_scatter(send, recv, c.data(), t, mpi_op(op), mpi.comm_world), "MPI_Reduce_scatter");
}

void abort_job(int code) {
  std::fflush(nullptr);
  if (initialized()) {
    const MpiLibrary& mpi = mpi_library();
    mpi.Abort(mpi.comm_world, code);
  }
  std::_Exit(code);
}

#endif

}  // namespace ef::dist::comm
