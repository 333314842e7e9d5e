"""tf.nn.isotonic_regression: the closest monotone sequence along an axis (pool adjacent
violators). The blocks are found on the host (a block joins its predecessor only when its mean
breaks the order strictly, as TF's kernel); the output is the input's mean over each block by a
segment mean, so its gradient is TF's (each element gets its block's mean of the upstream)."""
import collections as _collections

import numpy as _np

from . import _core
from . import errors as _errors
from . import math as _math

__all__ = ["isotonic_regression"]

IsotonicRegression = _collections.namedtuple("IsotonicRegression", ["output", "segments"])


def _blocks(row):
    """Block ids of a non-increasing fit of row."""
    sums, counts, ends = [], [], []
    for i, v in enumerate(row.tolist()):
        sums.append(v)
        counts.append(1)
        ends.append(i)
        while len(sums) > 1 and sums[-1] / counts[-1] > sums[-2] / counts[-2]:
            s, c, e = sums.pop(), counts.pop(), ends.pop()
            sums[-1] += s
            counts[-1] += c
            ends[-1] = e
    ids = _np.empty(len(row), _np.int32)
    start = 0
    for b, end in enumerate(ends):
        ids[start:end + 1] = b
        start = end + 1
    return ids


def isotonic_regression(inputs, decreasing=True, axis=-1):
    """(the best non-increasing fit along axis, or non-decreasing with decreasing=False; the int32
    block index of each element)."""
    x = _core.convert_to_tensor(inputs)
    if not x.dtype.is_floating:
        x = _core.cast(x, _core.DType.float32)
    rank = len(x._shape_tuple)
    if rank == 0:
        raise ValueError("isotonic_regression: inputs must have rank >= 1")
    axis = int(axis)
    if not -rank <= axis < rank:
        raise ValueError(f"isotonic_regression: axis {axis} is out of range for rank {rank}")
    axis %= rank
    perm = [d for d in range(rank) if d != axis] + [axis]
    moved = _core.transpose(x, perm) if axis != rank - 1 else x
    try:
        host = moved.numpy().astype(_np.float64)
    except Exception as e:
        raise _errors.InvalidArgumentError(f"isotonic_regression finds its blocks on the host, so it runs eagerly, "
                                           f"not inside ef.function: {e}") from None
    n = host.shape[-1]
    rows = host.reshape(-1, n)
    sign = 1.0 if decreasing else -1.0
    segments = _np.stack([_blocks(sign * r) for r in rows]) if rows.size else _np.zeros(rows.shape, _np.int32)
    flat_ids = (segments + _np.arange(len(rows))[:, None] * n).reshape(-1)
    ids = _core.constant(flat_ids.astype(_np.int32))
    values = _core.reshape(moved, [-1])
    means = _math.unsorted_segment_mean(values, ids, max(len(flat_ids), 1))
    out = _core.reshape(_core.gather(means, ids, 0), list(host.shape))
    seg = _core.constant(segments.reshape(host.shape))
    if axis != rank - 1:
        back = [perm.index(d) for d in range(rank)]
        out, seg = _core.transpose(out, back), _core.transpose(seg, back)
    return IsotonicRegression(out, seg)
