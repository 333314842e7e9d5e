#pragma once
// The one file that talks to MPI (comm.cpp, compiled with EF_WITH_MPI when the build found
// MPI): plain buffers in, plain buffers out. Everything else in ef::dist is written against
// this interface, so the library builds without MPI (then ensure_init throws).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/dtype.h"

namespace ef::dist::comm {

enum class Op { sum, max, min };

bool built_with_mpi();
// MPI_Init_thread (MPI_THREAD_SERIALIZED) once; MPI_Finalize at exit. Throws ef::Error in a
// build without MPI, or when MPI was finalized already.
void ensure_init();
bool initialized();  // by ef or by someone else (mpi4py), and not finalized
int rank();
int size();
void barrier();
// Every rank's `n` int64 values, rank after rank (the collectives' header exchange).
std::vector<std::int64_t> allgather_ints(std::span<const std::int64_t> mine);
// In place over `count` elements of `dtype` (float32/float64/int32/int64).
void allreduce(void* data, std::int64_t count, DType dtype, Op op);
void reduce(const void* send, void* recv, std::int64_t count, DType dtype, Op op, int root);
void bcast(void* data, std::int64_t bytes, int root);
// recv holds sum(bytes); rank r's bytes land at displs[r].
void allgatherv(const void* send, std::int64_t send_bytes, void* recv, std::span<const std::int64_t> bytes,
                std::span<const std::int64_t> displs);
// send holds sum(counts) elements, rank r's block first for r = 0; recv gets counts[rank()].
void reduce_scatter(const void* send, void* recv, std::span<const std::int64_t> counts, DType dtype, Op op);
// Ends every process of the job (MPI_Abort); std::abort without MPI.
[[noreturn]] void abort_job(int code);

}  // namespace ef::dist::comm
