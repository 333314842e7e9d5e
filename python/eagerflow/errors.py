"""ef.errors: TF's exception classes (tf.errors), raised for the errors of eagerflow's C++ core.

Every error of the C++ core carries a kind (include/eagerflow/core/error.h): TF's status code and,
where TF's Python layer or Keras raise a Python built-in that the code does not imply, that
built-in. It reaches Python as the class of its code here, so a TF program's
`except tf.errors.NotFoundError` works with `import eagerflow as tf`.

The rule for Python's built-ins (TF's own classes derive from Exception only; ours also derive
from the built-in a TF or Keras program catches for the same failure):

- Every class is an OpError, and OpError is an ef.Error, which is a RuntimeError: code written
  for `except ef.Error` or `except RuntimeError` catches every error, as before the kinds.
- InvalidArgumentError is also a ValueError: Keras raises ValueError where TF's kernels report
  INVALID_ARGUMENT (a layer's input shape that does not fit, a bad option).
- UnimplementedError is also a NotImplementedError (a feature eagerflow does not have).
- An error whose kind names a built-in besides its code is raised as a subclass of its code's
  class and that built-in, with the same name: a wrong argument type is INVALID_ARGUMENT for
  TF's kernels and TypeError for TF's graph builder and Keras, so `except TypeError`,
  `except ValueError` and `except ef.errors.InvalidArgumentError` all catch it; a missing file is
  a NotFoundError, a FileNotFoundError (an OSError, as tf.keras 2's load_model raises) and a
  ValueError (as Keras 3's load_model raises); fit before compile is a FailedPreconditionError
  and the ValueError Keras 3 raises (tf.keras 2 raised RuntimeError, which it is too); a
  variable created on a later trace is a FailedPreconditionError and the ValueError TF raises.
- An error of the Python code a dataset or scan runs comes back with the kind of its exception:
  an ef.errors class keeps its own; ValueError is INVALID_ARGUMENT, TypeError too (still a
  TypeError), NotImplementedError UNIMPLEMENTED, StopIteration and IndexError OUT_OF_RANGE,
  MemoryError RESOURCE_EXHAUSTED (the codes TF's py_function gives them), anything else UNKNOWN.

Each class has TF's constructor (node_def, op, message) and attributes (.message, .op,
.node_def, .error_code); ef.errors.INVALID_ARGUMENT and the other codes are TF's numbers. A
single argument is taken as the message too: ef.errors.NotFoundError("no such thing").
"""
import atexit as _atexit

from . import _core

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(_core.Error):
    """The base of TF's error classes: an ef.Error (a RuntimeError) with TF's attributes."""

    _code = None  # the code of a class of one code (the subclasses below)

    def __init__(self, node_def=None, op=None, message=None, *args):
        if message is None and op is None and isinstance(node_def, str):  # OpError("message"), as ef.Error
            node_def, message = None, node_def
        code = type(self)._code
        if code is None:  # OpError(node_def, op, message, error_code) as TF's
            code = args[0] if args else UNKNOWN
        super().__init__(message if message is not None else "")
        self._node_def = node_def
        self._op = op
        self._message = message if message is not None else ""
        self._error_code = code

    @property
    def message(self):
        return self._message

    @property
    def op(self):
        return self._op

    @property
    def node_def(self):
        return self._node_def

    @property
    def error_code(self):
        return self._error_code

    @property
    def experimental_payloads(self):
        return {}

    def __str__(self):
        return self._message

    def __reduce__(self):
        if type(self) in _OURS:
            return (_from_status, (self._error_code, getattr(type(self), "_builtin", 0), self._message))
        return super().__reduce__()


def _kind_class(name, code, builtin, doc):
    bases = (OpError,) if builtin is None else (OpError, builtin)
    return type(name, bases, {"__doc__": doc, "__module__": __name__, "_code": code})


CancelledError = _kind_class("CancelledError", CANCELLED, None, "An operation or step was cancelled.")
UnknownError = _kind_class("UnknownError", UNKNOWN, None, "An error of unknown origin (a library's exception).")
InvalidArgumentError = _kind_class(
    "InvalidArgumentError", INVALID_ARGUMENT, ValueError,
    "An argument the op or layer refuses: a shape, a dtype, a value. Also a ValueError (Keras raises that).")
DeadlineExceededError = _kind_class("DeadlineExceededError", DEADLINE_EXCEEDED, None, "A deadline expired.")
NotFoundError = _kind_class("NotFoundError", NOT_FOUND, None, "A file or entity that does not exist.")
AlreadyExistsError = _kind_class("AlreadyExistsError", ALREADY_EXISTS, None, "An entity that exists already.")
PermissionDeniedError = _kind_class("PermissionDeniedError", PERMISSION_DENIED, None, "No permission (a file's mode).")
ResourceExhaustedError = _kind_class(
    "ResourceExhaustedError", RESOURCE_EXHAUSTED, None, "Out of memory, disk space or another limit.")
