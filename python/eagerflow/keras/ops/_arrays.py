"""keras.ops' array creation and manipulation (NumPy's names and arguments) on eagerflow's ops."""
import builtins as _b
import math as _pymath

import numpy as _np

import eagerflow as _ef
from ... import cast as _cast
from ...dtypes import as_dtype
from ._dtypes import broadcast_shape, shape_of, filled, dtype_of, float_dtype, promote, result_type, standardize_dtype, tensor, floatx


def _dt(dtype, default=None):
    return as_dtype(standardize_dtype(dtype if dtype is not None else (default or floatx())))


def _shape_list(shape):
    if isinstance(shape, int):
        return [shape]
    if isinstance(shape, _ef.Tensor):
        return shape
    dims = list(shape)
    if any(isinstance(d, _ef.Tensor) for d in dims):  # dimensions known only when it runs
        return _ef.stack([_cast(d, _ef.int32) if isinstance(d, _ef.Tensor) else _ef.constant(int(d), dtype=_ef.int32)
                          for d in dims])
    return [int(d) for d in dims]


def zeros(shape, dtype=None):
    return _ef.zeros(_shape_list(shape), dtype=_dt(dtype))


def ones(shape, dtype=None):
    return _ef.ones(_shape_list(shape), dtype=_dt(dtype))


empty = zeros


def full(shape, fill_value, dtype=None):
    v = tensor(fill_value, dtype or floatx())
    return _ef.broadcast_to(v, _shape_list(shape))


def zeros_like(x, dtype=None):
    t = tensor(x)
    return filled(t, 0, _dt(dtype, dtype_of(t)))


def ones_like(x, dtype=None):
    t = tensor(x)
    return filled(t, 1, _dt(dtype, dtype_of(t)))


empty_like = zeros_like


def full_like(x, fill_value, dtype=None):
    t = tensor(x)
    v = tensor(fill_value, _dt(dtype, dtype_of(t)))
    if v.shape.rank == 0:
        return filled(t, v, _dt(dtype, dtype_of(t)))
    return _ef.broadcast_to(v, shape_of(t))


def array(x, dtype=None):
    return tensor(x, dtype)


def arange(start, stop=None, step=None, dtype=None):
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if dtype is None:
        dtype = result_type(*[type(v) if isinstance(v, (int, float)) else dtype_of(v) for v in (start, stop, step)])
    dt = _dt(dtype)
    if dt.is_floating:
        n = _b.max(int(_pymath.ceil((float(stop) - float(start)) / float(step))), 0)
        return _cast(start, dt) + _cast(step, dt) * _ef.range(n, dtype=dt)
    return _ef.range(start, stop, step, dtype=dt)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    dt = _dt(dtype, result_type(float_dtype(start), float_dtype(stop)))
    a, b = tensor(start, "float64"), tensor(stop, "float64")
    div = (num - 1) if endpoint else num
    step = (b - a) / float(_b.max(div, 1))
    steps = _ef.range(num, dtype=_ef.float64)
    shape = [num] + [1] * a.shape.rank
    out = a + _ef.reshape(steps, shape) * step
    if endpoint and num > 1:
        out = _ef.concat([out[:-1], _ef.expand_dims(b * _ef.ones_like(a), 0)], 0)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    out = _cast(out, dt) if not dt.is_integer else _cast(_ef.floor(out), dt)
    if retstep:
        return out, _cast(step, dt)
    return out


def logspace(start, stop, num=50, endpoint=True, base=10, dtype=None, axis=0):
    dt = _dt(dtype, result_type(float_dtype(start), float_dtype(stop)))
    e = linspace(start, stop, num, endpoint=endpoint, dtype="float64", axis=axis)
    return _cast(_ef.pow(_cast(base, _ef.float64), e), dt)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    dt = _dt(dtype, result_type(float_dtype(start), float_dtype(stop)))
    a, b = tensor(start, "float64"), tensor(stop, "float64")
    sign = _ef.sign(a)
    e = linspace(_ef.math.log(_ef.abs(a)), _ef.math.log(_ef.abs(b)), num, endpoint=endpoint, dtype="float64", axis=axis)
    out = sign * _ef.exp(e)
    return _cast(out, dt)


