"""tf.nn's window maxima besides max_pool: grayscale dilation and erosion (dilation2d,
erosion2d) and max_pool_with_argmax. Each is a running maximum over the window's offsets,
one strided slice of the padded input per offset: a strictly larger value replaces the best so
far, so the first maximum in the window's row-major order wins, as TF's kernels choose, and
the gradient (through `where`) reaches that element only, as TF's does."""
import collections as _collections

import numpy as _np

from . import _core
from . import _array_ops
from . import errors as _errors
from ._nn_conv import _pair, _padding
from ._nn_conv3d import _padding_plan  # TF's SAME / VALID output sizes, one definition

__all__ = ["dilation2d", "erosion2d", "max_pool_with_argmax"]

MaxPoolWithArgmax = _collections.namedtuple("MaxPoolWithArgmax", ["output", "argmax"])


def _lowest(dtype):
    if dtype.is_floating:
        return -_np.inf
    return int(_np.iinfo(_np.dtype(dtype.as_numpy_dtype)).min)


def _nhwc(data_format, what):
    if data_format not in (None, "NHWC"):
        raise ValueError(f"{what}: data_format must be 'NHWC', got {data_format!r}")


def _windows(x, ksize, strides, rates, padding, what, fill):
    """The padded input and, per window offset (row-major), a function slicing it to the output grid."""
    shape = tuple(x._shape_tuple)
    if len(shape) != 4 or any(v is None for v in shape[1:]):
        raise ValueError(f"{what}: input must be 4-D [batch, height, width, channels] with known sizes, got {shape}")
    plans = [_padding_plan(shape[1 + i], ksize[i], strides[i], rates[i], padding, what) for i in range(2)]
    pads = [[0, 0], [plans[0][0], plans[0][1]], [plans[1][0], plans[1][1]], [0, 0]]
    out = (plans[0][2], plans[1][2])

    def cut(t, dy, dx):
        y0, x0 = dy * rates[0], dx * rates[1]
        return t[:, y0:y0 + (out[0] - 1) * strides[0] + 1:strides[0], x0:x0 + (out[1] - 1) * strides[1] + 1:strides[1]]

    padded = _core.pad(x, pads, constant_values=fill) if any(p for pair in pads for p in pair) else x
    return padded, pads, cut


def dilation2d(input, filters, strides, padding, data_format, dilations, name=None):  # noqa: A002
    """tf.nn.dilation2d: out[b, y, x, c] = max over (dy, dx) of
    input[b, y*sy + dy*ry - pad, x*sx + dx*rx - pad, c] + filters[dy, dx, c]."""
    _nhwc(data_format, "dilation2d")
    x = _core.convert_to_tensor(input)
    f = _core.convert_to_tensor(filters, dtype=x.dtype)
    fshape = tuple(f._shape_tuple)
    if len(fshape) != 3 or (len(x._shape_tuple) == 4 and fshape[2] != x._shape_tuple[3]):
        raise _errors.InvalidArgumentError(f"dilation2d: filters must be [height, width, channels] with the input's "
                                           f"channels, got {fshape} for input {tuple(x._shape_tuple)}")
    st, rt = _pair(strides, "strides"), _pair(dilations, "dilations")
    padded, _, cut = _windows(x, fshape[:2], st, rt, _padding(padding, "dilation2d"), "dilation2d", _lowest(x.dtype))
    best = None
    for dy in range(fshape[0]):
        for dx in range(fshape[1]):
            v = cut(padded, dy, dx) + f[dy, dx]
            best = v if best is None else _core.where(v > best, v, best)
    return best


def erosion2d(value, filters, strides, padding, data_format, dilations, name=None):
    """tf.nn.erosion2d: -dilation2d(-value, filters flipped in height and width)."""
    x = _core.convert_to_tensor(value)
    f = _array_ops.reverse(_core.convert_to_tensor(filters, dtype=x.dtype), [0, 1])
    return _core.neg(dilation2d(_core.neg(x), f, strides, padding, data_format, dilations))


def max_pool_with_argmax(input, ksize, strides, padding, data_format="NHWC", output_dtype=_core.DType.int64,  # noqa: A002
                         include_batch_in_index=False, name=None):
    """tf.nn.max_pool_with_argmax: (the max pool, the flat index of each maximum): (y * width + x)
    * channels + c, plus batch * height * width * channels with include_batch_in_index."""
    _nhwc(data_format, "max_pool_with_argmax")
    if output_dtype not in (_core.DType.int64, _core.DType.int32):
        raise TypeError(f"max_pool_with_argmax: output_dtype must be int32 or int64, got {output_dtype}")
    x = _core.convert_to_tensor(input)
    k, st = _pair(ksize, "ksize"), _pair(strides, "strides")
    padded, pads, cut = _windows(x, k, st, (1, 1), _padding(padding, "max_pool_with_argmax"), "max_pool_with_argmax",
                                 _lowest(x.dtype))
    _, h, w, c = x._shape_tuple
    flat = _np.arange(h * w * c, dtype=_np.int64).reshape(1, h, w, c)
    index = _core.constant(_np.pad(flat, pads, constant_values=-1))
    if include_batch_in_index:
        batch = _core.cast(_core.range(0, _core.shape(x)[0]), _core.DType.int64) * (h * w * c)
        index = index + _core.reshape(batch, [-1, 1, 1, 1])
    best = best_index = None
    for dy in range(k[0]):
        for dx in range(k[1]):
            v, i = cut(padded, dy, dx), cut(index, dy, dx)
            if best is None:
                best, best_index = v, i
            else:
                better = v > best
                best, best_index = _core.where(better, v, best), _core.where(better, i, best_index)
    if not include_batch_in_index:
        best_index = best_index + _core.zeros_like(_core.cast(best, _core.DType.int64))  # one index grid per example
    return MaxPoolWithArgmax(best, _core.cast(best_index, output_dtype))
