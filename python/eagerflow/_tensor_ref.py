"""tensor.ref() / variable.ref(): a hashable reference to the object itself (TF's Reference:
equal only for the same object, deref() gives it back), and tf.compat.v1's switch of tensor
equality (disable_tensor_equality: `==` on tensors is identity, as TF 1's; enable: elementwise,
TF 2's and eagerflow's default)."""
from . import _core, compat


class Reference:
    """A hashable reference to a tensor or variable, by identity."""

    __slots__ = ("_wrapped",)

    def __init__(self, wrapped):
        self._wrapped = wrapped

    def deref(self):
        return self._wrapped

    def __hash__(self):
        return id(self._wrapped)

    def __eq__(self, other):
        return isinstance(other, Reference) and self._wrapped is other._wrapped

    def __ne__(self, other):
        return not self.__eq__(other)

    def __repr__(self):
        return f"<Reference wrapping {self._wrapped!r}>"


def _ref(self):
    """A hashable reference to this object (tf.Tensor.ref): use it as a dict key or set element."""
    return Reference(self)


_core.Tensor.ref = _ref
_core.Variable.ref = _ref

# Saved at import, before any switch: eagerflow's elementwise comparisons.
_elementwise = (_core.Tensor.__eq__, _core.Tensor.__ne__, _core.Tensor.__hash__)


def disable_tensor_equality():
    """TF 1's tensor equality: `a == b` is `a is b` (a Python bool)."""
    _core.Tensor.__eq__ = lambda self, other: self is other
    _core.Tensor.__ne__ = lambda self, other: self is not other
    _core.Tensor.__hash__ = _elementwise[2]


def enable_tensor_equality():
    """TF 2's tensor equality (eagerflow's default): `a == b` compares elementwise."""
    _core.Tensor.__eq__, _core.Tensor.__ne__, _core.Tensor.__hash__ = _elementwise


compat.v1.disable_tensor_equality = disable_tensor_equality
compat.v1.enable_tensor_equality = enable_tensor_equality
