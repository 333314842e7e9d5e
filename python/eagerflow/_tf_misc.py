"""TF's small top-level functions and names: predicates (is_tensor, executing_eagerly), identity
and shape helpers (the assertions are in debugging.py), integer division forms, histograms, dtype
names and the enum classes TF's signatures mention."""
import enum as _enum
import logging as _logging
import time as _time

import numpy as _np

from . import _core
from . import errors as _errors

__all__ = ["is_tensor", "is_symbolic_tensor", "executing_eagerly", "inside_function", "identity_n", "ensure_shape",
           "get_static_value", "make_ndarray", "no_op", "group", "tuple", "control_dependencies", "realdiv", "truncatediv",
           "truncatemod", "saturate_cast", "shape_n", "parallel_stack", "unravel_index", "histogram_fixed_width", "histogram_fixed_width_bins",
           "timestamp", "get_logger", "broadcast_static_shape", "broadcast_dynamic_shape", "as_dtype",
           "UnconnectedGradients", "AggregationMethod", "VariableAggregation", "VariableSynchronization",
           "reverse_sequence", "guarantee_const", "grad_pass_through", "init_scope", "shape", "size"]


def is_tensor(x):
    """True for eagerflow tensors and variables (TF's 'tensor-like')."""
    return isinstance(x, (_core.Tensor, _core.Variable))


def is_symbolic_tensor(x):
    """True for the symbolic tensors of a trace."""
    return isinstance(x, _core.Tensor) and bool(_core._in_trace()) and get_static_value(x) is None


def shape(input, out_type=None, name=None):  # noqa: A002 - TF's names
    """tf.shape: the dims as a 1-d tensor, int32 unless out_type says int64 (TF's default)."""
    out_type = _core.DType.int32 if out_type is None else as_dtype(out_type)
    if out_type not in (_core.DType.int32, _core.DType.int64):
        raise TypeError(f"tf.shape: out_type must be int32 or int64, got {out_type.name}")
    s = _core.shape(input)
    return s if s.dtype == out_type else _core.cast(s, out_type)


def size(input, out_type=None, name=None):  # noqa: A002
    """tf.size: the number of elements as a scalar, int32 unless out_type says int64."""
    out_type = _core.DType.int32 if out_type is None else as_dtype(out_type)
    if out_type not in (_core.DType.int32, _core.DType.int64):
        raise TypeError(f"tf.size: out_type must be int32 or int64, got {out_type.name}")
    s = _core.size(input)
    return s if s.dtype == out_type else _core.cast(s, out_type)


def init_scope():
    """tf.init_scope: a context manager in which ops run eagerly even while ef.function traces
    (variable initializers, values computed once), as TF's."""
    return _core._InitScope()


def executing_eagerly():
    """False while ef.function traces (host code runs once, on symbolic tensors), True otherwise."""
    return not _core._in_trace()


def inside_function():
    return bool(_core._in_trace())


def identity_n(input, name=None):  # noqa: A002
    return [_core.identity(t) for t in input]


def ensure_shape(x, shape, name=None):
    """x, after checking that its shape fits `shape` (None entries match anything)."""
    t = _core.convert_to_tensor(x)
    want = None if shape is None else list(shape)
    have = list(t._shape_tuple)
    if want is not None:
        if len(want) != len(have) or any(w is not None and h is not None and int(w) != int(h) for w, h in zip(want, have)):
            raise _errors.InvalidArgumentError(f"ensure_shape: shape of tensor {tuple(have)} is not compatible with expected shape {tuple(want)}")
    return t


def get_static_value(tensor, partial=False):
    """The value as a NumPy array when it is known now (eagerly, or a trace's constant), else
    None. A variable's value may change, so it is None (TF's rule); a Python value comes back
    as it is."""
    if isinstance(tensor, _core.Variable):
        return None
    if isinstance(tensor, _core.Tensor):
        if _core._in_trace():
            try:
                return tensor.numpy()
            except Exception:
                return None
        return tensor.numpy()
    return tensor


def make_ndarray(tensor):
    return _np.asarray(tensor.numpy() if hasattr(tensor, "numpy") else tensor)


def no_op(name=None):
    return None


def group(*inputs, **kwargs):
    """Eager ops have already run (and traced ones run in order): nothing to group."""
    return None


def tuple(tensors, name=None, control_inputs=None):  # noqa: A001 - TF's name
    return list(tensors)


class control_dependencies:  # noqa: N801 - TF's name
    """A context manager: eagerflow runs effects in program order, eagerly and traced, so the
    dependencies hold without extra edges."""

    def __init__(self, control_inputs):
        self.control_inputs = control_inputs

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def realdiv(x, y, name=None):
    return _core.divide(x, y)


def truncatediv(x, y, name=None):
    """Division rounded towards zero (C's), in x's dtype."""
    a = _core.convert_to_tensor(x)
    b = _core.convert_to_tensor(y, dtype=a.dtype)
    q = _core.cast(a, _core.DType.float64) / _core.cast(b, _core.DType.float64)
    t = _core.where(q < 0.0, -_core.floor(-q), _core.floor(q))
    return _core.cast(t, a.dtype)


def truncatemod(x, y, name=None):
    """The remainder of truncatediv (the sign of x, as C's fmod)."""
    a = _core.convert_to_tensor(x)
    b = _core.convert_to_tensor(y, dtype=a.dtype)
    return a - truncatediv(a, b) * b


def saturate_cast(value, dtype, name=None):
    """tf.dtypes.saturate_cast: clamped to `dtype`'s range, then cast (300 -> uint8 255, -1 -> 0;
    NaN -> 0): no wrap-around."""
    return _core._saturate_cast(_core.convert_to_tensor(value), as_dtype(dtype))


