"""tf.nn's convolutions and pools with TF's conventions (strides/ksize as an int or lists of 1, 2
or N+2 entries, padding "SAME"/"VALID" in any case, data_format NHWC/NCHW, NWC/NCW) over the op
table's conv2d and pools; 1-D forms run as 2-D with a height of 1, depthwise convolutions as one
conv2d per input channel, and the transposed convolution as conv2d's gradient."""
from . import _core

__all__ = ["conv1d", "conv2d", "convolution", "conv2d_transpose", "conv1d_transpose", "conv_transpose", "depthwise_conv2d",
           "separable_conv2d", "atrous_conv2d", "max_pool", "max_pool1d", "max_pool2d", "avg_pool", "avg_pool1d",
           "avg_pool2d", "pool", "space_to_depth", "depth_to_space"]


def _pair(v, what, rank=2):
    """An int, or a list of 1, rank or rank + 2 ints (batch and channel entries 1) -> a tuple of `rank`."""
    if v is None:
        return (1,) * rank
    if isinstance(v, (int,)) or getattr(v, "ndim", 1) == 0:
        return (int(v),) * rank
    v = [int(x) for x in v]
    if len(v) == 1:
        return (v[0],) * rank
    if len(v) == rank:
        return tuple(v)
    if len(v) == rank + 2:
        if v[0] != 1 or v[-1] != 1:
            raise ValueError(f"{what}: the batch and channel entries must be 1, got {v}")
        return tuple(v[1:-1])
    raise ValueError(f"{what} must be an int or a list of 1, {rank} or {rank + 2} ints, got {v}")


def _padding(padding, op):
    if not isinstance(padding, str):
        raise NotImplementedError(f"{op}: explicit padding lists are not supported; use 'SAME' or 'VALID'")
    p = padding.lower()
    if p not in ("same", "valid"):
        raise ValueError(f"{op}: padding must be 'SAME' or 'VALID', got {padding!r}")
    return p


def _channels_first(data_format, rank):
    if data_format is None:
        return False
    if data_format in ("NHWC", "NWC", "NDHWC"):
        return False
    if data_format in ("NCHW", "NCW", "NCDHW"):
        return True
    raise ValueError(f"data_format must be channels last (NHWC/NWC) or first (NCHW/NCW), got {data_format!r}")


def _to_last(x, first):
    return _core.transpose(x, [0, 2, 3, 1]) if first else x


def _from_last(x, first):
    return _core.transpose(x, [0, 3, 1, 2]) if first else x


def _strides_from_format(strides, first):
    """With NCHW, TF's 4-entry strides list is [1, 1, h, w]."""
    if first and strides is not None and not isinstance(strides, int) and len(list(strides)) == 4:
        s = [int(v) for v in strides]
        return [1, s[2], s[3], 1]
    return strides


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """tf.nn.conv2d: input [N, H, W, C], filters [kh, kw, C, out]."""
    first = _channels_first(data_format, 4)
    x = _to_last(_core.convert_to_tensor(input), first)
    y = _core.conv2d(x, filters, _pair(_strides_from_format(strides, first), "strides"), _padding(padding, "conv2d"),
                     _pair(_strides_from_format(dilations, first), "dilations"))
    return _from_last(y, first)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None, name=None):  # noqa: A002
    """tf.nn.conv1d: input [N, W, C], filters [k, C, out] (a conv2d of height 1)."""
    first = _channels_first(data_format, 3)
    x = _core.convert_to_tensor(input)
    if first:
        x = _core.transpose(x, [0, 2, 1])
    s, d = _pair(stride, "stride", 1)[0], _pair(dilations, "dilations", 1)[0]
    y = _core.conv2d(_core.expand_dims(x, 1), _core.expand_dims(_core.convert_to_tensor(filters), 0), (1, s),
                     _padding(padding, "conv1d"), (1, d))
    y = _core.squeeze(y, [1])
    return _core.transpose(y, [0, 2, 1]) if first else y


def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None, name=None):  # noqa: A002
    """tf.nn.convolution: 1-D or 2-D by the input's rank."""
    rank = len(_core.convert_to_tensor(input)._shape_tuple)
    if rank == 3:
        return conv1d(input, filters, strides or 1, padding, data_format or "NWC", dilations)
    if rank == 4:
        return conv2d(input, filters, strides or 1, padding, data_format or "NHWC", dilations)
    raise NotImplementedError(f"convolution: {rank - 2}-D convolutions are not supported (1-D and 2-D are)")