def eye(N, M=None, k=0, dtype=None):  # noqa: N803 - NumPy's names
    M = N if M is None else M
    if not k:
        return _ef.eye(N, M, dtype=_dt(dtype))
    rows = _ef.expand_dims(_ef.range(N), 1)
    cols = _ef.expand_dims(_ef.range(M), 0)
    return _cast(_ef.equal(cols - rows, k), _dt(dtype))


def identity(n, dtype=None):
    return _ef.eye(n, dtype=_dt(dtype))


def tri(N, M=None, k=0, dtype=None):  # noqa: N803 - NumPy's names
    M = N if M is None else M
    return _cast(tril(_ef.ones([N, M], dtype=_ef.int32), k), _dt(dtype))


def tril(x, k=0):
    return _ef.tril(tensor(x), k=int(k))


def triu(x, k=0):
    return _ef.triu(tensor(x), k=int(k))


def copy(x):
    return _ef.identity(tensor(x))


def clip(x, x_min, x_max):
    t = tensor(x)
    if dtype_of(t) == "bool":
        t = _cast(t, _ef.int32)
    return _ef.clip_by_value(t, _cast(x_min, t.dtype), _cast(x_max, t.dtype))


def cdist(x1, x2, p=2.0):
    (a, b), dt = promote(x1, x2)
    if dt not in ("bfloat16", "float16", "float32", "float64"):
        a, b = tensor(a, floatx()), tensor(b, floatx())
    d = _ef.abs(_ef.expand_dims(a, -2) - _ef.expand_dims(b, -3))
    if p == float("inf"):
        return _ef.reduce_max(d, axis=-1)
    if p == 0:
        return _cast(_ef.reduce_sum(_cast(_ef.not_equal(d, _cast(0, d.dtype)), _ef.int32), axis=-1), d.dtype)
    if p == 1:
        return _ef.reduce_sum(d, axis=-1)
    if p == 2:
        return _ef.sqrt(_ef.reduce_sum(_ef.square(d), axis=-1))
    return _ef.pow(_ef.reduce_sum(_ef.pow(d, _cast(p, d.dtype)), axis=-1), _cast(1.0 / p, d.dtype))


def reshape(x, newshape):
    return _ef.reshape(tensor(x), _shape_list(newshape))


def ravel(x):
    return _ef.reshape(tensor(x), [-1])


def transpose(x, axes=None):
    return _ef.transpose(tensor(x), axes)


def swapaxes(x, axis1, axis2):
    t = tensor(x)
    perm = list(range(t.shape.rank))
    a, b = int(axis1) % len(perm), int(axis2) % len(perm)
    perm[a], perm[b] = perm[b], perm[a]
    return _ef.transpose(t, perm)