FailedPreconditionError = _kind_class(
    "FailedPreconditionError", FAILED_PRECONDITION, None,
    "The system is not in the state the operation needs (a model not compiled, a layer not built).")
AbortedError = _kind_class("AbortedError", ABORTED, None, "The operation was aborted (a concurrent change).")
OutOfRangeError = _kind_class("OutOfRangeError", OUT_OF_RANGE, None, "Past the end: of a dataset, of a valid range.")
UnimplementedError = _kind_class(
    "UnimplementedError", UNIMPLEMENTED, NotImplementedError,
    "A feature eagerflow does not have (yet). Also a NotImplementedError.")
InternalError = _kind_class("InternalError", INTERNAL, None, "An internal invariant broke: a bug in eagerflow.")
UnavailableError = _kind_class("UnavailableError", UNAVAILABLE, None, "A service (MPI) is not available.")
DataLossError = _kind_class("DataLossError", DATA_LOSS, None, "A damaged file: data lost or corrupted.")
UnauthenticatedError = _kind_class(
    "UnauthenticatedError", UNAUTHENTICATED, None, "The request has no valid credentials (TF's remote services).")


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation on a symbolic tensor inside ef.function that needs its value (`if t:`,
    bool(t), int(t)): TF's class, a TypeError. eagerflow's error for it is this class and a
    FailedPreconditionError."""

_BY_CODE = {c._code: c for c in (
    CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError, NotFoundError, AlreadyExistsError,
    PermissionDeniedError, ResourceExhaustedError, FailedPreconditionError, AbortedError, OutOfRangeError,
    UnimplementedError, InternalError, UnavailableError, DataLossError, UnauthenticatedError)}
# ef::PythonBuiltin's values (core/error.h): none, type_error, value_error, not_implemented_error,
# file_not_found_error. A missing file is a FileNotFoundError (an OSError: tf.keras 2's load_model
# raises OSError) and a ValueError (Keras 3's load_model raises ValueError("File not found")).
_BUILTINS = {1: (TypeError,), 2: (ValueError,), 3: (NotImplementedError,), 4: (FileNotFoundError, ValueError)}
_VARIANTS = {}  # (code, builtin) -> the class of the code that is also the built-in
_OURS = set(_BY_CODE.values())


def _class_for(code, builtin=0):
    base = _BY_CODE.get(code, UnknownError)
    extra = tuple(b for b in _BUILTINS.get(builtin, ()) if not issubclass(base, b))
    if not extra:
        return base
    cls = _VARIANTS.get((code, builtin))
    if cls is None:
        # Named as its code's class: a traceback reads `eagerflow.errors.InvalidArgumentError: ...`.
        cls = type(base.__name__, (base,) + extra, {"__doc__": base.__doc__, "__module__": __name__,
                                                    "__qualname__": base.__qualname__, "_builtin": builtin})
        _VARIANTS[(code, builtin)] = cls
        _OURS.add(cls)
    return cls


_SYMBOLIC_VALUE = "[tensor] cannot use a symbolic tensor "  # python/src/tensor.cpp: symbolic_value_error
_graph_operator_class = []


def _from_status(code, builtin, message):
    """The exception for an ef::Error of this kind (called by the C++ translator, python/src/errors.cpp)."""
    cls = _class_for(code, builtin)
    if code == FAILED_PRECONDITION and builtin == 1 and message.startswith(_SYMBOLIC_VALUE):
        # bool()/int()/float() of a symbolic tensor: TF's OperatorNotAllowedInGraphError too.
        if not _graph_operator_class:
            _graph_operator_class.append(type(cls.__name__, (cls, OperatorNotAllowedInGraphError), {
                "__doc__": cls.__doc__, "__module__": __name__, "__qualname__": cls.__qualname__, "_builtin": builtin}))
            _OURS.add(_graph_operator_class[0])
        cls = _graph_operator_class[0]
    return cls(None, None, message)


def exception_type_from_error_code(error_code):
    """The class of a code, as tf.errors.exception_type_from_error_code."""
    if error_code not in _BY_CODE:
        raise KeyError(f"no error class for error code {error_code!r}")
    return _BY_CODE[error_code]


def error_code_from_exception_type(cls):
    """The code of a class, as tf.errors.error_code_from_exception_type."""
    code = getattr(cls, "_code", None)
    if code is None or not issubclass(cls, OpError):
        raise KeyError(f"{cls!r} is not an error class of ef.errors")
    return code


_core._set_error_factory(_from_status)
_atexit.register(_core._set_error_factory, None)  # before the interpreter clears this module