def atrous_conv2d(value, filters, rate, padding, name=None):
    return conv2d(value, filters, 1, padding, dilations=rate)


def _transposed_output(output_shape, what):
    if isinstance(output_shape, (_core.Tensor, _core.Variable)):
        output_shape = output_shape.numpy()
    return [int(v) for v in output_shape]


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC", dilations=None, name=None):  # noqa: A002
    """tf.nn.conv2d_transpose: the gradient of conv2d with respect to its input, for an input of
    output_shape; filters [kh, kw, out_channels, in_channels] as TF's."""
    from ._autodiff import GradientTape
    first = _channels_first(data_format, 4)
    x = _to_last(_core.convert_to_tensor(input), first)
    shape = _transposed_output(output_shape, "output_shape")
    if first:
        shape = [shape[0], shape[2], shape[3], shape[1]]
    z = _core.zeros(shape, dtype=x.dtype)
    with GradientTape() as tape:
        tape.watch(z)
        y = _core.conv2d(z, filters, _pair(_strides_from_format(strides, first), "strides"),
                         _padding(padding, "conv2d_transpose"), _pair(dilations, "dilations"))
        if tuple(y._shape_tuple) != tuple(x._shape_tuple):
            raise ValueError(f"conv2d_transpose: input shape {x._shape_tuple} does not fit output_shape {shape} "
                             f"(conv2d of output_shape gives {y._shape_tuple})")
        total = _core.reduce_sum(y * x)
    return _from_last(tape.gradient(total, z), first)


def conv1d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NWC", dilations=None, name=None):  # noqa: A002
    first = _channels_first(data_format, 3)
    x = _core.convert_to_tensor(input)
    if first:
        x = _core.transpose(x, [0, 2, 1])
    shape = _transposed_output(output_shape, "output_shape")
    if first:
        shape = [shape[0], shape[2], shape[1]]
    y = conv2d_transpose(_core.expand_dims(x, 1), _core.expand_dims(_core.convert_to_tensor(filters), 0),
                         [shape[0], 1, shape[1], shape[2]], (1, _pair(strides, "strides", 1)[0]), padding,
                         dilations=None if dilations is None else (1, _pair(dilations, "dilations", 1)[0]))
    y = _core.squeeze(y, [1])
    return _core.transpose(y, [0, 2, 1]) if first else y


def conv_transpose(input, filters, output_shape, strides, padding="SAME", data_format=None, dilations=None, name=None):  # noqa: A002
    rank = len(_core.convert_to_tensor(input)._shape_tuple)
    if rank == 3:
        return conv1d_transpose(input, filters, output_shape, strides, padding, data_format or "NWC", dilations)
    return conv2d_transpose(input, filters, output_shape, strides, padding, data_format or "NHWC", dilations)


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None, name=None):  # noqa: A002
    """tf.nn.depthwise_conv2d: filter [kh, kw, C, multiplier]; output channel c * multiplier + m."""
    first = _channels_first(data_format, 4)
    x = _to_last(_core.convert_to_tensor(input), first)
    w = _core.convert_to_tensor(filter)
    channels = x._shape_tuple[-1]
    if channels is None or w._shape_tuple[2] != channels:
        raise ValueError(f"depthwise_conv2d: filter {w._shape_tuple} must have the input's {channels} channels in axis 2")
    st, pad = _pair(_strides_from_format(strides, first), "strides"), _padding(padding, "depthwise_conv2d")
    dil = _pair(dilations, "dilations")
    parts = [_core.conv2d(x[..., c:c + 1], w[:, :, c:c + 1, :], st, pad, dil) for c in range(channels)]
    return _from_last(_core.concat(parts, -1), first)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, data_format=None, dilations=None, name=None):  # noqa: A002
    """A depthwise convolution followed by a 1x1 convolution."""
    first = _channels_first(data_format, 4)
    x = _to_last(_core.convert_to_tensor(input), first)
    d = depthwise_conv2d(x, depthwise_filter, _strides_from_format(strides, first), padding, dilations=dilations)
    return _from_last(_core.conv2d(d, pointwise_filter, (1, 1), "valid", (1, 1)), first)


