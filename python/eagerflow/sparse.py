"""ef.sparse, as tf.sparse: SparseTensor (COO: int64 indices [N, rank], values [N], int64
dense_shape [rank]) and the functions the tensor guide uses. Values are ordinary tensors, so
they trace and differentiate; to_dense and sparse_dense_matmul are scatters and gathers
(gather_nd, unsorted_segment_sum), never a dense copy of the operand."""
import numpy as _np

from . import _core
from . import math as _math

__all__ = ["SparseTensor", "add", "concat", "expand_dims", "eye", "from_dense", "map_values", "maximum",
           "minimum", "reduce_max", "reduce_sum", "reorder", "reset_shape", "reshape", "retain", "slice", "softmax",
           "sparse_dense_matmul", "split", "to_dense", "to_indicator", "transpose", "fill_empty_rows", "segment_sum",
           "segment_mean", "segment_sqrt_n", "bincount"]


def _int64(x):
    return _core.cast(_core.convert_to_tensor(x), _core.DType.int64)


class SparseTensor:
    """tf.sparse.SparseTensor(indices, values, dense_shape)."""

    def __init__(self, indices, values, dense_shape):
        self.indices = _int64(indices)
        self.values = _core.convert_to_tensor(values)
        self.dense_shape = _int64(dense_shape)
        ishape, vshape, dshape = self.indices._shape_tuple, self.values._shape_tuple, self.dense_shape._shape_tuple
        if len(ishape) != 2 or len(vshape) != 1 or len(dshape) != 1:
            raise ValueError(f"SparseTensor: indices must be [N, rank], values [N] and dense_shape [rank]; "
                             f"got {ishape}, {vshape}, {dshape}")
        if ishape[0] is not None and vshape[0] is not None and ishape[0] != vshape[0]:
            raise ValueError(f"SparseTensor: {ishape[0]} indices for {vshape[0]} values")
        if ishape[1] is not None and dshape[0] is not None and ishape[1] != dshape[0]:
            raise ValueError(f"SparseTensor: indices of rank {ishape[1]} for a dense_shape of rank {dshape[0]}")

    @classmethod
    def from_value(cls, value):
        return value if isinstance(value, SparseTensor) else from_dense(value)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        from ._layers import TensorShape
        try:
            return TensorShape(tuple(int(v) for v in self.dense_shape.numpy()))
        except Exception:  # symbolic inside a trace
            return TensorShape((None,) * self.dense_shape._shape_tuple[0])

    def get_shape(self):
        return self.shape

    def with_values(self, new_values):
        return SparseTensor(self.indices, new_values, self.dense_shape)

    def __repr__(self):
        return f"SparseTensor(indices={self.indices!s}, values={self.values!s}, dense_shape={self.dense_shape!s})"

    __str__ = __repr__

    def __mul__(self, other):
        if isinstance(other, SparseTensor):
            raise TypeError("SparseTensor * SparseTensor is not supported; use tf.sparse.to_dense")
        o = _core.convert_to_tensor(other, dtype=self.dtype)
        if len(o._shape_tuple) == 0:
            return self.with_values(self.values * o)
        return self.with_values(self.values * _core.gather_nd(_core.broadcast_to(o, _shape_list(self)), self.indices))

    __rmul__ = __mul__

    def __neg__(self):
        return self.with_values(-self.values)

    def __add__(self, other):
        return add(self, other)

    __radd__ = __add__

    def __truediv__(self, other):
        return self.with_values(self.values / _core.convert_to_tensor(other, dtype=self.dtype))


def _shape_list(sp):
    return [int(v) for v in sp.dense_shape.numpy()]


def _check(sp, fn):
    if not isinstance(sp, SparseTensor):
        raise TypeError(f"sparse.{fn}: expected a SparseTensor, got {type(sp).__name__}")


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    """The dense tensor: values at their indices (repeated indices add), default_value elsewhere."""
    _check(sp_input, "to_dense")
    shape = _shape_list(sp_input)
    dense = _core.scatter_nd(sp_input.indices, sp_input.values, shape)
    if default_value is None or default_value == 0:
        return dense
    present = _core.scatter_nd(sp_input.indices, _core.ones_like(sp_input.values), shape)
    fill = _core.full_like(dense, float(default_value))
    return _core.where(present != 0, dense, fill)


