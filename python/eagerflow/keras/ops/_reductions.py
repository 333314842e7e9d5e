"""keras.ops' reductions and statistics (NumPy's arguments: axis, keepdims) with Keras' result dtypes."""
import eagerflow as _ef
from ... import math as _m
from ... import cast as _cast
from ._dtypes import filled, shape_of, dtype_of, float_dtype, tensor, floatx
from ._elementwise import isnan as _isnan


def _axis(axis):
    if axis is None:
        return None
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    return int(axis)


def _acc_dtype(d):
    # Keras sums small integers (and bools) in int32 / uint32, as NumPy does in the platform int
    if d in ("bool", "int8", "int16"):
        return "int32"
    if d in ("uint8", "uint16"):
        return "uint32"
    return d


def sum(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    t = tensor(x)
    t = tensor(t, _acc_dtype(dtype_of(t)))
    return _m.reduce_sum(t, axis=_axis(axis), keepdims=keepdims)


def prod(x, axis=None, keepdims=False, dtype=None):
    t = tensor(x)
    t = tensor(t, dtype if dtype is not None else _acc_dtype(dtype_of(t)))
    return _m.reduce_prod(t, axis=_axis(axis), keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    t = tensor(x)
    out_dt = float_dtype(t)
    # float16 means are accumulated in float32 (as Keras does) so long sums don't overflow
    acc = "float32" if out_dt in ("float16", "bfloat16") else out_dt
    return tensor(_m.reduce_mean(tensor(t, acc), axis=_axis(axis), keepdims=keepdims), out_dt)


def var(x, axis=None, keepdims=False):
    t = tensor(x)
    out_dt = float_dtype(t)
    acc = "float32" if out_dt in ("float16", "bfloat16") else out_dt
    return tensor(_m.reduce_variance(tensor(t, acc), axis=_axis(axis), keepdims=keepdims), out_dt)


def std(x, axis=None, keepdims=False):
    return _m.sqrt(var(x, axis=axis, keepdims=keepdims))


def _empty_check(t, axis, name):
    if axis is None and None not in t.shape and 0 in list(t.shape):
        raise ValueError(f"Cannot compute the {name} of an empty tensor.")


def max(x, axis=None, keepdims=False, initial=None):  # noqa: A001 - NumPy's name
    t = tensor(x)
    _empty_check(t, axis, "max")
    b = dtype_of(t) == "bool"
    out = _m.reduce_max(_cast(t, _ef.int32) if b else t, axis=_axis(axis), keepdims=keepdims)
    if initial is not None:
        out = _m.maximum(out, _cast(initial, out.dtype))
    return _cast(out, _ef.bool) if b else out


def min(x, axis=None, keepdims=False, initial=None):  # noqa: A001 - NumPy's name
    t = tensor(x)
    _empty_check(t, axis, "min")
    b = dtype_of(t) == "bool"
    out = _m.reduce_min(_cast(t, _ef.int32) if b else t, axis=_axis(axis), keepdims=keepdims)
    if initial is not None:
        out = _m.minimum(out, _cast(initial, out.dtype))
    return _cast(out, _ef.bool) if b else out


amax, amin = max, min


def all(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    return _m.reduce_all(tensor(x, "bool"), axis=_axis(axis), keepdims=keepdims)


def any(x, axis=None, keepdims=False):  # noqa: A001 - NumPy's name
    return _m.reduce_any(tensor(x, "bool"), axis=_axis(axis), keepdims=keepdims)


def logsumexp(x, axis=None, keepdims=False):
    t = tensor(x, float_dtype(x))
    return _m.reduce_logsumexp(t, axis=_axis(axis), keepdims=keepdims)


def ptp(x, axis=None, keepdims=False):
    return max(x, axis, keepdims) - min(x, axis, keepdims)


def count_nonzero(x, axis=None):
    t = tensor(x)
    return _cast(_m.count_nonzero(t, axis=_axis(axis)), _ef.int32)


def _arg(fn):
    def op(x, axis=None, keepdims=False):
        t = tensor(x)
        if dtype_of(t) == "bool":
            t = _cast(t, _ef.int32)
        if axis is None:
            out = fn(_ef.reshape(t, [-1]), axis=0, output_type=_ef.int32)
            if keepdims:
                out = _ef.reshape(out, [1] * t.shape.rank)
            return out
        out = fn(t, axis=int(axis), output_type=_ef.int32)
        return _ef.expand_dims(out, int(axis)) if keepdims else out
    return op


argmax = _arg(_m.argmax)
argmin = _arg(_m.argmin)


def _nan_fill(x, value):
    t = tensor(x)
    if not t.dtype.is_floating:
        return t, t
    mask = _isnan(t)
    return _ef.where(mask, filled(t, _cast(value, t.dtype)), t), mask


def nansum(x, axis=None, keepdims=False):
    return sum(_nan_fill(x, 0)[0], axis, keepdims)


def nanprod(x, axis=None, keepdims=False):
    return prod(_nan_fill(x, 1)[0], axis, keepdims)


def nanmax(x, axis=None, keepdims=False):
    return max(_nan_fill(x, float("-inf"))[0], axis, keepdims) if tensor(x).dtype.is_floating else max(x, axis, keepdims)


def nanmin(x, axis=None, keepdims=False):
    return min(_nan_fill(x, float("inf"))[0], axis, keepdims) if tensor(x).dtype.is_floating else min(x, axis, keepdims)


def nanmean(x, axis=None, keepdims=False):
    t = tensor(x, float_dtype(x))
    filled, mask = _nan_fill(t, 0)
    n = _m.reduce_sum(_cast(_m.logical_not(mask), t.dtype), axis=_axis(axis), keepdims=keepdims)
    return _m.reduce_sum(filled, axis=_axis(axis), keepdims=keepdims) / n


def nanvar(x, axis=None, keepdims=False):
    t = tensor(x, float_dtype(x))
    mu = nanmean(t, axis, keepdims=True)
    filled, mask = _nan_fill(_m.square(t - mu), 0)
    n = _m.reduce_sum(_cast(_m.logical_not(mask), t.dtype), axis=_axis(axis), keepdims=keepdims)
    return _m.reduce_sum(filled, axis=_axis(axis), keepdims=keepdims) / n


def nanstd(x, axis=None, keepdims=False):
    return _m.sqrt(nanvar(x, axis, keepdims))


def nanargmax(x, axis=None, keepdims=False):
    return argmax(_nan_fill(x, float("-inf"))[0], axis, keepdims)


def nanargmin(x, axis=None, keepdims=False):
    return argmin(_nan_fill(x, float("inf"))[0], axis, keepdims)


def _cum_dtype(d):
    return "int32" if d == "bool" else d  # Keras keeps small integer dtypes here (unlike sum)


def cumsum(x, axis=None, dtype=None):
    t = tensor(x)
    t = tensor(t, dtype if dtype is not None else _cum_dtype(dtype_of(t)))
    if axis is None:
        t, axis = _ef.reshape(t, [-1]), 0
    return _m.cumsum(t, axis=int(axis))


def cumprod(x, axis=None, dtype=None):
    t = tensor(x)
    t = tensor(t, dtype if dtype is not None else _cum_dtype(dtype_of(t)))
    if axis is None:
        t, axis = _ef.reshape(t, [-1]), 0
    return _m.cumprod(t, axis=int(axis))


def nancumsum(x, axis=None, dtype=None):
    return cumsum(_nan_fill(x, 0)[0], axis, dtype)


def nancumprod(x, axis=None, dtype=None):
    return cumprod(_nan_fill(x, 1)[0], axis, dtype)


def average(x, axis=None, weights=None):
    t = tensor(x)
    if weights is None:
        return mean(t, axis=axis)
    from ._dtypes import promote
    w = tensor(weights)
    (t, w), dt = promote(t, w)
    if dt not in ("float16", "bfloat16", "float32", "float64"):
        t, w = tensor(t, floatx()), tensor(w, floatx())
    if axis is not None and w.shape.rank == 1 and t.shape.rank > 1:
        ax = int(axis) % t.shape.rank
        w = _ef.reshape(w, [-1 if i == ax else 1 for i in range(t.shape.rank)])
    return _m.reduce_sum(t * w, axis=_axis(axis)) / _m.reduce_sum(w * _ef.ones_like(t), axis=_axis(axis))


def _sorted_along(t, axis):
    if axis is None:
        return _ef.sort(_ef.reshape(t, [-1]), axis=0), 0
    if isinstance(axis, (list, tuple)):
        rank = t.shape.rank
        axes = sorted(int(a) % rank for a in axis)
        keep = [i for i in range(rank) if i not in axes]
        t = _ef.transpose(t, keep + axes)
        shp = shape_of(t)
        t = _ef.reshape(t, _ef.concat([shp[:len(keep)], [-1]], 0))
        return _ef.sort(t, axis=-1), -1
    return _ef.sort(t, axis=int(axis)), int(axis)


def quantile(x, q, axis=None, method="linear", keepdims=False):
    if method not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"Invalid value for `method`: {method}")
    t = tensor(x, float_dtype(x))
    qt = tensor(q, t.dtype)
    rank = t.shape.rank
    s, ax = _sorted_along(t, axis)
    n = shape_of(s)[ax]
    pos = qt * _cast(n - 1, t.dtype)
    lo = _m.floor(pos)
    hi = _m.ceil(pos)
    if method == "lower":
        idx_w = [(lo, None)]
    elif method == "higher":
        idx_w = [(hi, None)]
    elif method == "nearest":
        idx_w = [(_m.round(pos), None)]
    elif method == "midpoint":
        idx_w = [(lo, 0.5), (hi, 0.5)]
    else:
        idx_w = [(lo, 1.0 - (pos - lo)), (hi, pos - lo)]
    out = None
    for idx, w in idx_w:
        g = _ef.gather(s, _cast(idx, _ef.int32), axis=ax if ax >= 0 else s.shape.rank - 1)
        # the q axes land where `ax` was; move them to the front, as NumPy puts them
        qr = qt.shape.rank
        a = ax if ax >= 0 else s.shape.rank - 1
        if qr:
            perm = list(range(a, a + qr)) + [i for i in range(g.shape.rank) if not a <= i < a + qr]
            g = _ef.transpose(g, perm)
        if w is not None:
            wt = _cast(w, t.dtype) if not isinstance(w, float) else _cast(w, t.dtype)
            if qr and not isinstance(w, float):
                wt = _ef.reshape(wt, list(wt.shape) + [1] * (g.shape.rank - qr))
            g = g * wt
        out = g if out is None else out + g
    if keepdims:
        qshape = list(qt.shape)
        if axis is None:
            kept = [1] * rank
        else:
            axes = [int(a) % rank for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
            kept = [1 if i in axes else t.shape[i] for i in range(rank)]
        out = _ef.reshape(out, qshape + [-1 if d is None else d for d in kept])
    return out


def percentile(x, q, axis=None, method="linear", keepdims=False):
    return quantile(x, tensor(q, float_dtype(x)) / 100.0, axis=axis, method=method, keepdims=keepdims)


def median(x, axis=None, keepdims=False):
    return quantile(x, 0.5, axis=axis, keepdims=keepdims)


def nanquantile(x, q, axis=None, method="linear", keepdims=False):
    import numpy as np
    t = tensor(x, float_dtype(x))
    return _host_reduce(lambda a: np.nanquantile(a, np.asarray(q), axis=axis, method=method, keepdims=keepdims), t)


def nanpercentile(x, q, axis=None, method="linear", keepdims=False):
    import numpy as np
    t = tensor(x, float_dtype(x))
    return _host_reduce(lambda a: np.nanpercentile(a, np.asarray(q), axis=axis, method=method, keepdims=keepdims), t)


def nanmedian(x, axis=None, keepdims=False):
    import numpy as np
    t = tensor(x, float_dtype(x))
    return _host_reduce(lambda a: np.nanmedian(a, axis=axis, keepdims=keepdims), t)


def _host_reduce(fn, t):
    import numpy as np
    if not t.is_symbolic and not _ef.inside_function():
        return _ef.convert_to_tensor(np.asarray(fn(t.numpy())).astype(t.dtype.as_numpy_dtype))
    probe = np.asarray(fn(np.zeros([d if d is not None else 1 for d in t.shape], t.dtype.as_numpy_dtype)))
    out = _ef.numpy_function(lambda a: np.asarray(fn(a)).astype(a.dtype), [t], t.dtype)
    return _ef.ensure_shape(out, probe.shape) if None not in t.shape else out
