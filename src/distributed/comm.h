#pragma once
// The one file that talks to MPI (comm.cpp, compiled with EF_WITH_MPI when the build found
// MPI): plain buffers in, plain buffers out. Everything else in ef::dist is written against
// this interface, so the library builds without MPI (then ensure_init throws).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/dtype.h"

namespace ef::dist::comm {

enum class Op { sum, max, min };

bool built_with_mpi();
// MPI_Init_thread (MPI_THREAD_SERIALIZED) once; at exit MPI_Finalize after a status of 0, and
// MPI_Abort of the whole job after any other status or an uncaught C++ exception (a failed
// rank must not leave the others waiting in a collective forever). Throws ef::Error in a
// build without MPI, or when MPI was finalized already.
void ensure_init();
bool initialized();  // by ef or by someone else (mpi4py), and not finalized
int rank();
int size();
void barrier();
// Every rank's `n` int64 values, rank after rank (the collectives' header exchange).
std::vector<std::int64_t> allgather_ints(std::span<const std::int64_t> mine);
// `count` elements of `dtype` (float32/float64/int32/int64) from `send` reduced into `recv`
// on every rank (send == recv: in place). Through shared memory where shared_memory_world().
void allreduce(const void* send, void* recv, std::int64_t count, DType dtype, Op op);
inline void allreduce(void* data, std::int64_t count, DType dtype, Op op) { allreduce(data, data, count, dtype, op); }
void reduce(const void* send, void* recv, std::int64_t count, DType dtype, Op op, int root);
void bcast(void* data, std::int64_t bytes, int root);
// recv holds sum(bytes); rank r's bytes land at displs[r].
void allgatherv(const void* send, std::int64_t send_bytes, void* recv, std::span<const std::int64_t> bytes,
                std::span<const std::int64_t> displs);
// send holds sum(counts) elements, rank r's block first for r = 0; recv gets counts[rank()].
void reduce_scatter(const void* send, void* recv, std::span<const std::int64_t> counts, DType dtype, Op op);
// Reductions through shared memory (MPI-3: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and
// MPI_Win_allocate_shared) when every rank of the job runs on this machine: each rank writes
// its values into its own segment of one window, one barrier, then each rank reads every
// rank's segment and combines them itself, in rank order (the same bits on every rank). No
// copy through MPI's transport, and the packing and the combining run straight from and
// into the caller's tensors. Large reductions go in chunks of at most shared_chunk_bytes()
// (the window stays small and in cache); two alternating halves of the window let a rank
// fill its next chunk while the others still read the previous one.
// False for a world of one, a job that spans machines, or EF_DIST_SHARED_MEMORY=0 in the
// environment, or set_shared_memory(false) (then allreduce goes through MPI_Allreduce).
bool shared_memory_world();
void set_shared_memory(bool on);  // off: MPI_Allreduce even where the window exists
std::int64_t shared_chunk_bytes();
// Collective, with the same `count` on every rank: fill(mine, first, n) writes elements
// [first, first + n) of this rank's values (of `element_size` bytes each) at `mine`;
// combine(all, first, n) then reads every rank's elements [first, first + n) (all[r] points
// at rank r's, already offset) and stores the result. Called chunk after chunk, in order.
using SharedFill = std::function<void(void* mine, std::int64_t first, std::int64_t n)>;
using SharedCombine = std::function<void(std::span<const void* const> all, std::int64_t first, std::int64_t n)>;
void shared_reduce(std::int64_t count, std::size_t element_size, const SharedFill& fill, const SharedCombine& combine);
// Ends every process of the job (MPI_Abort); std::abort without MPI.
[[noreturn]] void abort_job(int code);

}  // namespace ef::dist::comm