def from_dense(tensor, name=None):
    """The non-zero entries of a dense tensor, in row-major order."""
    t = _core.convert_to_tensor(tensor)
    host = t.numpy()
    idx = _np.argwhere(host != 0).astype(_np.int64).reshape(-1, host.ndim)
    values = _core.gather_nd(t, _core.constant(idx)) if len(idx) else _core.constant(_np.zeros(0, host.dtype))
    return SparseTensor(idx, values, list(host.shape))


def reorder(sp_input, name=None):
    """Indices in row-major (lexicographic) order, values with them."""
    _check(sp_input, "reorder")
    idx = sp_input.indices.numpy()
    order = _np.lexsort(idx.T[::-1]) if len(idx) else _np.zeros(0, _np.int64)
    return SparseTensor(idx[order], _core.gather(sp_input.values, _core.constant(order.astype(_np.int64)), 0),
                        sp_input.dense_shape)


def add(a, b, threshold=0, name=None):
    """SparseTensor + SparseTensor (a SparseTensor; entries at one index add), or + a dense tensor (dense)."""
    if isinstance(a, SparseTensor) and isinstance(b, SparseTensor):
        if _shape_list(a) != _shape_list(b):
            raise ValueError(f"sparse.add: shapes differ: {_shape_list(a)} and {_shape_list(b)}")
        return from_dense(to_dense(a) + to_dense(b)) if threshold == 0 else \
            _threshold(from_dense(to_dense(a) + to_dense(b)), threshold)
    sp, dense = (a, b) if isinstance(a, SparseTensor) else (b, a)
    return to_dense(sp) + _core.convert_to_tensor(dense, dtype=sp.dtype)


def _threshold(sp, threshold):
    keep = _core.abs(sp.values).numpy() >= threshold
    return retain(sp, keep)


def retain(sp_input, to_retain):
    """The entries where to_retain (a bool vector over the entries) is true."""
    _check(sp_input, "retain")
    keep = _np.flatnonzero(_np.asarray(to_retain.numpy() if hasattr(to_retain, "numpy") else to_retain, bool))
    k = _core.constant(keep.astype(_np.int64))
    return SparseTensor(_core.gather(sp_input.indices, k, 0), _core.gather(sp_input.values, k, 0), sp_input.dense_shape)


def map_values(op, *args, **kwargs):
    """op applied to the values of the SparseTensor arguments (all of one sparsity pattern)."""
    sparse_args = [a for a in args if isinstance(a, SparseTensor)]
    if not sparse_args:
        raise ValueError("map_values: no SparseTensor among the arguments")
    base = sparse_args[0]
    vals = [a.values if isinstance(a, SparseTensor) else a for a in args]
    return base.with_values(op(*vals, **kwargs))


def _dense_reduce(fn, sp_input, axis, keepdims):
    return fn(to_dense(sp_input), axis=axis, keepdims=bool(keepdims))


