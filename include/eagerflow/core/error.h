#pragma once
// ef::Error: every user-facing failure. Messages start with a tag naming the API
// (`[matmul] ...`) and, when raised inside a layer call, end with the layer path.
//
// Each error has a kind: TF's status code (what TF's C++ core would report: a shape that does
// not fit is INVALID_ARGUMENT, a missing file NOT_FOUND) and, where TF's Python code or Keras
// raise a Python built-in that the status does not imply, that built-in (a wrong argument type
// is a TypeError there). Python raises ef.errors.<Code>Error, also an instance of that built-in
// (python/eagerflow/errors.py has the rule).
#include <stdexcept>
#include <string>

namespace ef {

// TF's status codes, with TF's numbers (tf.errors.INVALID_ARGUMENT == 3).
enum class ErrorCode : int {
  cancelled = 1,
  unknown = 2,
  invalid_argument = 3,
  deadline_exceeded = 4,
  not_found = 5,
  already_exists = 6,
  permission_denied = 7,
  resource_exhausted = 8,
  failed_precondition = 9,
  aborted = 10,
  out_of_range = 11,
  unimplemented = 12,
  internal = 13,
  unavailable = 14,
  data_loss = 15,
};

// "INVALID_ARGUMENT": TF's name of the code.
const char* name_of(ErrorCode code);

// A Python built-in the error is raised as besides its code's class, where TF's Python layer or
// Keras raise that built-in. `none`: only what the code implies (INVALID_ARGUMENT is already a
// ValueError, UNIMPLEMENTED a NotImplementedError in Python).
enum class PythonBuiltin : unsigned char { none, type_error, value_error, not_implemented_error, file_not_found_error };

struct ErrorKind {
  ErrorCode code = ErrorCode::invalid_argument;
  PythonBuiltin python = PythonBuiltin::none;
  constexpr ErrorKind() = default;
  constexpr ErrorKind(ErrorCode c, PythonBuiltin p = PythonBuiltin::none) : code(c), python(p) {}  // NOLINT: implicit
  friend constexpr bool operator==(const ErrorKind&, const ErrorKind&) = default;
};

// A value of the wrong type (a float tensor where an integer one is required, a dtype mismatch):
// INVALID_ARGUMENT as TF's kernels report it, TypeError as TF's graph builder and Keras raise it.
inline constexpr ErrorKind kWrongType{ErrorCode::invalid_argument, PythonBuiltin::type_error};
// A file that does not exist: NOT_FOUND; in Python also FileNotFoundError (an OSError, as tf.keras 2's
// load_model raises) and ValueError (as Keras 3's).
inline constexpr ErrorKind kFileNotFound{ErrorCode::not_found, PythonBuiltin::file_not_found_error};

class Error : public std::runtime_error {
 public:
  // INVALID_ARGUMENT, the kind of most errors: an argument (a shape, a dtype, a value) the API refuses.
  explicit Error(const std::string& message);
  Error(ErrorKind kind, const std::string& message);
  ErrorKind kind() const { return kind_; }
  ErrorCode code() const { return kind_.code; }

 private:
  ErrorKind kind_;
};

// The kind of any exception, for code that wraps one with more context and must keep its
// kind: an ef::Error's own; std::bad_alloc and std::length_error RESOURCE_EXHAUSTED,
// std::out_of_range OUT_OF_RANGE, std::invalid_argument and std::domain_error INVALID_ARGUMENT;
// any other UNKNOWN (as TF reports an exception of unknown origin).
ErrorKind kind_of(const std::exception& e);

// Builds "[tag] message" and appends the active layer/name-scope path, if any.
// Without a kind: INVALID_ARGUMENT (an op's shape or dtype rule, a bad option: most callers).
[[noreturn]] void fail(const std::string& tag, const std::string& message);
[[noreturn]] void fail(ErrorKind kind, const std::string& tag, const std::string& message);

// Name scopes (the layer path) live in core so that op errors can name the layer they
// came from without ops depending on nn.
class NameScope {
 public:
  explicit NameScope(std::string name);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;
  // "outer/inner" for the scopes active on this thread; empty when none.
  static std::string current_path();
};

}  // namespace ef
