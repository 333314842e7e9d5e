"""ef.types, as tf.types: the types a program checks values against (experimental.*), and the
tracing protocol of tf.function (TraceType, __tf_tracing_type__)."""
import abc as _abc
import sys as _sys
import types as _pytypes
import typing as _typing

from . import _core
from ._function import Function as _Function

__all__ = ["experimental"]


class TraceType(_abc.ABC):
    """How tf.function keys a Python argument: a class whose objects `__tf_tracing_type__(context)`
    returns one of these is traced once per equal TraceType (its __eq__ and __hash__), and the
    trace runs with placeholder_value(...) in the argument's place.

    eagerflow's trace cache matches equal TraceTypes; is_subtype_of and
    most_specific_common_supertype (TF's cache generalization) are part of the interface but
    not consulted: a trace is reused for an equal TraceType only."""

    @_abc.abstractmethod
    def is_subtype_of(self, other):
        """True when every value of self is a value of other."""

    @_abc.abstractmethod
    def most_specific_common_supertype(self, others):
        """The narrowest TraceType that is a supertype of self and others (None if there is none)."""

    @_abc.abstractmethod
    def placeholder_value(self, placeholder_context):
        """The value the trace runs with in place of the argument."""

    def to_tensors(self, value):
        """The tensors of a value of this type (none for a pure Python value)."""
        return []

    def from_tensors(self, tensors):
        return self.placeholder_value(None)

    def flatten(self):
        return []

    def cast(self, value, cast_context):
        return value

    @_abc.abstractmethod
    def __eq__(self, other):
        ...

    @_abc.abstractmethod
    def __hash__(self):
        ...


@_typing.runtime_checkable
class SupportsTracingProtocol(_typing.Protocol):
    """An object that says its own TraceType."""

    def __tf_tracing_type__(self, context):
        ...


experimental = _pytypes.ModuleType(f"{__name__}.experimental", "tf.types.experimental")
experimental.TraceType = TraceType
experimental.SupportsTracingProtocol = SupportsTracingProtocol
experimental.ConcreteFunction = _core.ConcreteFunction
experimental.PolymorphicFunction = _Function
experimental.GenericFunction = _Function
_sys.modules[experimental.__name__] = experimental