def reduce_sum(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
    """Sum over axis (every axis when None), as a dense tensor (or SparseTensor when output_is_sparse)."""
    _check(sp_input, "reduce_sum")
    if axis is None:
        out = _core.reduce_sum(sp_input.values)
    else:
        out = _dense_reduce(_core.reduce_sum, sp_input, axis, keepdims)
    return from_dense(out) if output_is_sparse else out


def reduce_max(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
    """Max over the entries present (absent entries do not count, as TF's); 0 where none is present."""
    _check(sp_input, "reduce_max")
    shape = _shape_list(sp_input)
    lowest = _core.fill(shape, float(_np.finfo(_np.float64).min), _core.DType.float64)
    dense = _core.tensor_scatter_nd_max(lowest, sp_input.indices, _core.cast(sp_input.values, _core.DType.float64))
    out = _core.reduce_max(dense, axis=axis, keepdims=bool(keepdims))
    out = _core.where(out == float(_np.finfo(_np.float64).min), _core.zeros_like(out), out)
    out = _core.cast(out, sp_input.dtype)
    return from_dense(out) if output_is_sparse else out


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """A (sparse [m, k]) @ B (dense [k, n]): each entry's row of the product gathers B's row of its
    column, and the rows add up by segment."""
    _check(sp_a, "sparse_dense_matmul")
    b = _core.convert_to_tensor(b, dtype=sp_a.dtype)
    if adjoint_b:
        b = _core.transpose(b, [1, 0])
    rows, cols = sp_a.indices[:, 0], sp_a.indices[:, 1]
    m = _shape_list(sp_a)[0]
    if adjoint_a:
        rows, cols = cols, rows
        m = _shape_list(sp_a)[1]
    contributions = _core.expand_dims(sp_a.values, -1) * _core.gather(b, cols, 0)
    return _math.unsorted_segment_sum(contributions, rows, m)


def transpose(sp_input, perm=None, name=None):
    _check(sp_input, "transpose")
    rank = len(_shape_list(sp_input))
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in perm]
    idx = _core.gather(sp_input.indices, _core.constant(_np.array(perm, _np.int64)), 1)
    shape = [_shape_list(sp_input)[p] for p in perm]
    return reorder(SparseTensor(idx, sp_input.values, shape))


def reshape(sp_input, shape, name=None):
    _check(sp_input, "reshape")
    old = _shape_list(sp_input)
    new = [int(s) for s in shape]
    total = int(_np.prod(old))
    if -1 in new:
        known = int(_np.prod([s for s in new if s != -1]))
        new[new.index(-1)] = total // max(known, 1)
    if int(_np.prod(new)) != total:
        raise ValueError(f"sparse.reshape: cannot reshape {old} to {new}")
    flat = _np.ravel_multi_index(sp_input.indices.numpy().T, old) if len(old) else _np.zeros(0, _np.int64)
    idx = _np.stack(_np.unravel_index(flat, new), axis=1).astype(_np.int64) if len(flat) else _np.zeros((0, len(new)), _np.int64)
    return SparseTensor(idx, sp_input.values, new)


def expand_dims(sp_input, axis=None, name=None):
    _check(sp_input, "expand_dims")
    shape = _shape_list(sp_input)
    a = int(axis) if axis is not None else 0
    if a < 0:
        a += len(shape) + 1
    idx = sp_input.indices.numpy()
    idx = _np.insert(idx, a, 0, axis=1)
    return SparseTensor(idx, sp_input.values, shape[:a] + [1] + shape[a:])


def concat(axis, sp_inputs, expand_nonconcat_dims=False, name=None):
    shapes = [_shape_list(s) for s in sp_inputs]
    a = int(axis) % len(shapes[0])
    offset, idx, vals = 0, [], []
    for s, shape in zip(sp_inputs, shapes):
        i = s.indices.numpy().copy()
        i[:, a] += offset
        offset += shape[a]
        idx.append(i)
        vals.append(s.values)
    out_shape = list(shapes[0])
    out_shape[a] = offset
    return reorder(SparseTensor(_np.concatenate(idx, 0), _core.concat(vals, 0), out_shape))


def slice(sp_input, start, size, name=None):  # noqa: A001 - TF's name
    _check(sp_input, "slice")
    idx = sp_input.indices.numpy()
    start, size = _np.asarray(start, _np.int64), _np.asarray(size, _np.int64)
    shape = _np.asarray(_shape_list(sp_input))
    end = _np.minimum(start + size, shape)
    keep = _np.all((idx >= start) & (idx < end), axis=1)
    k = _np.flatnonzero(keep)
    return SparseTensor(idx[k] - start, _core.gather(sp_input.values, _core.constant(k.astype(_np.int64)), 0),
                        list(_np.maximum(end - start, 0)))


def split(sp_input=None, num_split=None, axis=None, name=None):
    shape = _shape_list(sp_input)
    a = int(axis) % len(shape)
    sizes = [shape[a] // num_split + (1 if i < shape[a] % num_split else 0) for i in range(num_split)]
    out, begin = [], 0
    for n in sizes:
        start = [0] * len(shape)
        size = list(shape)
        start[a], size[a] = begin, n
        out.append(slice(sp_input, start, size))
        begin += n
    return out


def eye(num_rows, num_columns=None, dtype=_core.DType.float32, name=None):
    n = int(num_rows)
    m = n if num_columns is None else int(num_columns)
    k = min(n, m)
    idx = _np.stack([_np.arange(k), _np.arange(k)], 1).astype(_np.int64)
    return SparseTensor(idx, _core.ones([k], dtype=dtype), [n, m])


def maximum(sp_a, sp_b, name=None):
    return from_dense(_core.maximum(to_dense(sp_a), to_dense(sp_b)))


def minimum(sp_a, sp_b, name=None):
    return from_dense(_core.minimum(to_dense(sp_a), to_dense(sp_b)))


def softmax(sp_input, name=None):
    """Softmax over the last axis among the entries present in each row."""
    _check(sp_input, "softmax")
    shape = _shape_list(sp_input)
    rows = _np.ravel_multi_index(sp_input.indices.numpy()[:, :-1].T, shape[:-1]) if len(shape) > 1 else \
        _np.zeros(len(sp_input.indices.numpy()), _np.int64)
    r = _core.constant(rows.astype(_np.int64))
    n = int(_np.prod(shape[:-1])) if len(shape) > 1 else 1
    m = _core.gather(_math.unsorted_segment_max(sp_input.values, r, n), r, 0)
    e = _core.exp(sp_input.values - _core.stop_gradient(m))
    total = _core.gather(_math.unsorted_segment_sum(e, r, n), r, 0)
    return sp_input.with_values(e / total)


def to_indicator(sp_input, vocab_size, name=None):
    """[..., vocab_size] bools: true at each row's values."""
    _check(sp_input, "to_indicator")
    shape = _shape_list(sp_input)
    idx = _core.concat([sp_input.indices[:, :-1], _core.expand_dims(_core.cast(sp_input.values, _core.DType.int64), -1)], 1)
    counts = _core.scatter_nd(idx, _core.ones([sp_input.values.shape[0]], dtype=_core.DType.int32), shape[:-1] + [int(vocab_size)])
    return counts > 0


def fill_empty_rows(sp_input, default_value, name=None):
    """(a SparseTensor with default_value at column 0 of each empty row, the bool vector of empty rows)."""
    _check(sp_input, "fill_empty_rows")
    shape = _shape_list(sp_input)
    idx = sp_input.indices.numpy()
    present = _np.zeros(shape[0], bool)
    present[idx[:, 0]] = True
    empty = _np.flatnonzero(~present)
    extra = _np.zeros((len(empty), len(shape)), _np.int64)
    extra[:, 0] = empty
    filler = _core.ones([len(empty)], dtype=sp_input.dtype) * _core.convert_to_tensor(default_value, dtype=sp_input.dtype)
    values = _core.concat([sp_input.values, filler], 0)
    out = reorder(SparseTensor(_np.concatenate([idx, extra], 0), values, shape))
    return out, _core.constant(~present)


def reset_shape(sp_input, new_shape=None):
    _check(sp_input, "reset_shape")
    if new_shape is None:
        idx = sp_input.indices.numpy()
        new_shape = list(idx.max(0) + 1) if len(idx) else [0] * idx.shape[1]
    return SparseTensor(sp_input.indices, sp_input.values, new_shape)


def segment_sum(data, indices, segment_ids, num_segments=None, name=None):
    rows = _core.gather(_core.convert_to_tensor(data), indices, 0)
    if num_segments is None:
        return _math.segment_sum(rows, segment_ids)
    return _math.unsorted_segment_sum(rows, segment_ids, num_segments)


def segment_mean(data, indices, segment_ids, num_segments=None, name=None):
    rows = _core.gather(_core.convert_to_tensor(data), indices, 0)
    if num_segments is None:
        return _math.segment_mean(rows, segment_ids)
    return _math.unsorted_segment_mean(rows, segment_ids, num_segments)


def segment_sqrt_n(data, indices, segment_ids, num_segments=None, name=None):
    rows = _core.gather(_core.convert_to_tensor(data), indices, 0)
    ids = _core.convert_to_tensor(segment_ids)
    n = num_segments if num_segments is not None else int(ids.numpy().max()) + 1
    return _math.unsorted_segment_sqrt_n(rows, ids, n)


def bincount(values, weights=None, axis=0, minlength=None, maxlength=None, binary_output=False, name=None):
    v = values.values if isinstance(values, SparseTensor) else values
    w = weights.values if isinstance(weights, SparseTensor) else weights
    return _math.bincount(v, weights=w, minlength=minlength, maxlength=maxlength, binary_output=binary_output)
