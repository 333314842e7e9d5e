"""tf.nn.fractional_max_pool and fractional_avg_pool (Graham's fractional pooling): each output
row pools a band of k or k + 1 input rows (k = floor(input / output)), the bands drawn per call
by TF's rules: at random (k everywhere, plus one at input % output random places) or
pseudo-randomly (band edges ceil(alpha * (i + u)) - 1, alpha = input / output, one uniform u
below the bound that keeps every band k or k + 1 wide). The draws come from NumPy's generator
(a seed gives the same bands every call), not TF's Philox stream, so the bands differ from TF's
for a given seed while following the same distribution. The pooling over given bands is ops
(gathers and a reduce_max, or two matmuls with band averages), so it traces and differentiates;
overlapping bands share their edge row, as TF's. Inside ef.function the bands are drawn once,
while tracing: with a seed that is TF's behaviour too (fixed bands per node); with seed=0 TF
draws new bands on every run, a traced eagerflow function keeps its trace's."""
import collections as _collections
import math as _math

import numpy as _np

from . import _core
from . import errors as _errors

__all__ = ["fractional_max_pool", "fractional_avg_pool"]

FractionalMaxPool = _collections.namedtuple("FractionalMaxPool", ["output", "row_pooling_sequence", "col_pooling_sequence"])
FractionalAvgPool = _collections.namedtuple("FractionalAvgPool", ["output", "row_pooling_sequence", "col_pooling_sequence"])


def _ratios(pooling_ratio):
    if isinstance(pooling_ratio, (int, float)):
        r = [1.0, float(pooling_ratio), float(pooling_ratio), 1.0]
    else:
        r = [float(v) for v in pooling_ratio]
        if len(r) == 1:
            r = [1.0, r[0], r[0], 1.0]
        elif len(r) == 2:
            r = [1.0, r[0], r[1], 1.0]
        elif len(r) != 4:
            raise ValueError(f"`pooling_ratio` should have 1, 2 or 4 elements. Received: pooling_ratio={pooling_ratio}")
    if r[0] != 1.0 or r[3] != 1.0:
        raise ValueError(f"`pooling_ratio` should have first and last elements with value 1.0. "
                         f"Received: pooling_ratio={pooling_ratio}")
    if any(v < 1.0 for v in r):
        raise ValueError(f"`pooling_ratio` elements should be >= 1.0. Received: pooling_ratio={pooling_ratio}")
    return r[1], r[2]


def _sequence(n_in, n_out, pseudo_random, gen):
    """The band edges: n_out + 1 ints from 0 to n_in."""
    k = n_in // n_out
    if pseudo_random:
        alpha = n_in / n_out
        max_u = min((k + 2) / alpha - 1, (n_in + 1 - k) / alpha - (n_out - 1))
        u = gen.random() * max_u
        inner = [_math.ceil(alpha * (i + u)) - 1 for i in range(1, n_out)]
        return _np.asarray([0] + inner + [n_in], _np.int64)
    widths = _np.full(n_out, k, _np.int64)
    widths[gen.permutation(n_out)[:n_in % n_out]] += 1
    return _np.concatenate([[0], _np.cumsum(widths)]).astype(_np.int64)


def _bands(seq, n_in, overlapping):
    """[n_out, widest] row indices of each band (short bands repeat their last row) and the widths."""
    ends = _np.minimum(seq[1:] + (1 if overlapping else 0), n_in)
    widths = ends - seq[:-1]
    widest = int(widths.max())
    idx = _np.minimum(seq[:-1, None] + _np.arange(widest)[None, :], ends[:, None] - 1)
    return idx.astype(_np.int32), widths


def _prepare(value, pooling_ratio, pseudo_random, seed, what):
    x = _core.convert_to_tensor(value)
    shape = tuple(x._shape_tuple)
    if len(shape) != 4 or shape[1] is None or shape[2] is None:
        raise ValueError(f"{what}: value must be 4-D [batch, height, width, channels] with known height and width, "
                         f"got {shape}")
    rh, rw = _ratios(pooling_ratio)
    out_h, out_w = int(shape[1] / rh), int(shape[2] / rw)
    if out_h < 1 or out_w < 1:
        raise _errors.InvalidArgumentError(f"{what}: pooling_ratio {pooling_ratio} leaves no output for input {shape}")
    gen = _np.random.default_rng(None if not seed else int(seed))
    rows = _sequence(shape[1], out_h, pseudo_random, gen)
    cols = _sequence(shape[2], out_w, pseudo_random, gen)
    return x, shape, rows, cols


def fractional_max_pool(value, pooling_ratio, pseudo_random=False, overlapping=False, seed=0, name=None):
    """(the band maxima, the row band edges, the column band edges)."""
    x, shape, rows, cols = _prepare(value, pooling_ratio, pseudo_random, seed, "fractional_max_pool")
    out = x
    for axis, seq in ((1, rows), (2, cols)):
        idx, _ = _bands(seq, shape[axis], overlapping)
        picked = _core.gather(out, _core.constant(idx), axis)  # [..., n_out, widest, ...]
        out = _core.reduce_max(picked, axis=axis + 1)
    return FractionalMaxPool(out, _core.constant(rows), _core.constant(cols))


def fractional_avg_pool(value, pooling_ratio, pseudo_random=False, overlapping=False, seed=0, name=None):
    """(the band means, the row band edges, the column band edges)."""
    x, shape, rows, cols = _prepare(value, pooling_ratio, pseudo_random, seed, "fractional_avg_pool")
    if not x.dtype.is_floating:
        raise TypeError(f"fractional_avg_pool: value must be floating point, got {x.dtype}")
    n, h, w, c = shape

    def averages(seq, size):
        idx, widths = _bands(seq, size, overlapping)
        a = _np.zeros((len(widths), size))
        for i, (row, width) in enumerate(zip(idx, widths)):
            a[i, row[:width]] = 1.0 / width
        return _core.constant(a.T.astype(_np.dtype(x.dtype.as_numpy_dtype)))

    ah, aw = averages(rows, h), averages(cols, w)
    y = _core.matmul(_core.reshape(_core.transpose(x, [0, 2, 3, 1]), [-1, h]), ah)  # [n * w * c, out_h]
    y = _core.transpose(_core.reshape(y, [-1, w, c, len(rows) - 1]), [0, 3, 2, 1])   # [n, out_h, c, w]
    y = _core.matmul(_core.reshape(y, [-1, w]), aw)                                   # [n * out_h * c, out_w]
    y = _core.transpose(_core.reshape(y, [-1, len(rows) - 1, c, len(cols) - 1]), [0, 1, 3, 2])
    return FractionalAvgPool(y, _core.constant(rows), _core.constant(cols))
