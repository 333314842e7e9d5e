"""Keras 3's dtype rules for keras.ops: standardize_dtype, result_type, and the conversions the ops share.

Keras promotes like JAX, not like TF: int32 + float16 is float16, int8 + uint8 is int16, a Python
scalar is "weak" (int32 tensor + 2 stays int32, + 2.5 becomes floatx), and float-valued ops (sqrt,
mean, exp, ...) of integers give floatx. The facts come from keras.backend.result_type in Keras 3.15.
"""
import numpy as _np

from ... import _core
from ...dtypes import as_dtype

_FLOATS = ("bfloat16", "float16", "float32", "float64")
_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
_ALIASES = {"float": "float32", "int": "int64" if _np.dtype(int).itemsize == 8 else "int32", "double": "float64",
            "half": "float16", "bool_": "bool"}


def floatx():
    from .. import config
    return config.floatx()


def standardize_dtype(dtype):
    """A dtype name as Keras spells it ("float32", "int64", "bool"); None is floatx()."""
    if dtype is None:
        return floatx()
    if dtype is int:
        return "int64" if _np.dtype(int).itemsize == 8 else "int32"
    if dtype is float:
        return "float32"
    if dtype is bool:
        return "bool"
    name = getattr(dtype, "name", None)
    if name is None:
        name = str(dtype) if isinstance(dtype, str) else _np.dtype(dtype).name
    name = _ALIASES.get(name, name)
    if name not in _FLOATS + _INTS + ("bool", "complex64", "complex128", "string"):
        raise ValueError(f"Invalid dtype: {dtype}")
    return name


def is_float_dtype(dtype):
    return standardize_dtype(dtype) in _FLOATS


def is_int_dtype(dtype):
    return standardize_dtype(dtype) in _INTS


def _is_weak(x):
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, _np.generic)


def _promote2(a, b):
    if a == b:
        return a
    if "complex128" in (a, b) or ("complex64" in (a, b) and "float64" in (a, b)):
        return "complex128"
    if "complex64" in (a, b):
        return "complex64"
    fa, fb = a in _FLOATS, b in _FLOATS
    if fa and fb:
        if {a, b} == {"bfloat16", "float16"}:
            return "float32"
        return max(a, b, key=_FLOATS.index)
    if fa or fb:  # JAX's lattice: any float wins over any integer, whatever the widths
        return a if fa else b
    if a == "bool" or b == "bool":
        return b if a == "bool" else a
    if {a, b} & {"uint64"} and (a.startswith("int") or b.startswith("int")):
        return "int64"
    return _np.promote_types(a, b).name


def result_type(*dtypes):
    """keras.backend.result_type: the dtype of an op on these dtypes (names, dtypes or Python types)."""
    strong, weak = [], []
    for d in dtypes:
        if d is int or d is float or d is bool:
            weak.append(d)
        else:
            strong.append(standardize_dtype(d))
    if not strong:
        if float in weak:
            return floatx()
        if int in weak:
            return "int32"
        return "bool" if weak else floatx()
    out = strong[0]
    for d in strong[1:]:
        out = _promote2(out, d)
    if float in weak and out not in _FLOATS and not out.startswith("complex"):
        out = floatx()
    elif int in weak and out == "bool":
        out = "int32"
    return out


def dtype_of(x):
    """The Keras dtype name of a tensor, array or Python value (Python scalars as their weak type)."""
    if isinstance(x, _core.Tensor) or hasattr(x, "dtype"):
        return standardize_dtype(x.dtype)
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int32"
    if isinstance(x, float):
        return floatx()
    return standardize_dtype(_np.asarray(x).dtype)


def _weak_type(x):
    return bool if isinstance(x, bool) else int if isinstance(x, int) else float if isinstance(x, float) else None


def tensor(x, dtype=None):
    """x as an eagerflow tensor, converted as keras.ops.convert_to_tensor does (Python ints int32,
    floats floatx, NumPy arrays their own dtype), then cast to dtype if given."""
    from ... import cast, convert_to_tensor
    if isinstance(x, _core.Tensor):
        t = x
    elif hasattr(x, "read_value") and hasattr(x, "assign"):
        t = x.read_value() if not hasattr(x, "value") else x.value()
    else:
        if dtype is None:
            if _is_weak(x):
                dtype = dtype_of(x)
            elif not isinstance(x, _np.ndarray) and not isinstance(x, _np.generic):
                arr = _np.asarray(x)
                if arr.dtype.kind == "f":
                    dtype = floatx()
                elif arr.dtype.kind in "iu":
                    dtype = "int32" if arr.dtype == _np.int64 else arr.dtype.name
        if dtype is not None and not isinstance(x, (_np.ndarray, _np.generic)):
            return convert_to_tensor(_np.asarray(x, dtype=standardize_dtype(dtype)) if standardize_dtype(dtype)
                                     != "bfloat16" else _np.asarray(x, dtype="float32"), dtype=as_dtype(standardize_dtype(dtype)))
        t = convert_to_tensor(x)
    if dtype is not None and standardize_dtype(t.dtype) != standardize_dtype(dtype):
        t = cast(t, as_dtype(standardize_dtype(dtype)))
    return t


def promote(*xs):
    """The arguments as tensors of one dtype, by Keras' rules (Python scalars weak)."""
    dt = result_type(*[_weak_type(x) or dtype_of(x) for x in xs])
    return [tensor(x, dt) for x in xs], dt


def float_dtype(x):
    """The dtype a float-valued op (sqrt, mean, ...) of x gives: x's if float, floatx for integers."""
    d = dtype_of(x)
    return d if d in _FLOATS or d.startswith("complex") else floatx()


def filled(t, value, dtype=None):
    """A tensor of t's shape (static or not) filled with value, in dtype (t's by default)."""
    from ... import cast, fill, zeros_like
    dt = as_dtype(standardize_dtype(dtype)) if dtype is not None else t.dtype
    if None not in list(t.shape):
        return fill(list(t.shape), cast(value, dt))
    return cast(zeros_like(t), dt) + cast(value, dt) if dt.name != "bool" else \
        cast(cast(zeros_like(t), as_dtype("int32")) + int(bool(value)), dt)


def shape_of(t):
    """t's shape as a list of ints when known at trace time (eagerflow's shape arguments want them),
    else as a tensor."""
    from ... import shape
    dims = list(t.shape)
    return dims if None not in dims else shape(t)


def broadcast_shape(*shapes):
    from ... import broadcast_dynamic_shape
    if all(isinstance(s, list) for s in shapes):
        return list(_np.broadcast_shapes(*[tuple(s) for s in shapes]))
    out = shapes[0]
    for s in shapes[1:]:
        out = broadcast_dynamic_shape(out, s)
    return out
