"""ef.compat, as tf.compat: string and path conversions, dimension helpers, forward
compatibility dates, and `v1`/`v2`.

`v2` is eagerflow itself (TF 2's API). `v1` holds only the TF 1 names whose meaning survives in an
eager TF 2 program: switches that ask for TF 2 behaviour (eager execution, resource variables,
control flow v2, tensor equality), which are already on and cannot be turned off, and the
`Dimension` class of TF 1 shapes. Graph-mode TF 1 (Session, placeholder, variable_scope,
collections) is not offered: a name that seemed to work and did not would be worse than none.
"""
import contextlib as _contextlib
import datetime as _datetime
import numbers as _numbers
import os as _os
import sys as _sys
import types as _types

import numpy as _np

__all__ = ["as_bytes", "as_text", "as_str", "as_str_any", "path_to_str", "forward_compatible",
           "forward_compatibility_horizon", "dimension_value", "dimension_at_index", "integral_types", "real_types",
           "complex_types", "bytes_or_text_types", "v1", "v2"]

integral_types = (_numbers.Integral, _np.integer)
real_types = (_numbers.Real, _np.integer, _np.floating)
complex_types = (_numbers.Complex, _np.number)
bytes_or_text_types = (bytes, str)


def as_bytes(bytes_or_text, encoding="utf-8"):
    """bytes (and bytearray) as bytes; str encoded."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8"):
    """str as str; bytes decoded."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text  # TF 2: str is text


def as_str_any(value, encoding="utf-8"):
    """Bytes decoded; anything else str()."""
    if isinstance(value, bytes):
        return as_str(value, encoding=encoding)
    return str(value)


def path_to_str(path):
    """A path-like object's path as str; any other value unchanged (TF's rule)."""
    if hasattr(path, "__fspath__"):
        path = as_str_any(_os.fspath(path))
    return path


# TF 2.21's horizon: an op's new behaviour dated before it is one this TF reads and writes.
_HORIZON = _datetime.date(2026, 1, 16)
_horizon = [_HORIZON]


def forward_compatible(year, month, day):
    """True when the date is before the forward compatibility horizon."""
    return _horizon[0] > _datetime.date(year, month, day)


@_contextlib.contextmanager
def forward_compatibility_horizon(year, month, day):
    """Within the block the horizon is this date (for tests of both sides of a change)."""
    before = _horizon[0]
    _horizon[0] = _datetime.date(year, month, day)
    try:
        yield
    finally:
        _horizon[0] = before


