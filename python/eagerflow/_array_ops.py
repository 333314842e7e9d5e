"""TF's indexing functions with TF's argument names and meanings: slice (begin and *size*),
strided_slice (with its masks), gather (axis, batch_dims), gather_nd, scatter_nd and the
tensor_scatter_nd family. They build on the op table (Tensor.__getitem__, gather, gather_nd,
tensor_scatter_nd_*), so they trace and differentiate as those do."""
import builtins as _builtins

from . import _core
from . import errors as _errors

__all__ = ["slice", "strided_slice", "gather", "gather_nd", "scatter_nd", "tensor_scatter_nd_update",
           "tensor_scatter_nd_add", "tensor_scatter_nd_sub", "tensor_scatter_nd_min", "tensor_scatter_nd_max"]


def _ints(values, what):
    """A list of Python ints from a list, tuple, array or (concrete) tensor."""
    if isinstance(values, (_core.Tensor, _core.Variable)):
        values = values.numpy()
    try:
        return [int(v) for v in values]
    except TypeError:
        return [int(values)]


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """tf.slice: `size[i]` elements from `begin[i]` on each axis (-1: through the end)."""
    x = _core.convert_to_tensor(input_)
    b, s = _ints(begin, "begin"), _ints(size, "size")
    if len(b) != len(s):
        raise ValueError(f"slice: begin and size must have the same length, got {len(b)} and {len(s)}")
    if len(b) > len(x._shape_tuple):
        raise ValueError(f"slice: begin has {len(b)} entries for a tensor of rank {len(x._shape_tuple)}")
    index = []
    for axis, (start, count) in enumerate(zip(b, s)):
        dim = x._shape_tuple[axis]
        if start < 0 or (dim is not None and start > dim):
            raise _errors.InvalidArgumentError(f"slice: begin[{axis}] = {start} is outside [0, {dim}]")
        if count < -1 or (count != -1 and dim is not None and start + count > dim):
            raise _errors.InvalidArgumentError(
                f"slice: size[{axis}] = {count} from begin {start} does not fit dim {dim}")
        index.append(_builtins.slice(start, None if count == -1 else start + count))
    return x[tuple(index)]


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    """tf.strided_slice: begin/end/strides per axis with TF's bit masks (bit i refers to entry i)."""
    x = _core.convert_to_tensor(input_)
    b, e = _ints(begin, "begin"), _ints(end, "end")
    st = [1] * len(b) if strides is None else _ints(strides, "strides")
    if not len(b) == len(e) == len(st):
        raise ValueError("strided_slice: begin, end and strides must have the same length")
    index = []
    for i, (start, stop, step) in enumerate(zip(b, e, st)):
        bit = 1 << i
        if ellipsis_mask & bit:
            index.append(Ellipsis)
        elif new_axis_mask & bit:
            index.append(None)
        elif shrink_axis_mask & bit:
            index.append(start)
        else:
            index.append(_builtins.slice(None if begin_mask & bit else start, None if end_mask & bit else stop, step))
    return x[tuple(index)]


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """tf.gather: slices of params along `axis` (default: batch_dims) at `indices`; with batch_dims,
    the leading batch_dims dims of params and indices are shared."""
    params = _core.convert_to_tensor(params)
    indices = _core.convert_to_tensor(indices)
    rank, irank = len(params._shape_tuple), len(indices._shape_tuple)
    if batch_dims < 0:
        batch_dims += irank
    if axis is None:
        axis = batch_dims
    if isinstance(axis, (_core.Tensor, _core.Variable)):
        axis = int(axis.numpy())
    if axis < 0:
        axis += rank
    if not 0 <= axis < _builtins.max(rank, 1):
        raise ValueError(f"gather: axis {axis} is out of range for params of rank {rank}")
    if batch_dims == 0:
        return _core.gather(params, indices, axis)
    if not 0 < batch_dims <= axis:
        raise ValueError(f"gather: batch_dims ({batch_dims}) must be <= axis ({axis})")
    # Move `axis` to just after the batch dims, gather the rows with gather_nd, and move the
    # dims between the batch dims and `axis` back in front of the indices' dims.
    b = batch_dims
    perm = list(range(b)) + [axis] + [d for d in range(b, rank) if d != axis]
    moved = _core.transpose(params, perm) if perm != list(range(rank)) else params
    out = _core.gather_nd(moved, _core.expand_dims(indices, -1), b)
    between = axis - b  # params dims b..axis-1, now after the indices' dims in `out`
    if between == 0:
        return out
    k = irank - b  # the indices' own dims
    out_rank = b + k + (rank - b - 1)
    back = list(range(b)) + [b + k + j for j in range(between)] + [b + j for j in range(k)]
    back += list(range(b + k + between, out_rank))
    return _core.transpose(out, back)


def gather_nd(params, indices, batch_dims=0, name=None):
    """tf.gather_nd: rows of `indices` (its last dim k) address slices params[i0, ..., ik-1]."""
    return _core.gather_nd(params, indices, int(batch_dims))


