"""tf.nn's 3-D convolution and pools (NDHWC; NCDHW by transposing) as compositions of the 2-D
ops: the depth axis is folded into the batch. conv3d gathers the kd depth slabs each output
depth reads into the channels (a [kh, kw, kd * C, out] filter), so it is one conv2d; a pool
pools height and width with the 2-D pool, then the depth slabs elementwise. Everything traces,
differentiates and vmaps through the 2-D ops; the transposed convolution is conv3d's gradient."""

import numpy as _np

from . import _core
from . import errors as _errors
from ._nn_conv import _pair, _padding

__all__ = ["conv3d", "conv3d_transpose", "max_pool3d", "avg_pool3d"]


def _first(data_format):
    if data_format in (None, "NDHWC"):
        return False
    if data_format == "NCDHW":
        return True
    raise ValueError(f"data_format must be 'NDHWC' or 'NCDHW', got {data_format!r}")


def _spatial(v, what, first):
    """TF's 5-entry lists are [1, d, h, w, 1] (NDHWC) or [1, 1, d, h, w] (NCDHW)."""
    if first and v is not None and not isinstance(v, int) and getattr(v, "ndim", 1) != 0 and len(list(v)) == 5:
        v = [int(a) for a in v]
        if v[0] != 1 or v[1] != 1:
            raise _errors.UnimplementedError(f"{what}: strides in the batch and depth dimensions are not supported, got {v}")
        return (v[2], v[3], v[4])
    if v is not None and not isinstance(v, int) and getattr(v, "ndim", 1) != 0 and len(list(v)) == 5:
        v = [int(a) for a in v]
        if v[0] != 1 or v[4] != 1:
            raise _errors.UnimplementedError(f"{what}: strides in the batch and depth dimensions are not supported, got {v}")
        return tuple(v[1:4])
    return _pair(v, what, 3)


def _to_last(x, first):
    return _core.transpose(x, [0, 2, 3, 4, 1]) if first else x


def _from_last(x, first):
    return _core.transpose(x, [0, 4, 1, 2, 3]) if first else x


def _padding_plan(size, k, s, d, padding, what):
    """(pad before, pad after, output size) along one axis, as TF's SAME / VALID."""
    eff = (k - 1) * d + 1
    if padding == "same":
        out = -(-size // s)
        total = max((out - 1) * s + eff - size, 0)
        return total // 2, total - total // 2, out
    out = (size - eff) // s + 1
    if out <= 0:
        raise _errors.InvalidArgumentError(f"{what}: computed output size would be negative: {size - eff} "
                                           f"[input_size: {size}, effective_filter_size: {eff}, stride: {s}]")
    return 0, 0, out


def _check_rank(x, what):
    if x.dtype not in (_core.DType.float32, _core.DType.bfloat16):
        if not x.dtype.is_floating:
            raise TypeError(f"{what}: input must be floating point, got {x.dtype.name}")
        raise _errors.UnimplementedError(f"{what}: eagerflow's convolutions and pools run in float32 (or bfloat16), "
                                         f"got {x.dtype.name}")
    shape = tuple(x._shape_tuple)
    if len(shape) != 5:
        raise ValueError(f"{what}: input must be 5-D [batch, depth, height, width, channels], got shape {shape}")
    if any(v is None for v in shape[1:]):
        raise ValueError(f"{what}: the depth, height, width and channels must be known, got shape {shape}")
    return shape


def _slabs(x, k, s, d, out):
    """The k depth slabs [N, out, H, W, C] that the output depths read, one per kernel depth."""
    return [x[:, j * d:j * d + (out - 1) * s + 1:s] for j in range(k)]


def _check_hw(size, k, d, padding, what):
    if padding == "valid" and size < (k - 1) * d + 1:
        raise _errors.InvalidArgumentError(f"{what}: computed output size would be negative: {size - (k - 1) * d - 1} "
                                           f"[input_size: {size}, effective_filter_size: {(k - 1) * d + 1}, stride: 1]")


def conv3d(input, filters, strides, padding, data_format="NDHWC", dilations=None, name=None):  # noqa: A002
    """tf.nn.conv3d: input [N, D, H, W, C], filters [kd, kh, kw, C, out]."""
    first = _first(data_format)
    x = _to_last(_core.convert_to_tensor(input), first)
    w = _core.convert_to_tensor(filters, dtype=x.dtype)
    _, depth, height, width, channels = _check_rank(x, "conv3d")
    wshape = tuple(w._shape_tuple)
    if len(wshape) != 5:
        raise ValueError(f"conv3d: filters must be 5-D [depth, height, width, in, out], got shape {wshape}")
    if wshape[3] != channels:
        raise _errors.InvalidArgumentError(f"conv3d: input and filter must have the same depth: {channels} vs {wshape[3]}")
    st, dil, pad = _spatial(strides, "conv3d", first), _spatial(dilations, "conv3d", first), _padding(padding, "conv3d")
    kd, kh, kw, _, out_channels = wshape
    for size, k, dd in ((height, kh, dil[1]), (width, kw, dil[2])):
        _check_hw(size, k, dd, pad, "conv3d")
    before, after, out = _padding_plan(depth, kd, st[0], dil[0], pad, "conv3d")
    if before or after:
        x = _core.pad(x, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]])
    folded = _core.concat([_core.reshape(s, [-1, height, width, channels]) for s in _slabs(x, kd, st[0], dil[0], out)], -1)
    kernel = _core.reshape(_core.transpose(w, [1, 2, 0, 3, 4]), [kh, kw, kd * channels, out_channels])
    y = _core.conv2d(folded, kernel, st[1:], pad, dil[1:])
    ho, wo = y._shape_tuple[1], y._shape_tuple[2]
    return _from_last(_core.reshape(y, [-1, out, ho, wo, out_channels]), first)


