"""A symbolic tensor used where it has no value or outside its trace raises TF's Python class:
`.numpy()` of one an AttributeError (TF's SymbolicTensor has no `numpy`; TF programs catch
AttributeError for a tensor leaked out of a tf.function), a tensor leaked from one trace into
another a TypeError (TF: "... cannot be accessed from here"), a variable created on a later
trace a ValueError. Each error keeps eagerflow's class and message as well (they say why and
what to use), so code catching either class sees it."""
from . import _core
from .errors import FailedPreconditionError, InvalidArgumentError


class SymbolicTensorValueError(FailedPreconditionError, AttributeError):
    """A symbolic tensor has no value to give to Python."""


class LeakedTensorError(InvalidArgumentError, TypeError):
    """A symbolic tensor made by one trace was used in another."""


class LaterTraceVariableError(FailedPreconditionError, ValueError):
    """A variable created on a trace after the first (TF: "tf.function only supports singleton
    tf.Variables created on the first call")."""


_numpy = _core.Tensor.numpy


def _tensor_numpy(self):
    try:
        return _numpy(self)
    except FailedPreconditionError as e:
        if isinstance(e, SymbolicTensorValueError) or not self.is_symbolic:
            raise
        raise SymbolicTensorValueError(e.node_def, e.op, e.message) from None


_tensor_numpy.__doc__ = _numpy.__doc__
_core.Tensor.numpy = _tensor_numpy

# The C++ trace's words for these errors.
_LEAKED = ("[trace] a symbolic tensor", "from another trace")
_LATER_VARIABLE = ("was created on a later trace of",)


def as_tf_class(error):
    """The error a trace raised, as TF's class where eagerflow's C++ gives only its own."""
    if type(error) is InvalidArgumentError and all(w in error.message for w in _LEAKED):
        return LeakedTensorError(error.node_def, error.op, error.message)
    if type(error) is FailedPreconditionError and all(w in error.message for w in _LATER_VARIABLE):
        return LaterTraceVariableError(error.node_def, error.op, error.message)
    return error
