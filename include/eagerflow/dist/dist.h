#pragma once
// Collectives across the processes of an MPI job (Open MPI; launched with mpirun or srun), as
// ops: eager, and inside ef::function as ordered effects (never merged, dropped or reordered
// by the passes), with gradient rules. Every rank must call the same collectives in the same
// order; tensors whose dtype or shape differ across ranks are an ef::Error naming both, on
// every rank (a small header is exchanged first), never a hang or corrupted memory.
//
//   ef::dist::init();                                   // idempotent; MPI_Finalize at exit
//   Tensor g = ef::dist::all_reduce(x, ef::dist::ReduceOp::mean);
//
// Run as one process (no mpirun) it is a world of size 1. In a build without MPI
// (EF_WITH_MPI=OFF) every call is an ef::Error saying so; available() tells beforehand.
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::dist {

enum class ReduceOp { sum, mean, max, min };

// Whether this build has MPI (EF_WITH_MPI).
bool available();
// Starts MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED) if nobody has; safe to call again.
void init();
// Whether MPI is running in this process (after init, or started by someone else).
bool is_initialized();
int rank();        // this process's rank in MPI_COMM_WORLD (init() first, implicitly)
int world_size();  // the number of processes
// Waits for every rank; an op inside ef::function (runs on every replay).
void barrier();

// Elementwise over ranks: float32/float64/int32/int64 (mean: floats only). Gradient: the
// same all-reduce of the cotangents (sum and mean); max/min send it to the ranks that hold
// the extremum (split among ties).
Tensor all_reduce(const Tensor& x, ReduceOp op = ReduceOp::sum);
// Every rank gets root's x (all ranks pass the same dtype and shape). Gradient: the sum of
// the cotangents, on root (zeros elsewhere).
Tensor broadcast(const Tensor& x, int root = 0);
// The ranks' x concatenated along `axis` in rank order (same shapes everywhere). Gradient:
// reduce_scatter of the cotangent.
Tensor all_gather(const Tensor& x, int axis = 0);
// The sum over ranks of x, split along `axis` into world_size() blocks; rank r keeps block r
// (x's dim along axis must divide by world_size()). Gradient: all_gather of the cotangent.
Tensor reduce_scatter(const Tensor& x, int axis = 0);

// For the training loop: the ranks' rows (axis 0) concatenated in rank order when their
// counts may differ (a dynamic batch dim inside a trace). Gradient: this rank's rows of the
// sum over ranks of the cotangent.
Tensor all_gather_rows(const Tensor& x);

// How sums, maxima and minima (all_reduce, the data-parallel gradient buckets) travel when
// every rank runs on this machine: through one MPI-3 shared-memory window (the default: each
// rank writes its values once and reads the others' straight into its result, the same bits
// on every rank) or through MPI_Allreduce (on = false; also EF_DIST_SHARED_MEMORY=0 in the
// environment). A job across machines always uses MPI_Allreduce. Every rank must choose the
// same, between collectives. shared_memory() says whether reductions use it now.
void use_shared_memory(bool on);
bool shared_memory();

// False on the ranks other than 0 of a running MPI job of several processes (without starting
// MPI): save_weights, save_model, ModelCheckpoint and Checkpoint::save write on rank 0 only,
// so the ranks of a data-parallel job do not write the same file at once.
bool is_file_writer();

// Aborts every process of the job with `code` (MPI_Abort): what a distributed fit does on an
// error, since the other ranks would otherwise wait forever in their next collective.
[[noreturn]] void abort_job(int code = 1);

}  // namespace ef::dist