def conv3d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NDHWC", dilations=None, name=None):  # noqa: A002
    """tf.nn.conv3d_transpose: conv3d's gradient with respect to an input of output_shape;
    filters [kd, kh, kw, out_channels, in_channels] as TF's."""
    from ._autodiff import GradientTape
    first = _first(data_format)
    x = _core.convert_to_tensor(input)
    if isinstance(output_shape, (_core.Tensor, _core.Variable)):
        output_shape = output_shape.numpy()
    shape = [int(v) for v in output_shape]
    if len(shape) != 5:
        raise ValueError(f"conv3d_transpose: output_shape must have 5 entries, got {shape}")
    w = _core.convert_to_tensor(filters, dtype=x.dtype)
    if len(w._shape_tuple) == 5 and x._shape_tuple and w._shape_tuple[4] != x._shape_tuple[1 if first else -1]:
        raise ValueError(f"conv3d_transpose: input channels {x._shape_tuple} do not match the filter's {w._shape_tuple[4]}")
    z = _core.zeros(shape, dtype=x.dtype)
    with GradientTape() as tape:
        tape.watch(z)
        y = conv3d(z, w, strides, padding, data_format, dilations)
        if tuple(y._shape_tuple) != tuple(x._shape_tuple):
            raise ValueError(f"conv3d_transpose: input shape {x._shape_tuple} does not fit output_shape {shape} "
                             f"(conv3d of output_shape gives {y._shape_tuple})")
        total = _core.reduce_sum(y * x)
    return tape.gradient(total, z)


def _pool3d(kind, input, ksize, strides, padding, data_format):  # noqa: A002
    what = f"{kind}_pool3d"
    first = _first(data_format)
    x = _to_last(_core.convert_to_tensor(input), first)
    _, depth, height, width, channels = _check_rank(x, what)
    k, s, pad = _spatial(ksize, what, first), _spatial(strides, what, first), _padding(padding, what)
    for size, kk in ((height, k[1]), (width, k[2])):
        _check_hw(size, kk, 1, pad, what)
    before, after, out = _padding_plan(depth, k[0], s[0], 1, pad, what)
    pool2d = _core.max_pool2d if kind == "max" else _core.avg_pool2d
    y = pool2d(_core.reshape(x, [-1, height, width, channels]), k[1:], s[1:], pad)
    ho, wo = y._shape_tuple[1], y._shape_tuple[2]
    y = _core.reshape(y, [-1, depth, ho, wo, channels])
    if kind == "max":
        if before or after:
            lowest = -_np.inf if y.dtype.is_floating else int(_np.iinfo(_np.dtype(y.dtype.as_numpy_dtype)).min)
            y = _core.pad(y, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]], constant_values=lowest)
        return _from_last(_core.reduce_max(_core.stack(_slabs(y, k[0], s[0], 1, out), 0), axis=0), first)
    if before or after:
        y = _core.pad(y, [[0, 0], [before, after], [0, 0], [0, 0], [0, 0]])
    total = _core.reduce_sum(_core.stack(_slabs(y, k[0], s[0], 1, out), 0), axis=0)
    # SAME averages over the window's part inside the input (TF's): the depth count per output.
    starts = _np.arange(out) * s[0] - before
    counts = _np.minimum(starts + k[0], depth) - _np.maximum(starts, 0)
    inv = _core.constant((1.0 / counts).reshape(1, out, 1, 1, 1), dtype=y.dtype)
    return _from_last(total * inv, first)


def max_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """tf.nn.max_pool3d: the largest value of each [kd, kh, kw] window, per channel."""
    return _pool3d("max", input, ksize, strides, padding, data_format)


def avg_pool3d(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
    """tf.nn.avg_pool3d: each window's mean (with SAME, over the part inside the input)."""
    return _pool3d("avg", input, ksize, strides, padding, data_format)
