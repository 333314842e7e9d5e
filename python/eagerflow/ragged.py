"""ef.ragged and ef.RaggedTensor, as TF's: a tensor whose rows have different lengths, stored as
flat_values plus int64 row_splits (row i is values[splits[i]:splits[i+1]]). Elementwise ops map
over the flat values; reductions over the ragged axis are segment reductions; to_tensor pads
with a scatter. One ragged dimension (the second); values may have uniform inner dims."""
import numpy as _np

from . import _core
from . import math as _math

__all__ = ["RaggedTensor", "constant", "range", "map_flat_values", "stack", "boolean_mask",
           "row_splits_to_segment_ids", "segment_ids_to_row_splits"]


def _int64(x):
    return _core.cast(_core.convert_to_tensor(x), _core.DType.int64)


class RaggedTensor:
    """tf.RaggedTensor: build it with from_row_splits, from_row_lengths, from_value_rowids,
    from_tensor or tf.ragged.constant."""

    def __init__(self, values, row_splits, _internal=False):
        if not _internal:
            raise ValueError("RaggedTensor: use RaggedTensor.from_row_splits / from_row_lengths / tf.ragged.constant")
        self._values = _core.convert_to_tensor(values)
        self._row_splits = _int64(row_splits)
        if self._row_splits.is_symbolic or self._values.is_symbolic:
            return  # inside ef.function: the op that made the splits checked them (split, unicode_decode)
        splits = self._row_splits.numpy()
        if splits.ndim != 1 or len(splits) < 1 or splits[0] != 0 or (_np.diff(splits) < 0).any():
            raise ValueError(f"RaggedTensor: row_splits must start at 0 and not decrease, got {splits}")
        n = self._values._shape_tuple[0]
        if n is not None and splits[-1] != n:
            raise ValueError(f"RaggedTensor: row_splits end at {splits[-1]} for {n} values")

    # ---- construction
    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        return cls(values, row_splits, _internal=True)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        lengths = _np.asarray(_int64(row_lengths).numpy())
        if (lengths < 0).any():
            raise ValueError("RaggedTensor.from_row_lengths: lengths must be >= 0")
        return cls(values, _np.concatenate([[0], _np.cumsum(lengths)]).astype(_np.int64), _internal=True)

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        ids = _int64(value_rowids).numpy()
        n = int(nrows) if nrows is not None else (int(ids.max()) + 1 if len(ids) else 0)
        if len(ids) and ((_np.diff(ids) < 0).any() or ids[0] < 0 or ids[-1] >= n):
            raise ValueError("RaggedTensor.from_value_rowids: value_rowids must be sorted and in [0, nrows)")
        return cls.from_row_lengths(values, _np.bincount(ids, minlength=n).astype(_np.int64))

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        starts = _int64(row_starts).numpy()
        n = _core.convert_to_tensor(values)._shape_tuple[0]
        return cls(values, _np.concatenate([starts, [n]]).astype(_np.int64), _internal=True)

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None):
        t = _core.convert_to_tensor(tensor)
        host = t.numpy()
        rows, width = host.shape[0], host.shape[1]
        if lengths is not None:
            lens = _np.asarray(lengths, _np.int64)
        elif padding is not None:
            pad = _np.asarray(padding)
            is_pad = (host == pad) if host.ndim == 2 else (host == pad).all(axis=tuple(range(2, host.ndim)))
            lens = _np.array([width - _np.argmax(~r[::-1]) if (~r).any() else 0 for r in is_pad], _np.int64)
        else:
            lens = _np.full(rows, width, _np.int64)
        idx = _np.array([[i, j] for i in _builtins_range(rows) for j in _builtins_range(int(lens[i]))], _np.int64).reshape(-1, 2)
        values = _core.gather_nd(t, _core.constant(idx)) if len(idx) else _core.constant(_np.zeros((0,) + host.shape[2:], host.dtype))
        return cls.from_row_lengths(values, lens)

    # ---- structure
    @property
    def values(self):
        return self._values

    @property
    def flat_values(self):
        return self._values

    @property
    def row_splits(self):
        return self._row_splits

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def ragged_rank(self):
        return 1

    @property
    def shape(self):
        from ._layers import TensorShape
        return TensorShape((self.nrows_int(),) + (None,) + tuple(self._values._shape_tuple[1:]))

    def nrows_int(self):
        return int(self._row_splits._shape_tuple[0]) - 1

    def nrows(self, out_type=_core.DType.int64, name=None):
        return _core.constant(self.nrows_int(), dtype=out_type)

    def row_lengths(self, axis=1, name=None):
        s = self._row_splits
        return s[1:] - s[:-1]

    def row_starts(self, name=None):
        return self._row_splits[:-1]

    def row_limits(self, name=None):
        return self._row_splits[1:]

    def value_rowids(self, name=None):
        return row_splits_to_segment_ids(self._row_splits)

    def bounding_shape(self, axis=None, name=None, out_type=_core.DType.int64):
        lengths = self.row_lengths().numpy()
        dims = [self.nrows_int(), int(lengths.max()) if len(lengths) else 0] + list(self._values._shape_tuple[1:])
        out = _core.constant(_np.array(dims, _np.int64))
        return out if axis is None else out[axis]

    def with_values(self, new_values):
        return RaggedTensor(new_values, self._row_splits, _internal=True)

    with_flat_values = with_values

    # ---- conversion
    def to_tensor(self, default_value=None, name=None, shape=None):
        """Rows padded to the longest (or to `shape`) with default_value (0)."""
        splits = self._row_splits.numpy()
        lengths = _np.diff(splits)
        width = int(lengths.max()) if len(lengths) else 0
        rows = self.nrows_int()
        if shape is not None:
            rows = rows if shape[0] is None else int(shape[0])
            width = width if shape[1] is None else int(shape[1])
        ids = _np.repeat(_np.arange(len(lengths)), lengths)
        cols = _np.arange(int(splits[-1])) - _np.repeat(splits[:-1], lengths)
        keep = _np.flatnonzero((ids < rows) & (cols < width))
        idx = _np.stack([ids[keep], cols[keep]], 1).astype(_np.int64)
        vals = _core.gather(self._values, _core.constant(keep.astype(_np.int64)), 0)
        inner = list(self._values._shape_tuple[1:])
        out = _core.scatter_nd(_core.constant(idx.reshape(-1, 2)), vals, [rows, width] + inner)
        if default_value is None or default_value == 0:
            return out
        present = _core.scatter_nd(_core.constant(idx.reshape(-1, 2)), _core.ones_like(vals), [rows, width] + inner)
        return _core.where(present != 0, out, _core.full_like(out, float(default_value)))

    def to_list(self):
        v = self._values.numpy()
        s = self._row_splits.numpy()
        return [v[s[i]:s[i + 1]].tolist() for i in _builtins_range(len(s) - 1)]

    def numpy(self):
        v = self._values.numpy()
        s = self._row_splits.numpy()
        out = _np.empty(len(s) - 1, dtype=object)
        for i in _builtins_range(len(s) - 1):
            out[i] = v[s[i]:s[i + 1]]
        return out

    def __repr__(self):
        return f"<tf.RaggedTensor {self.to_list()}>"

    __str__ = __repr__

    # ---- indexing
    def __getitem__(self, key):
        if isinstance(key, int):
            n = self.nrows_int()
            if not -n <= key < n:
                raise IndexError(f"RaggedTensor index {key} out of range for {n} rows")
            key %= n
            s = self._row_splits.numpy()
            return self._values[int(s[key]):int(s[key + 1])]
        if isinstance(key, _builtins_slice):
            rows = _builtins_range(*key.indices(self.nrows_int()))
            s = self._row_splits.numpy()
            parts = [self._values[int(s[i]):int(s[i + 1])] for i in rows]
            lengths = [int(s[i + 1] - s[i]) for i in rows]
            values = _core.concat(parts, 0) if parts else self._values[0:0]
            return RaggedTensor.from_row_lengths(values, _np.array(lengths, _np.int64))
        raise TypeError(f"RaggedTensor indexing takes an int or a slice of rows, got {key!r}")

    # ---- elementwise (over the flat values; another RaggedTensor must have the same row splits)
    def _binary(self, other, fn, reverse=False):
        if isinstance(other, RaggedTensor):
            if not _np.array_equal(self._row_splits.numpy(), other._row_splits.numpy()):
                raise ValueError("RaggedTensor elementwise ops need the same row lengths")
            o = other._values
        else:
            o = _core.convert_to_tensor(other, dtype=self.dtype) if not isinstance(other, _core.Tensor) else other
            if len(o._shape_tuple) > len(self._values._shape_tuple[1:]):
                raise ValueError("RaggedTensor elementwise ops broadcast only scalars and inner dims")
        return self.with_values(fn(o, self._values) if reverse else fn(self._values, o))

    def __add__(self, o): return self._binary(o, lambda a, b: a + b)
    def __radd__(self, o): return self._binary(o, lambda a, b: a + b, True)
    def __sub__(self, o): return self._binary(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._binary(o, lambda a, b: a - b, True)
    def __mul__(self, o): return self._binary(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._binary(o, lambda a, b: a * b, True)
    def __truediv__(self, o): return self._binary(o, lambda a, b: a / b)
    def __neg__(self): return self.with_values(-self._values)
    def __eq__(self, o): return self._binary(o, _core.equal)
    def __lt__(self, o): return self._binary(o, lambda a, b: a < b)
    def __gt__(self, o): return self._binary(o, lambda a, b: a > b)
    __hash__ = object.__hash__

    # ---- reductions over the ragged axis (axis=1) or every element
    def _reduce(self, kind, axis):
        """kind over every element (axis None), each row (axis 1) or each column (axis 0).
        Empty rows give unsorted_segment_<kind>'s empty value (0 for sum/mean, the lowest or
        highest value for max/min), as TF's."""
        if axis is None:
            return getattr(_core, "reduce_" + kind)(self._values)
        axis = int(axis)
        if axis < 0:
            axis += 2 + len(self._values._shape_tuple) - 1
        if axis == 1:
            ids = self.value_rowids()
        elif axis == 0:
            splits = self._row_splits.numpy()
            lengths = _np.diff(splits)
            ids = _core.constant((_np.arange(int(splits[-1])) - _np.repeat(splits[:-1], lengths)).astype(_np.int64))
        else:
            raise ValueError(f"RaggedTensor reduction over axis {axis} is not supported (0, 1 or None)")
        n = self.nrows_int() if axis == 1 else int(_np.diff(self._row_splits.numpy()).max(initial=0))
        return getattr(_math, "unsorted_segment_" + kind)(self._values, ids, n)


_builtins_range = range
_builtins_slice = slice


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype=_core.DType.int64):
    """tf.ragged.constant of a list of lists (rows of scalars, or of equal-length inner lists)."""
    rows = [list(r) if not isinstance(r, _np.ndarray) else r.tolist() for r in pylist]
    flat = [v for r in rows for v in r]
    if flat:
        arr = _np.asarray(flat)
    else:
        arr = _np.zeros((0,), _np.float32)
    if dtype is None:
        if arr.dtype.kind == "f":
            arr = arr.astype(_np.float32)
        elif arr.dtype.kind in "iu":
            arr = arr.astype(_np.int32)
    values = _core.constant(arr) if dtype is None else _core.constant(arr, dtype=dtype)
    return RaggedTensor.from_row_lengths(values, _np.array([len(r) for r in rows], _np.int64))


def range(starts, limits=None, deltas=1, dtype=None, name=None, row_splits_dtype=_core.DType.int64):  # noqa: A001
    """Row i is range(starts[i], limits[i], deltas[i])."""
    if limits is None:
        starts, limits = 0, starts
    s, l, d = (_np.broadcast_arrays(_np.asarray(starts), _np.asarray(limits), _np.asarray(deltas)))
    s, l, d = _np.atleast_1d(s), _np.atleast_1d(l), _np.atleast_1d(d)
    rows = [_np.arange(a, b, c) for a, b, c in zip(s, l, d)]
    kind = _np.result_type(s, l, d)
    flat = _np.concatenate(rows).astype(_np.int32 if kind.kind in "iu" else _np.float32) if rows else _np.zeros(0, _np.int32)
    values = _core.constant(flat) if dtype is None else _core.constant(flat, dtype=dtype)
    return RaggedTensor.from_row_lengths(values, _np.array([len(r) for r in rows], _np.int64))


def map_flat_values(op, *args, **kwargs):
    """op over the flat values of the RaggedTensor arguments (which share their row splits)."""
    ragged = [a for a in args if isinstance(a, RaggedTensor)] + [v for v in kwargs.values() if isinstance(v, RaggedTensor)]
    if not ragged:
        raise ValueError("map_flat_values: no RaggedTensor among the arguments")
    base = ragged[0]
    for r in ragged[1:]:
        if not _np.array_equal(r.row_splits.numpy(), base.row_splits.numpy()):
            raise ValueError("map_flat_values: the RaggedTensors' row splits differ")
    args = [a.flat_values if isinstance(a, RaggedTensor) else a for a in args]
    kwargs = {k: (v.flat_values if isinstance(v, RaggedTensor) else v) for k, v in kwargs.items()}
    return base.with_values(op(*args, **kwargs))


def stack(values, axis=0, name=None):
    """Rows of several tensors / RaggedTensors stacked into one RaggedTensor (axis 0)."""
    if axis != 0:
        raise NotImplementedError("ragged.stack: only axis=0 is supported")
    rows = []
    for v in values:
        rows.append(_core.convert_to_tensor(v) if not isinstance(v, RaggedTensor) else v)
    parts = [r.flat_values if isinstance(r, RaggedTensor) else _core.reshape(r, [-1]) for r in rows]
    lengths = [int(p.shape[0]) for p in parts]
    return RaggedTensor.from_row_lengths(_core.concat(parts, 0), _np.array(lengths, _np.int64))


def boolean_mask(data, mask, name=None):
    """The rows' elements where mask is true, as a RaggedTensor (rows of a 2-D tensor or RaggedTensor)."""
    if isinstance(data, RaggedTensor):
        m = mask.flat_values.numpy() if isinstance(mask, RaggedTensor) else _np.asarray(mask)
        keep = _np.flatnonzero(m.astype(bool))
        ids = data.value_rowids().numpy()[keep]
        values = _core.gather(data.flat_values, _core.constant(keep.astype(_np.int64)), 0)
        return RaggedTensor.from_row_lengths(values, _np.bincount(ids, minlength=data.nrows_int()).astype(_np.int64))
    t = _core.convert_to_tensor(data)
    m = _np.asarray(mask.numpy() if hasattr(mask, "numpy") else mask, bool)
    idx = _np.argwhere(m).astype(_np.int64)
    values = _core.gather_nd(t, _core.constant(idx))
    return RaggedTensor.from_row_lengths(values, m.sum(axis=1).astype(_np.int64))


def row_splits_to_segment_ids(splits, name=None, out_type=None):
    s = _int64(splits).numpy()
    return _core.constant(_np.repeat(_np.arange(len(s) - 1), _np.diff(s)).astype(_np.int64))


def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None, name=None):
    ids = _int64(segment_ids).numpy()
    n = int(num_segments) if num_segments is not None else (int(ids.max()) + 1 if len(ids) else 0)
    return _core.constant(_np.concatenate([[0], _np.cumsum(_np.bincount(ids, minlength=n))]).astype(_np.int64))