def moveaxis(x, source, destination):
    t = tensor(x)
    rank = t.shape.rank
    src = [int(s) % rank for s in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [int(d) % rank for d in (destination if isinstance(destination, (list, tuple)) else [destination])]
    order = [i for i in range(rank) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return _ef.transpose(t, order)


def expand_dims(x, axis):
    t = tensor(x)
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    out_rank = t.shape.rank + len(axes)
    for a in sorted(int(a) % out_rank for a in axes):
        t = _ef.expand_dims(t, a)
    return t


def squeeze(x, axis=None):
    t = tensor(x)
    if axis is None:
        return _ef.squeeze(t)
    axes = axis if isinstance(axis, (list, tuple)) else [axis]
    for a in axes:
        if t.shape[int(a)] is not None and t.shape[int(a)] != 1:
            raise ValueError(f"Cannot squeeze axis {a}, because the dimension is not 1.")
    return _ef.squeeze(t, axis=[int(a) for a in axes])


def broadcast_to(x, shape):
    return _ef.broadcast_to(tensor(x), _shape_list(shape))


def concatenate(xs, axis=0):
    ts, _ = promote(*xs)
    if axis is None:
        return _ef.concat([_ef.reshape(t, [-1]) for t in ts], 0)
    return _ef.concat(ts, int(axis))


def append(x1, x2, axis=None):
    (a, b), _ = promote(x1, x2)
    if axis is None:
        return _ef.concat([_ef.reshape(a, [-1]), _ef.reshape(b, [-1])], 0)
    return _ef.concat([a, b], int(axis))


def stack(x, axis=0):
    ts, _ = promote(*x)
    return _ef.stack(ts, axis=int(axis))


def hstack(xs):
    ts, _ = promote(*xs)
    return _ef.concat(ts, 0 if ts[0].shape.rank == 1 else 1)


def vstack(xs):
    ts, _ = promote(*xs)
    return _ef.concat([t if t.shape.rank >= 2 else _ef.reshape(t, [1, -1]) for t in ts], 0)


def dstack(xs):
    ts, _ = promote(*xs)
    out = []
    for t in ts:
        if t.shape.rank == 1:
            t = _ef.reshape(t, [1, -1, 1])
        elif t.shape.rank == 2:
            t = _ef.expand_dims(t, -1)
        out.append(t)
    return _ef.concat(out, 2)


def unstack(x, num=None, axis=0):
    return _ef.unstack(tensor(x), num=num, axis=axis)


def split(x, indices_or_sections, axis=0):
    t = tensor(x)
    n = t.shape[axis]
    if isinstance(indices_or_sections, int):
        if n is not None and n % indices_or_sections:
            raise ValueError(f"array split does not result in an equal division: {n} into {indices_or_sections}")
        return _ef.split(t, indices_or_sections, axis=axis)
    bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    return _ef.split(t, [_b.max(bounds[i + 1] - bounds[i], 0) for i in range(len(bounds) - 1)], axis=axis)


def array_split(x, indices_or_sections, axis=0):
    t = tensor(x)
    n = t.shape[axis]
    k = int(indices_or_sections)
    sizes = [n // k + 1] * (n % k) + [n // k] * (k - n % k)
    return _ef.split(t, sizes, axis=axis)


def hsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=0 if tensor(x).shape.rank == 1 else 1)


def vsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=0)


def dsplit(x, indices_or_sections):
    return split(x, indices_or_sections, axis=2)


def flip(x, axis=None):
    t = tensor(x)
    axes = list(range(t.shape.rank)) if axis is None else (list(axis) if isinstance(axis, (list, tuple)) else [axis])
    return _ef.reverse(t, [int(a) for a in axes])


def fliplr(x):
    return flip(x, 1)


def flipud(x):
    return flip(x, 0)


def rot90(array, k=1, axes=(0, 1)):
    t = tensor(array)
    k = int(k) % 4
    a0, a1 = axes
    if k == 0:
        return t
    if k == 2:
        return flip(flip(t, a0), a1)
    if k == 1:
        return swapaxes(flip(t, a1), a0, a1)
    return flip(swapaxes(t, a0, a1), a1)


def roll(x, shift, axis=None):
    t = tensor(x)
    if axis is None:
        return _ef.reshape(_ef.roll(_ef.reshape(t, [-1]), shift, 0), shape_of(t))
    return _ef.roll(t, shift, axis)


def tile(x, repeats):
    t = tensor(x)
    reps = [repeats] if isinstance(repeats, int) else list(repeats)
    if len(reps) > t.shape.rank:
        t = _ef.reshape(t, [1] * (len(reps) - t.shape.rank) + list(shape_of(t)))
    reps = [1] * (t.shape.rank - len(reps)) + reps
    return _ef.tile(t, reps)


def repeat(x, repeats, axis=None):
    if isinstance(repeats, _np.ndarray):
        repeats = repeats.tolist()
    return _ef.repeat(tensor(x), repeats, axis=axis)


def pad(x, pad_width, mode="constant", constant_values=None):
    t = tensor(x)
    pw = _np.asarray(pad_width, dtype=_np.int64)
    if pw.ndim == 0:
        pw = _np.full([t.shape.rank, 2], int(pw))
    elif pw.ndim == 1:
        pw = _np.tile(pw.reshape(1, 2) if pw.size == 2 else pw.reshape(1, 1).repeat(2, 1), [t.shape.rank, 1])
    elif pw.shape[0] == 1 and t.shape.rank > 1:
        pw = _np.tile(pw, [t.shape.rank, 1])
    if mode not in ("constant", "reflect", "symmetric"):
        raise ValueError(f"`mode` must be one of 'constant', 'reflect', 'symmetric'. Received: mode={mode}")
    if constant_values is not None and mode != "constant":
        raise ValueError("Argument `constant_values` can only be provided when `mode == 'constant'`. "
                         f"Received: mode={mode}")
    return _ef.pad(t, pw.tolist(), mode=mode.upper(), constant_values=constant_values or 0)


def where(condition, x1=None, x2=None):
    c = tensor(condition, "bool")
    if x1 is None and x2 is None:
        return nonzero(c)
    if x1 is None or x2 is None:
        raise ValueError("`x1` and `x2` either both should be `None` or both should have non-None value.")
    (a, b), _ = promote(x1, x2)
    c, a, b = _broadcast_all(c, a, b)
    return _ef.where(c, a, b)


def _broadcast_all(*ts):
    """The tensors broadcast to one shape; with dimensions unknown until it runs (Keras tensors), by
    adding zeros of every operand, which broadcasts without naming the shape."""
    shapes = [list(t.shape) for t in ts]
    if all(None not in s for s in shapes):
        shape = list(_np.broadcast_shapes(*[tuple(s) for s in shapes]))
        return [_ef.broadcast_to(t, shape) for t in ts]
    zero = None
    for t in ts:
        z = _ef.zeros_like(_cast(t, _ef.int32))
        zero = z if zero is None else zero + z
    return [_ef.not_equal(_cast(t, _ef.int32) + zero, 0) if t.dtype == _ef.bool else t + _cast(zero, t.dtype)
            for t in ts]


def nonzero(x):
    t = tensor(x)
    idx = _ef.where(_ef.not_equal(t, _cast(0, t.dtype)) if dtype_of(t) != "bool" else t)
    return tuple(_cast(u, _ef.int32) for u in _ef.unstack(idx, num=t.shape.rank, axis=1))


def take(x, indices, axis=None):
    t = tensor(x)
    i = tensor(indices)
    if not i.dtype.is_integer:
        i = _cast(i, _ef.int32)
    if axis is None:
        t, axis = _ef.reshape(t, [-1]), 0
    n = shape_of(t)[axis]
    i = _ef.where(_ef.less(i, _cast(0, i.dtype)), i + _cast(n, i.dtype), i)  # NumPy's negative indices
    return _ef.gather(t, i, axis=int(axis))


def take_along_axis(x, indices, axis=None):
    t = tensor(x)
    i = tensor(indices)
    if axis is None:
        t, axis = _ef.reshape(t, [-1]), 0
    n = shape_of(t)[axis]
    i = _ef.where(_ef.less(i, _cast(0, i.dtype)), i + _cast(n, i.dtype), i)
    # NumPy broadcasts x and indices against each other except along axis
    ts, is_ = list(shape_of(t)), list(shape_of(i))
    if len(ts) == len(is_):
        bshape_t = [ts[k] if k == axis % len(ts) else _b.max(ts[k], is_[k]) for k in range(len(ts))]
        bshape_i = [is_[k] if k == axis % len(ts) else _b.max(ts[k], is_[k]) for k in range(len(ts))]
        t, i = _ef.broadcast_to(t, [int(v) for v in bshape_t]), _ef.broadcast_to(i, [int(v) for v in bshape_i])
    return _ef.take_along_axis(t, i, axis=int(axis))


def diagonal(x, offset=0, axis1=0, axis2=1):
    t = tensor(x)
    rank = t.shape.rank
    a1, a2 = axis1 % rank, axis2 % rank
    rest = [i for i in range(rank) if i not in (a1, a2)]
    t = _ef.transpose(t, rest + [a1, a2])
    if offset:
        n, m = t.shape[-2], t.shape[-1]
        if offset > 0:
            t = t[..., :, offset:]
        else:
            t = t[..., -offset:, :]
        del n, m
    return _ef.linalg.diag_part(t)


def diag(x, k=0):
    t = tensor(x)
    if t.shape.rank == 1:
        n = t.shape[0] + _b.abs(k)
        col = _ef.pad(t, [[0, _b.abs(k)]] if k >= 0 else [[-k, 0]])
        return _ef.where(_cast(eye(n, n, k, "int32"), _ef.bool), _ef.broadcast_to(_ef.expand_dims(col, 1), [n, n]),
                         _ef.zeros([n, n], t.dtype))
    if t.shape.rank == 2:
        return diagonal(t, k)
    raise ValueError(f"`x` must be 1d or 2d. Received: x.shape={t.shape}")


def diagflat(x, k=0):
    return diag(ravel(x), k)


def trace(x, offset=0, axis1=0, axis2=1):
    t = tensor(x)
    d = dtype_of(t)
    if d in ("bool", "int8", "int16"):
        t = _cast(t, _ef.int32)
    elif d in ("uint8", "uint16"):
        t = _cast(t, _ef.uint32)
    return _ef.reduce_sum(diagonal(t, offset, axis1, axis2), axis=-1)


def meshgrid(*x, indexing="xy"):
    return _ef.meshgrid(*[tensor(v) for v in x], indexing=indexing)


def sort(x, axis=-1):
    t = tensor(x)
    if axis is None:
        t, axis = _ef.reshape(t, [-1]), 0
    b = dtype_of(t) == "bool"
    out = _ef.sort(_cast(t, _ef.int32) if b else t, axis=int(axis))
    return _cast(out, _ef.bool) if b else out


def argsort(x, axis=-1):
    t = tensor(x)
    if axis is None:
        t, axis = _ef.reshape(t, [-1]), 0
    if t.shape.rank == 0:
        return _ef.zeros([], _ef.int32)
    if dtype_of(t) == "bool":
        t = _cast(t, _ef.int32)
    return _cast(_ef.argsort(t, axis=int(axis)), _ef.int32)


def argpartition(x, kth, axis=-1):
    # any order that puts the kth smallest in place and the smaller before it: a full stable sort is one
    return argsort(x, axis)


def searchsorted(sorted_sequence, values, side="left"):
    s = tensor(sorted_sequence)
    if s.shape.rank != 1:
        raise ValueError(f"`searchsorted` only supports 1-D sorted sequences. Received: sorted_sequence.shape={s.shape}")
    (s, v), _ = promote(s, values)
    vr = v.shape.rank
    flat = _ef.reshape(v, [1, -1])
    out = _ef.searchsorted(_ef.expand_dims(s, 0), flat, side=side, out_type=_ef.int32)
    return _ef.reshape(out, shape_of(v)) if vr else _ef.reshape(out, [])


def digitize(x, bins):
    t = tensor(x)
    b = tensor(bins)
    (t, b), _ = promote(t, b)
    return searchsorted(b, t, side="right")


def unravel_index(indices, shape):
    i = tensor(indices)
    out = []
    for d in reversed(shape):
        out.append(_ef.math.floormod(i, _cast(d, i.dtype)))
        i = _ef.math.floordiv(i, _cast(d, i.dtype))
    return tuple(reversed(out))


def ndim(x):
    return tensor(x).shape.rank


def size(x):
    return _cast(_ef.size(tensor(x)), _ef.int32)


def vander(x, N=None, increasing=False):  # noqa: N803 - NumPy's name
    t = tensor(x)
    n = t.shape[0] if N is None else int(N)
    powers = _ef.range(n, dtype=_ef.int32)
    if not increasing:
        powers = _ef.reverse(powers, [0])
    d = dtype_of(t)
    if d == "bool":
        t = _cast(t, _ef.int32)
    return _ef.pow(_ef.expand_dims(t, 1), _cast(_ef.expand_dims(powers, 0), t.dtype))


def diff(a, n=1, axis=-1):
    t = tensor(a)
    for _ in range(n):
        ax = axis % t.shape.rank
        sl1 = tuple([slice(None)] * ax + [slice(1, None)])
        sl0 = tuple([slice(None)] * ax + [slice(None, -1)])
        t = (_ef.not_equal(t[sl1], t[sl0]) if dtype_of(t) == "bool" else t[sl1] - t[sl0])
    return t


def isin(x1, x2, assume_unique=False, invert=False):
    (a, b), _ = promote(x1, x2)
    eq = _ef.reduce_any(_ef.equal(_ef.expand_dims(a, -1), _ef.reshape(b, [-1])), axis=-1)
    return _ef.logical_not(eq) if invert else eq


def unique(x, sorted=True, return_inverse=False, return_counts=False, axis=None, size=None, fill_value=None):  # noqa: A002
    t = tensor(x)
    if axis is not None:
        raise ValueError("unique: axis= is not supported by eagerflow's keras.ops.unique (it flattens, as axis=None)")
    y, idx, counts = _ef.unique_with_counts(_ef.reshape(t, [-1]))
    if sorted:
        order = _ef.argsort(y)
        y, counts = _ef.gather(y, order), _ef.gather(counts, order)
        idx = _ef.gather(_ef.argsort(order), idx)  # first-seen position -> sorted position
    if size is not None:
        fill = y[0] if fill_value is None else _cast(fill_value, y.dtype)
        y = _ef.concat([y, _ef.fill([size], fill)], 0)[:size]
        counts = _ef.concat([counts, _ef.zeros([size], counts.dtype)], 0)[:size]
    out = [y]
    if return_inverse:
        out.append(_ef.reshape(_cast(idx, _ef.int32), shape_of(t)))
    if return_counts:
        out.append(_cast(counts, _ef.int32))
    return out[0] if len(out) == 1 else tuple(out)


def tensordot(x1, x2, axes=2):
    (a, b), _ = promote(x1, x2)
    return _ef.tensordot(a, b, axes)


def matmul(x1, x2):
    (a, b), dt = promote(x1, x2)
    if dt == "bool":
        return _ef.cast(_ef.matmul(_cast(a, _ef.int32), _cast(b, _ef.int32)), _ef.bool)
    if dt in ("int8", "int16", "uint8", "uint16"):
        # accumulated in int32; Keras keeps int8 x int8 in int32 (its quantized kernels), else the promoted dtype
        out = matmul(_cast(a, _ef.int32), _cast(b, _ef.int32))
        return out if dt == "int8" else _cast(out, as_dtype(dt))
    if a.shape.rank == 1 and b.shape.rank == 1:
        return _ef.reduce_sum(a * b)
    if a.shape.rank == 1:
        return _ef.squeeze(_ef.matmul(_ef.expand_dims(a, 0), b), -2)
    if b.shape.rank == 1:
        return _ef.squeeze(_ef.matmul(a, _ef.expand_dims(b, -1)), -1)
    return _ef.matmul(a, b)


def dot(x1, x2):
    (a, b), _ = promote(x1, x2)
    if a.shape.rank == 0 or b.shape.rank == 0:
        return a * b
    if b.shape.rank == 1:
        return _ef.tensordot(a, b, [[a.shape.rank - 1], [0]])
    return _ef.tensordot(a, b, [[a.shape.rank - 1], [b.shape.rank - 2]])


def vdot(x1, x2):
    (a, b), _ = promote(x1, x2)
    if dtype_of(a).startswith("complex"):
        a = _ef.math.conj(a)
    return _ef.reduce_sum(_ef.reshape(a, [-1]) * _ef.reshape(b, [-1]))


def inner(x1, x2):
    (a, b), _ = promote(x1, x2)
    if a.shape.rank == 0 or b.shape.rank == 0:
        return a * b
    return _ef.tensordot(a, b, [[a.shape.rank - 1], [b.shape.rank - 1]])


def outer(x1, x2):
    (a, b), _ = promote(x1, x2)
    return _ef.reshape(a, [-1, 1]) * _ef.reshape(b, [1, -1])


def kron(x1, x2):
    (a, b), _ = promote(x1, x2)
    r = _b.max(a.shape.rank, b.shape.rank)
    a = _ef.reshape(a, [1] * (r - a.shape.rank) + list(a.shape))
    b = _ef.reshape(b, [1] * (r - b.shape.rank) + list(b.shape))
    ai = _ef.reshape(a, [v for d in a.shape for v in (d, 1)])
    bi = _ef.reshape(b, [v for d in b.shape for v in (1, d)])
    return _ef.reshape(ai * bi, [da * db for da, db in zip(a.shape, b.shape)])


def cross(x1, x2, axisa=-1, axisb=-1, axisc=-1, axis=None):
    (a, b), _ = promote(x1, x2)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = moveaxis(a, axisa, -1), moveaxis(b, axisb, -1)
    if a.shape[-1] == 2:
        a = _ef.concat([a, _ef.zeros_like(a[..., :1])], -1)
    if b.shape[-1] == 2:
        b = _ef.concat([b, _ef.zeros_like(b[..., :1])], -1)
    shape = broadcast_shape(shape_of(a), shape_of(b))
    c = _ef.linalg.cross(_ef.broadcast_to(a, shape), _ef.broadcast_to(b, shape))
    if x1_is_2d_both(x1, x2, axisa, axisb):
        return c[..., 2]
    return moveaxis(c, -1, axisc)


def x1_is_2d_both(x1, x2, axisa, axisb):
    return tensor(x1).shape[axisa] == 2 and tensor(x2).shape[axisb] == 2


def einsum(subscripts, *operands):
    ts, dt = promote(*operands)
    if dt in ("bool", "int8", "int16", "uint8", "uint16"):
        out = _ef.einsum(subscripts, *[_cast(t, _ef.int32) for t in ts])
        return out if dt in ("bool", "int8") else _cast(out, as_dtype(dt))  # int8 operands give int32, as in Keras
    return _ef.einsum(subscripts, *ts)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    t = tensor(y, float_dtype(y))
    ax = axis % t.shape.rank
    lo = tuple([slice(None)] * ax + [slice(None, -1)])
    hi = tuple([slice(None)] * ax + [slice(1, None)])
    if x is None:
        d = _cast(dx, t.dtype)
    else:
        xt = tensor(x, t.dtype)
        d = diff(xt, axis=-1 if xt.shape.rank == 1 else axis)
        if xt.shape.rank == 1 and t.shape.rank > 1:
            d = _ef.reshape(d, [-1 if i == ax else 1 for i in range(t.shape.rank)])
    return _ef.reduce_sum(d * (t[lo] + t[hi]) / _cast(2.0, t.dtype), axis=ax)


def histogram(x, bins=10, range=None):  # noqa: A002 - NumPy's name
    t = tensor(x)
    if t.shape.rank != 1:
        raise ValueError(f"Input tensor must be 1-dimensional. Received: input.shape={t.shape}")
    if not isinstance(bins, int):
        raise TypeError(f"Argument `bins` must be of type `int`. Received: bins={bins}")
    if range is None:
        lo, hi = _ef.reduce_min(t), _ef.reduce_max(t)
    else:
        lo, hi = _cast(range[0], t.dtype), _cast(range[1], t.dtype)
    ft = _cast(t, _ef.float32) if not t.dtype.is_floating else t
    lo, hi = _cast(lo, ft.dtype), _cast(hi, ft.dtype)
    edges = linspace(lo, hi, bins + 1, dtype=standardize_dtype(ft.dtype))
    inside = _ef.logical_and(_ef.greater_equal(ft, lo), _ef.less_equal(ft, hi))
    idx = _ef.clip_by_value(_ef.searchsorted(edges[1:-1], ft, side="right"), 0, bins - 1) if bins > 1 else \
        _ef.zeros_like(_cast(ft, _ef.int32))
    # one-hot sums rather than a masked bincount: the shape stays static, so it traces
    counts = _ef.reduce_sum(_ef.one_hot(idx, bins, dtype=_ef.int32) * _ef.expand_dims(_cast(inside, _ef.int32), -1), 0)
    return _cast(counts, edges.dtype), edges  # Keras gives the counts in the edges' float dtype


def corrcoef(x):
    t = tensor(x, float_dtype(x))
    t = t - _ef.reduce_mean(t, axis=-1, keepdims=True)
    cov = _ef.matmul(t, t, transpose_b=True)
    d = _ef.sqrt(_ef.linalg.diag_part(cov))
    return _ef.clip_by_value(cov / _ef.expand_dims(d, 0) / _ef.expand_dims(d, 1), -1.0, 1.0)


def correlate(x1, x2, mode="valid"):
    (a, b), dt = promote(x1, x2)
    if dt not in ("float16", "bfloat16", "float32", "float64"):
        a, b = _cast(a, _ef.float32), _cast(b, _ef.float32)
    n, m = a.shape[0], b.shape[0]
    if mode == "valid":
        pad_l = pad_r = 0
    elif mode == "same":
        pad_l, pad_r = (m - 1) // 2 if n >= m else m // 2, m - 1 - ((m - 1) // 2 if n >= m else m // 2)
    elif mode == "full":
        pad_l = pad_r = m - 1
    else:
        raise ValueError(f"Invalid mode: {mode}")
    if n < m:
        a, b = b, a
        n, m = m, n
        rev = True
    else:
        rev = False
    ap = _ef.pad(a, [[pad_l, pad_r]])
    out_len = n + pad_l + pad_r - m + 1
    idx = _ef.expand_dims(_ef.range(out_len), 1) + _ef.expand_dims(_ef.range(m), 0)
    out = _ef.reduce_sum(_ef.gather(ap, idx) * b, axis=1)
    return _ef.reverse(out, [0]) if rev else out


def select(condlist, choicelist, default=0):
    ts, _ = promote(*choicelist, default)
    out = ts[-1]
    shape = shape_of(out)
    for c, v in reversed(list(zip(condlist, ts[:-1]))):
        shape = broadcast_shape(broadcast_shape(shape, shape_of(tensor(c))), shape_of(v))
        out = _ef.where(_ef.broadcast_to(tensor(c, "bool"), shape), _ef.broadcast_to(v, shape), _ef.broadcast_to(out, shape))
    return out


def bincount(x, weights=None, minlength=0, sparse=False):
    t = tensor(x)
    if sparse:
        raise ValueError("sparse=True: eagerflow's keras.ops.bincount returns dense counts only")
    if t.shape.rank == 2:
        return _ef.stack([bincount(r, None if weights is None else w, minlength)
                          for r, w in zip(_ef.unstack(t), _ef.unstack(tensor(weights)) if weights is not None
                                          else [None] * t.shape[0])])
    if weights is None:
        return _ef.math.bincount(_cast(t, _ef.int32), minlength=minlength, dtype=_ef.int32)
    w = tensor(weights)
    wd = float_dtype(w) if not w.dtype.is_integer else dtype_of(w)
    return _ef.math.bincount(_cast(t, _ef.int32), weights=tensor(w, wd), minlength=minlength,
                             dtype=as_dtype(wd))


def get_item(x, key):
    return tensor(x)[key]


def view(x, dtype=None):
    import numpy as np
    t = tensor(x)
    if dtype is None:
        return t
    dt = standardize_dtype(dtype)
    probe = np.zeros([d or 1 for d in t.shape], t.dtype.as_numpy_dtype).view(dt)
    out = _ef.numpy_function(lambda a: a.view(dt), [t], as_dtype(dt))
    return _ef.ensure_shape(out, probe.shape)
