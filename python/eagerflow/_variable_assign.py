"""Variable.assign / assign_add / assign_sub with TF's signature (value, use_locking, name,
read_value) and TF's error for an assign of another shape: ValueError, raised where the variable
is assigned (eagerly or while ef.function traces), as TF's. The C++ methods do the update."""
import numpy as _np

from . import _core

_cpp = {name: getattr(_core.Variable, name) for name in ("assign", "assign_add", "assign_sub")}


def _static_shape(value):
    if isinstance(value, (_core.Tensor, _core.Variable)):
        return tuple(value._shape_tuple)
    try:
        return tuple(_np.shape(value))
    except ValueError:  # a ragged list: the conversion's own error says so
        return None


def _check_assign_shape(variable, value):
    have, want = _static_shape(value), tuple(variable._shape_tuple)
    if have is None or len(have) != len(want):
        fits = have is None
    else:
        fits = all(h is None or w is None or h == w for h, w in zip(have, want))
    if not fits:
        name = variable.name if ":" in variable.name else variable.name + ":0"
        raise ValueError(f"Cannot assign value to variable ' {name}': Shape mismatch.The variable shape {want}, "
                         f"and the assigned value shape {have} are incompatible.")


def _method(name):
    update = _cpp[name]

    def method(self, value, use_locking=None, name=None, read_value=True):
        if update is _cpp["assign"]:
            _check_assign_shape(self, value)
        out = update(self, value)
        return out if read_value else None
    method.__name__ = name
    method.__doc__ = f"TF's Variable.{name}(value, use_locking=None, name=None, read_value=True)."
    return method


for _name in _cpp:
    setattr(_core.Variable, _name, _method(_name))
