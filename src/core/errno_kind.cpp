#include "core/errno_kind.h"

#include <cerrno>

namespace ef::detail {

ErrorKind errno_kind(int errnum) {
  switch (errnum) {
    case ENOENT: return kFileNotFound;
    case EACCES:
    case EPERM:
    case EROFS: return ErrorCode::permission_denied;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EFBIG: return ErrorCode::resource_exhausted;
    case EEXIST: return ErrorCode::already_exists;
    case EISDIR:
    case ENOTDIR: return ErrorCode::failed_precondition;
    case ENAMETOOLONG:
    case EINVAL: return ErrorCode::invalid_argument;
    default: return ErrorCode::unknown;
  }
}

}  // namespace ef::detail