def _complex_by_parts(fn, tensors, *rest):
    """fn of complex tensors as fn of their real and imaginary parts (scatters are linear in the
    values they move and add); None when no tensor is complex."""
    ts = [_core.convert_to_tensor(t) for t in tensors]
    if not any(t.dtype.is_complex for t in ts):
        return None
    c = _core._complex
    return c.complex(fn(*[c.real(t) for t in ts], *rest), fn(*[c.imag(t) for t in ts], *rest))


def scatter_nd(indices, updates, shape, name=None):
    """tf.scatter_nd: zeros of `shape` with `updates` added at the index rows."""
    dims = _ints(shape, "shape")
    if any(d < 0 for d in dims):
        raise _errors.InvalidArgumentError(f"scatter_nd: shape must be non-negative, got {dims}")
    by_parts = _complex_by_parts(lambda u: _core.scatter_nd(indices, u, dims), [updates])
    return by_parts if by_parts is not None else _core.scatter_nd(indices, updates, dims)


def _tensor_scatter(mode):
    core = getattr(_core, "tensor_scatter_nd_" + mode)

    def fn(tensor, indices, updates, name=None):
        if mode in ("update", "add", "sub"):
            by_parts = _complex_by_parts(lambda t, u: core(t, indices, u), [tensor, updates])
            if by_parts is not None:
                return by_parts
        return core(tensor, indices, updates)
    fn.__name__ = "tensor_scatter_nd_" + mode
    fn.__doc__ = f"tf.tensor_scatter_nd_{mode}: a copy of `tensor` with `updates` combined ({mode}) at the index rows."
    return fn


tensor_scatter_nd_update = _tensor_scatter("update")
tensor_scatter_nd_add = _tensor_scatter("add")
tensor_scatter_nd_sub = _tensor_scatter("sub")
tensor_scatter_nd_min = _tensor_scatter("min")
tensor_scatter_nd_max = _tensor_scatter("max")


# ---- composed array functions (eagerflow/ops/array_ops.h)
import collections as _collections  # noqa: E402

_a = _core._array
_Unique = _collections.namedtuple("Unique", ["y", "idx"])
_UniqueWithCounts = _collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])
__all__ += ["reverse", "roll", "split", "unstack", "sequence_mask", "searchsorted", "boolean_mask", "where", "unique",
            "unique_with_counts"]


def _axes(axis):
    if isinstance(axis, (_core.Tensor, _core.Variable)):
        axis = axis.numpy()
    try:
        return [int(a) for a in axis]
    except TypeError:
        return [int(axis)]


def reverse(tensor, axis, name=None):
    """tf.reverse: the elements in reverse order along each axis given."""
    return _a.reverse(tensor, _axes(axis))


def roll(input, shift, axis, name=None):  # noqa: A002 - TF's names
    """tf.roll: elements shifted (with wrap-around) by shift along axis (each an int or a list)."""
    shifts, axes = _axes(shift), _axes(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    return _a.roll(input, shifts, axes)


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """tf.split: equal parts (an int) or parts of the given sizes (a list; one may be -1)."""
    axis = int(axis.numpy()) if isinstance(axis, (_core.Tensor, _core.Variable)) else int(axis)
    if isinstance(num_or_size_splits, int) or getattr(num_or_size_splits, "ndim", 1) == 0:
        return _a.split_equal(value, int(num_or_size_splits), axis)
    return _a.split_sizes(value, _axes(num_or_size_splits), axis)


def unstack(value, num=None, axis=0, name=None):
    """tf.unstack: the slices along axis, each without that axis."""
    parts = _a.unstack(value, int(axis))
    if num is not None and num != len(parts):
        raise ValueError(f"unstack: num={num} but the axis has {len(parts)} entries")
    return parts


def sequence_mask(lengths, maxlen=None, dtype=_core.DType.bool, name=None):
    """tf.sequence_mask: [..., maxlen] with position j < lengths[...] (maxlen: the largest length)."""
    m = -1 if maxlen is None else int(maxlen.numpy() if hasattr(maxlen, "numpy") else maxlen)
    return _a.sequence_mask(lengths, m, dtype)


def searchsorted(sorted_sequence, values, side="left", out_type=_core.DType.int32, name=None):
    """tf.searchsorted over the last axis (side 'left' or 'right')."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    return _a.searchsorted(sorted_sequence, values, side == "right", out_type)


def boolean_mask(tensor, mask, axis=None, name=None):
    """tf.boolean_mask: the elements (slices from `axis` on) where mask is true. Eager only: the
    result's length depends on the mask's values."""
    return _a.boolean_mask(tensor, mask, 0 if axis is None else int(axis))


def where(condition, x=None, y=None, name=None):
    """tf.where: elementwise choice of x or y (traced like any op); with condition alone, the
    int64 coordinates of its true elements (eager only)."""
    if x is None and y is None:
        return _a.where_coordinates(condition)
    if x is None or y is None:
        raise ValueError("where: give both x and y, or neither")
    return _core.where(condition, x, y)


def unique(x, out_idx=_core.DType.int32, name=None):
    """tf.unique: (y, idx), y the distinct values in order of first appearance. Eager only."""
    y, idx, _ = _a.unique(x, out_idx)
    return _Unique(y, idx)


def unique_with_counts(x, out_idx=_core.DType.int32, name=None):
    y, idx, count = _a.unique(x, out_idx)
    return _UniqueWithCounts(y, idx, count)