class Dimension:
    """One dimension of a TF 1 TensorShape: an int >= 0, or None for unknown. Arithmetic with an
    unknown dimension is unknown; comparisons with one are None (neither true nor false)."""

    __slots__ = ("_value",)

    def __init__(self, value):
        if isinstance(value, Dimension):
            value = value.value
        if value is None:
            self._value = None
            return
        if isinstance(value, (bytes, str)):
            raise TypeError("Dimension value must be integer or None or have an __index__ method, "
                            f"got value '{value!r}' with type '{type(value)}'")
        try:
            self._value = int(value.__index__())
        except AttributeError:
            raise TypeError("Dimension value must be integer or None or have an __index__ method, "
                            f"got value '{value!r}' with type '{type(value)}'") from None
        if self._value < 0:
            raise ValueError(f"Dimension {self._value} must be >= 0")

    @property
    def value(self):
        return self._value

    def __repr__(self):
        return f"Dimension({self._value!r})"

    def __str__(self):
        return "?" if self._value is None else str(self._value)

    def __int__(self):
        return self._value  # None: Python's TypeError, as TF's

    def __index__(self):
        return self._value

    def __bool__(self):
        return bool(self._value)

    def is_compatible_with(self, other):
        other = as_dimension(other)
        return self._value is None or other.value is None or self._value == other.value

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {other} are not compatible")

    def merge_with(self, other):
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(self._value if self._value is not None else other.value)

    def _binary(self, other, fn):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return Dimension(None)
        return Dimension(fn(self._value, other.value))

    def _rbinary(self, other, fn):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        return other._binary(self, fn)

    __add__ = lambda self, o: self._binary(o, lambda a, b: a + b)  # noqa: E731
    __radd__ = lambda self, o: self._rbinary(o, lambda a, b: a + b)  # noqa: E731
    __sub__ = lambda self, o: self._binary(o, lambda a, b: a - b)  # noqa: E731
    __rsub__ = lambda self, o: self._rbinary(o, lambda a, b: a - b)  # noqa: E731
    __mul__ = lambda self, o: self._binary(o, lambda a, b: a * b)  # noqa: E731
    __rmul__ = lambda self, o: self._rbinary(o, lambda a, b: a * b)  # noqa: E731
    __floordiv__ = lambda self, o: self._binary(o, lambda a, b: a // b)  # noqa: E731
    __rfloordiv__ = lambda self, o: self._rbinary(o, lambda a, b: a // b)  # noqa: E731
    __mod__ = lambda self, o: self._binary(o, lambda a, b: a % b)  # noqa: E731
    __rmod__ = lambda self, o: self._rbinary(o, lambda a, b: a % b)  # noqa: E731

    def __truediv__(self, other):
        raise TypeError(f"unsupported operand type(s) for /: 'Dimension' and '{type(other).__name__}', "
                        "please use // instead")

    def _compare(self, other, fn):
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other.value is None:
            return None
        return fn(self._value, other.value)

    __eq__ = lambda self, o: self._compare(o, lambda a, b: a == b)  # noqa: E731
    __ne__ = lambda self, o: self._compare(o, lambda a, b: a != b)  # noqa: E731
    __lt__ = lambda self, o: self._compare(o, lambda a, b: a < b)  # noqa: E731
    __le__ = lambda self, o: self._compare(o, lambda a, b: a <= b)  # noqa: E731
    __gt__ = lambda self, o: self._compare(o, lambda a, b: a > b)  # noqa: E731
    __ge__ = lambda self, o: self._compare(o, lambda a, b: a >= b)  # noqa: E731
    __hash__ = None  # TF's Dimension is unhashable (its __eq__ may answer None)


def as_dimension(value):
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension):
    """The int (or None) of a dimension, whether a Dimension or already an int/None."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape, index):
    """Dimension `index` of a shape as a Dimension; of an unknown-rank shape, Dimension(None)."""
    dims = getattr(shape, "dims", shape)
    if dims is None or getattr(shape, "rank", 0) is None:
        return Dimension(None)
    return as_dimension(list(dims)[index])


def _executing_eagerly():
    from . import _tf_misc
    return _tf_misc.executing_eagerly()


def _already_on(what):
    def switch():
        return None
    switch.__name__ = f"enable_{what}"
    switch.__doc__ = f"TF 2's {what.replace('_', ' ')} is how eagerflow always runs: nothing to switch on."
    return switch


def _always_true(what):
    def query():
        return True
    query.__name__ = what
    query.__doc__ = "True: eagerflow has only TF 2's behaviour."
    return query


def enable_eager_execution(config=None, device_policy=None, execution_mode=None):
    """Eager execution is on from import (TF 2's default); TF 1 asked for it explicitly."""
    return None


v1 = _types.ModuleType(f"{__name__}.v1", "tf.compat.v1: the TF 1 names that still mean something in eager TF 2.")
for _name, _value in {
        "enable_eager_execution": enable_eager_execution,
        "executing_eagerly": _executing_eagerly,
        "enable_v2_behavior": _already_on("v2_behavior"),
        "enable_resource_variables": _already_on("resource_variables"),
        "enable_control_flow_v2": _already_on("control_flow_v2"),
        "enable_tensor_equality": _already_on("tensor_equality"),
        "enable_v2_tensorshape": _already_on("v2_tensorshape"),
        "resource_variables_enabled": _always_true("resource_variables_enabled"),
        "control_flow_v2_enabled": _always_true("control_flow_v2_enabled"),
        "Dimension": Dimension, "dimension_value": dimension_value, "dimension_at_index": dimension_at_index,
        "as_bytes": as_bytes, "as_text": as_text, "as_str": as_str, "as_str_any": as_str_any,
        "forward_compatible": forward_compatible,
        "forward_compatibility_horizon": forward_compatibility_horizon}.items():
    setattr(v1, _name, _value)
v1.compat = _types.ModuleType(f"{__name__}.v1.compat", "tf.compat.v1.compat: as tf.compat.")
for _name in __all__[:-2]:
    setattr(v1.compat, _name, globals()[_name])
_sys.modules[v1.__name__] = v1

v2 = _sys.modules[__name__.rsplit(".", 1)[0]]  # TF 2's API is eagerflow's own
