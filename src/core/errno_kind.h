#pragma once
// The error kind of a failed system call, for every module that opens files (io, data, summary).
#include "eagerflow/core/error.h"

namespace ef::detail {

// As TF's file system reports errno: ENOENT NOT_FOUND (a FileNotFoundError in Python),
// EACCES/EPERM/EROFS PERMISSION_DENIED, ENOSPC and other limits RESOURCE_EXHAUSTED, EEXIST
// ALREADY_EXISTS, EISDIR/ENOTDIR FAILED_PRECONDITION, ENAMETOOLONG/EINVAL INVALID_ARGUMENT;
// others UNKNOWN.
ErrorKind errno_kind(int errnum);

}  // namespace ef::detail