def shape_n(input, out_type=_core.DType.int32, name=None):  # noqa: A002
    return [_core.cast(_core.shape(t), out_type) for t in input]


def parallel_stack(values, name=None):
    return _core.stack(list(values), 0)


def unravel_index(indices, dims, name=None):
    """[rank, N] coordinates of flat indices in a tensor of shape dims."""
    idx = _np.asarray(indices.numpy() if hasattr(indices, "numpy") else indices)
    d = [int(v) for v in (dims.numpy() if hasattr(dims, "numpy") else dims)]
    if (idx < 0).any() or (idx >= int(_np.prod(d))).any():
        raise _errors.InvalidArgumentError(f"unravel_index: an index is out of range for dims {d}")
    coords = _np.stack(_np.unravel_index(idx, d)).astype(idx.dtype if idx.dtype.kind == "i" else _np.int64)
    return _core.constant(coords)


def histogram_fixed_width_bins(values, value_range, nbins=100, dtype=_core.DType.int32, name=None):
    """The bin of each value among nbins equal bins over value_range (outside: the first or last)."""
    v = _core.cast(_core.convert_to_tensor(values), _core.DType.float64)
    r = _np.asarray(value_range.numpy() if hasattr(value_range, "numpy") else value_range, _np.float64)
    lo, hi = float(r[0]), float(r[1])
    scaled = _core.floor((v - lo) / (hi - lo) * float(nbins))
    return _core.cast(_core.clip_by_value(scaled, 0.0, float(nbins - 1)), dtype)


def histogram_fixed_width(values, value_range, nbins=100, dtype=_core.DType.int32, name=None):
    """Counts of values in nbins equal bins over value_range (outside values in the end bins)."""
    from . import math as _math
    bins = _core.reshape(histogram_fixed_width_bins(values, value_range, nbins, _core.DType.int64), [-1])
    return _core.cast(_math.unsorted_segment_sum(_core.ones_like(_core.cast(bins, _core.DType.int32)), bins, int(nbins)), dtype)


def timestamp(name=None):
    return _core.constant(_time.time(), dtype=_core.DType.float64)


def get_logger():
    return _logging.getLogger("tensorflow")


def broadcast_static_shape(shape_x, shape_y):
    from ._layers import TensorShape
    try:
        return TensorShape(_np.broadcast_shapes(tuple(shape_x), tuple(shape_y)))
    except ValueError as e:
        raise ValueError(f"Incompatible shapes for broadcasting: {tuple(shape_x)} and {tuple(shape_y)}") from e


def broadcast_dynamic_shape(shape_x, shape_y):
    a = [int(v) for v in (shape_x.numpy() if hasattr(shape_x, "numpy") else shape_x)]
    b = [int(v) for v in (shape_y.numpy() if hasattr(shape_y, "numpy") else shape_y)]
    try:
        return _core.constant(_np.array(_np.broadcast_shapes(tuple(a), tuple(b)), _np.int32))
    except ValueError as e:
        raise _errors.InvalidArgumentError(f"Incompatible shapes: {a} vs. {b}") from e


def as_dtype(type_value):
    """A DType from a DType, a name ('float32') or a NumPy dtype."""
    if isinstance(type_value, _core.DType):
        return type_value
    name = type_value if isinstance(type_value, str) else _np.dtype(type_value).name
    name = {"double": "float64", "float": "float32", "bool_": "bool", "int": "int32", "long": "int64"}.get(name, name)
    if not hasattr(_core.DType, name):
        raise TypeError(f"Cannot convert {type_value!r} to an eagerflow DType (eagerflow has float16, bfloat16, "
                        f"float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64 and bool)")
    return getattr(_core.DType, name)


class UnconnectedGradients(_enum.Enum):
    NONE = "none"
    ZERO = "zero"


class AggregationMethod:
    ADD_N = 0
    DEFAULT = 0
    EXPERIMENTAL_TREE = 1
    EXPERIMENTAL_ACCUMULATE_N = 2


class VariableAggregation(_enum.Enum):
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


class VariableSynchronization(_enum.Enum):
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


def reverse_sequence(input, seq_lengths, seq_axis=None, batch_axis=0, name=None):  # noqa: A002
    """Each batch entry's first seq_lengths[i] elements along seq_axis reversed, the rest kept."""
    x = _core.convert_to_tensor(input)
    lengths = _np.asarray(seq_lengths.numpy() if hasattr(seq_lengths, "numpy") else seq_lengths, _np.int64)
    rank = len(x._shape_tuple)
    s, b = int(seq_axis) % rank, int(batch_axis) % rank
    n = x._shape_tuple[s]
    # A gather index per (batch, position): reversed inside the length, identity after it.
    idx = _np.tile(_np.arange(n), (len(lengths), 1))
    for i, length in enumerate(lengths):
        idx[i, :length] = _np.arange(length)[::-1]
    shape = [1] * rank
    shape[b], shape[s] = len(lengths), n
    arranged = (idx if b < s else idx.T).reshape(shape)
    full = _np.broadcast_to(arranged, [d if d is not None else 1 for d in x._shape_tuple])
    return _core.take_along_axis(x, _core.constant(_np.ascontiguousarray(full).astype(_np.int64)), s)


def guarantee_const(input, name=None):  # noqa: A002
    return _core.identity(input)


def grad_pass_through(f):
    """f forward, the identity backward."""
    def wrapped(x):
        y = f(x)
        return x + _core.stop_gradient(y - x)
    return wrapped
