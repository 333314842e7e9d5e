#pragma once
// Open MPI loaded at run time (dlopen on first use) instead of linked: a binary or Python wheel
// of eagerflow starts on a machine without Open MPI, and only ef::dist needs it (an ef::Error
// then says what to install). comm.cpp is still compiled against Open MPI's <mpi.h>, for the
// types and the compile-time constants (MPI_SUCCESS, MPI_IN_PLACE, MPI_THREAD_SERIALIZED,
// MPI_KEYVAL_INVALID, ...); every function it calls and every predefined handle it uses comes
// from MpiLibrary. In Open MPI the handles are macros over libmpi's global objects
// (MPI_COMM_WORLD is &ompi_mpi_comm_world, MPI_SUM &ompi_mpi_op_sum, ...): a use of one, or a
// direct call, would be a link-time reference to libmpi, which nothing links any more (the
// programs would fail to link).
//
// The library is $EF_MPI_LIBRARY when set (tests point it at a missing one), else
// libmpi.so.40 (Open MPI 4.x), opened with RTLD_NOW | RTLD_GLOBAL: Open MPI's own plugins
// (mca_*.so) resolve libmpi's symbols. Only comm.cpp and mpi_loader.cpp include this header,
// both compiled with EF_WITH_MPI and MPI's include directories.
#include <mpi.h>

namespace ef::dist::comm {

// One X(name) per MPI function comm.cpp calls: MpiLibrary::name is MPI_name.
#define EF_MPI_FUNCTIONS(X)                                                                          \
  X(Init_thread) X(Initialized) X(Finalized) X(Finalize) X(Abort) X(Error_string)                   \
  X(Comm_rank) X(Comm_size) X(Comm_set_errhandler) X(Comm_split_type) X(Comm_free)                  \
  X(Comm_create_keyval) X(Comm_set_attr)                                                            \
  X(Barrier) X(Allgather) X(Allgatherv) X(Allreduce) X(Reduce) X(Reduce_scatter) X(Bcast)           \
  X(Info_create) X(Info_set) X(Info_free)                                                           \
  X(Win_allocate_shared) X(Win_set_errhandler) X(Win_lock_all) X(Win_unlock_all) X(Win_shared_query) \
  X(Win_sync) X(Win_free)

// One X(type, member, symbol) per predefined handle: MpiLibrary::member is the MPI constant
// whose Open MPI macro takes the address of the global object `symbol`.
#define EF_MPI_HANDLES(X)                                                                  \
  X(MPI_Comm, comm_world, ompi_mpi_comm_world)           /* MPI_COMM_WORLD */             \
  X(MPI_Comm, comm_self, ompi_mpi_comm_self)             /* MPI_COMM_SELF */              \
  X(MPI_Comm, comm_null, ompi_mpi_comm_null)             /* MPI_COMM_NULL */              \
  X(MPI_Win, win_null, ompi_mpi_win_null)                /* MPI_WIN_NULL */               \
  X(MPI_Info, info_null, ompi_mpi_info_null)             /* MPI_INFO_NULL */              \
  X(MPI_Errhandler, errors_return, ompi_mpi_errors_return) /* MPI_ERRORS_RETURN */        \
  X(MPI_Datatype, type_byte, ompi_mpi_byte)              /* MPI_BYTE */                   \
  X(MPI_Datatype, type_int, ompi_mpi_int)                /* MPI_INT */                    \
  X(MPI_Datatype, type_float, ompi_mpi_float)            /* MPI_FLOAT */                  \
  X(MPI_Datatype, type_double, ompi_mpi_double)          /* MPI_DOUBLE */                 \
  X(MPI_Datatype, type_int32, ompi_mpi_int32_t)          /* MPI_INT32_T */                \
  X(MPI_Datatype, type_int64, ompi_mpi_int64_t)          /* MPI_INT64_T */                \
  X(MPI_Op, op_sum, ompi_mpi_op_sum)                     /* MPI_SUM */                    \
  X(MPI_Op, op_max, ompi_mpi_op_max)                     /* MPI_MAX */                    \
  X(MPI_Op, op_min, ompi_mpi_op_min)                     /* MPI_MIN */

struct MpiLibrary {
#define EF_MPI_FUNCTION_MEMBER(name) decltype(&::MPI_##name) name = nullptr;
  EF_MPI_FUNCTIONS(EF_MPI_FUNCTION_MEMBER)
#undef EF_MPI_FUNCTION_MEMBER
#define EF_MPI_HANDLE_MEMBER(type, member, symbol) type member = nullptr;
  EF_MPI_HANDLES(EF_MPI_HANDLE_MEMBER)
#undef EF_MPI_HANDLE_MEMBER
  // MPI_COMM_NULL_COPY_FN: in Open MPI a function of libmpi, OMPI_C_MPI_COMM_NULL_COPY_FN.
  MPI_Comm_copy_attr_function* comm_null_copy_fn = nullptr;
};

// The table, Open MPI loaded by the first call (thread-safe, once per process: a failure is
// remembered and thrown again). Throws ef::Error naming the library and what to install when
// it cannot be loaded, or when it lacks one of the symbols above.
const MpiLibrary& mpi_library();
// The table if Open MPI is in this process already (loaded by an earlier mpi_library(), or by
// someone else: mpi4py), else nullptr; never loads it. Nobody can have started MPI in a process
// without libmpi, so comm::initialized() asks this instead of loading Open MPI to find out.
const MpiLibrary* mpi_library_if_loaded();

}  // namespace ef::dist::comm