def _pool2d(core, what, input, ksize, strides, padding, data_format):  # noqa: A002
    first = _channels_first(data_format, 4)
    x = _to_last(_core.convert_to_tensor(input), first)
    k = _pair(_strides_from_format(ksize, first), "ksize")
    s = _pair(_strides_from_format(strides, first), "strides")
    return _from_last(core(x, k, s, _padding(padding, what)), first)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool2d(_core.max_pool2d, "max_pool2d", input, ksize, strides, padding, data_format)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    return _pool2d(_core.avg_pool2d, "avg_pool2d", input, ksize, strides, padding, data_format)


def _pool1d(core, what, input, ksize, strides, padding, data_format):  # noqa: A002
    first = _channels_first(data_format, 3)
    x = _core.convert_to_tensor(input)
    if first:
        x = _core.transpose(x, [0, 2, 1])
    y = core(_core.expand_dims(x, 1), (1, _pair(ksize, "ksize", 1)[0]), (1, _pair(strides, "strides", 1)[0]), _padding(padding, what))
    y = _core.squeeze(y, [1])
    return _core.transpose(y, [0, 2, 1]) if first else y


def max_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d(_core.max_pool2d, "max_pool1d", input, ksize, strides, padding, data_format)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
    return _pool1d(_core.avg_pool2d, "avg_pool1d", input, ksize, strides, padding, data_format)


def max_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    rank = len(_core.convert_to_tensor(input)._shape_tuple)
    if rank == 3:
        return max_pool1d(input, ksize, strides, padding, data_format or "NWC")
    if rank == 4:
        return max_pool2d(input, ksize, strides, padding, data_format or "NHWC")
    raise NotImplementedError(f"max_pool: {rank - 2}-D pooling is not supported (1-D and 2-D are)")


def avg_pool(input, ksize, strides, padding, data_format=None, name=None):  # noqa: A002
    rank = len(_core.convert_to_tensor(input)._shape_tuple)
    if rank == 3:
        return avg_pool1d(input, ksize, strides, padding, data_format or "NWC")
    if rank == 4:
        return avg_pool2d(input, ksize, strides, padding, data_format or "NHWC")
    raise NotImplementedError(f"avg_pool: {rank - 2}-D pooling is not supported (1-D and 2-D are)")


def pool(input, window_shape, pooling_type, strides=None, padding="VALID", data_format=None, dilations=None, name=None):  # noqa: A002
    if dilations not in (None, 1, [1], [1, 1], (1, 1)):
        raise NotImplementedError("pool: dilations are not supported")
    fn = {"MAX": max_pool, "AVG": avg_pool}.get(str(pooling_type).upper())
    if fn is None:
        raise ValueError(f"pool: pooling_type must be 'MAX' or 'AVG', got {pooling_type!r}")
    return fn(input, window_shape, strides if strides is not None else 1, padding, data_format)


def space_to_depth(input, block_size, data_format="NHWC", name=None):  # noqa: A002
    """[N, H, W, C] -> [N, H/b, W/b, C*b*b], each b x b block's pixels into channels (TF's order)."""
    first = _channels_first(data_format, 4)
    x = _to_last(_core.convert_to_tensor(input), first)
    n, h, w, c = x._shape_tuple
    b = int(block_size)
    if b < 2 or h % b or w % b:
        raise ValueError(f"space_to_depth: block_size {b} must be >= 2 and divide height {h} and width {w}")
    y = _core.reshape(x, [-1, h // b, b, w // b, b, c])
    y = _core.transpose(y, [0, 1, 3, 2, 4, 5])
    return _from_last(_core.reshape(y, [-1, h // b, w // b, b * b * c]), first)


def depth_to_space(input, block_size, data_format="NHWC", name=None):  # noqa: A002
    """The inverse of space_to_depth."""
    first = _channels_first(data_format, 4)
    x = _to_last(_core.convert_to_tensor(input), first)
    n, h, w, c = x._shape_tuple
    b = int(block_size)
    if b < 2 or c % (b * b):
        raise ValueError(f"depth_to_space: block_size {b} must be >= 2 and block_size**2 must divide the channels {c}")
    y = _core.reshape(x, [-1, h, w, b, b, c // (b * b)])
    y = _core.transpose(y, [0, 1, 3, 2, 4, 5])
    return _from_last(_core.reshape(y, [-1, h * b, w * b, c // (b * b)]), first)
