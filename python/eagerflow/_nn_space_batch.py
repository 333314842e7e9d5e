"""tf.nn.space_to_batch (TF 2's space_to_batch_nd) and with_space_to_batch, as pads, reshapes
and transposes: a block of spatial positions becomes the batch, so an op run on the result
sees every block_shape-th position (a dilated convolution as a plain one)."""
import numpy as _np

from . import _core
from . import errors as _errors

# batch_to_space and required_space_to_batch_paddings are TF's top-level tf.batch_to_space and
# tf.required_space_to_batch_paddings; space_to_batch is also tf.space_to_batch_nd.
__all__ = ["space_to_batch", "with_space_to_batch", "batch_to_space", "required_space_to_batch_paddings"]


def _ints(v, what):
    if isinstance(v, (_core.Tensor, _core.Variable)):
        v = v.numpy()
    return [int(a) for a in _np.asarray(v).ravel()]


def _pairs(v, m, what):
    if isinstance(v, (_core.Tensor, _core.Variable)):
        v = v.numpy()
    a = _np.asarray(v, dtype=_np.int64)
    if a.shape != (m, 2):
        raise ValueError(f"{what}: paddings must be [{m}, 2] for a block_shape of {m} entries, got shape {a.shape}")
    return a.tolist()


def space_to_batch(input, block_shape, paddings, name=None):  # noqa: A002
    """[B, d1, ..., dM, rest] -> [B * prod(block), (d_i + pads_i) / block_i ..., rest]; the batch
    index is (offsets within the block, row-major) * B + b, as TF's."""
    x = _core.convert_to_tensor(input)
    block = _ints(block_shape, "block_shape")
    m = len(block)
    pads = _pairs(paddings, m, "space_to_batch")
    shape = list(x._shape_tuple)
    if m < 1 or len(shape) < m + 1:
        raise ValueError(f"space_to_batch: input of rank {len(shape)} needs more dims than block_shape's {m}")
    if any(b < 1 for b in block) or any(p < 0 for pair in pads for p in pair):
        raise _errors.InvalidArgumentError(f"space_to_batch: block_shape {block} must be >= 1 and paddings {pads} >= 0")
    spatial = shape[1:m + 1]
    if any(s is None for s in spatial + shape[m + 1:]):
        raise ValueError(f"space_to_batch: the spatial and remaining dims must be known, got shape {tuple(shape)}")
    padded = [s + p[0] + p[1] for s, p in zip(spatial, pads)]
    for s, b in zip(padded, block):
        if s % b:
            raise _errors.InvalidArgumentError(f"space_to_batch: padded spatial size {s} is not divisible by block {b} "
                                               f"(shape {tuple(shape)}, paddings {pads}, block_shape {block})")
    rest = shape[m + 1:]
    if any(p for pair in pads for p in pair):
        x = _core.pad(x, [[0, 0]] + pads + [[0, 0]] * len(rest))
    split = [-1]
    for s, b in zip(padded, block):
        split += [s // b, b]
    y = _core.reshape(x, split + rest)
    perm = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)] + list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    y = _core.transpose(y, perm)
    return _core.reshape(y, [-1] + [s // b for s, b in zip(padded, block)] + rest)


def batch_to_space(input, block_shape, crops, name=None):  # noqa: A002
    """The inverse of space_to_batch: [prod(block) * B, d_1, ..., d_M, rest] ->
    [B, d_i * block_i - crops_i[0] - crops_i[1], ..., rest]."""
    x = _core.convert_to_tensor(input)
    block = _ints(block_shape, "block_shape")
    m = len(block)
    crops = _pairs(crops, m, "batch_to_space")
    shape = list(x._shape_tuple)
    if m < 1 or len(shape) < m + 1 or any(v is None for v in shape[1:]):
        raise ValueError(f"batch_to_space: input of shape {tuple(shape)} needs {m} known spatial dims after the batch")
    if any(b < 1 for b in block) or any(c < 0 for pair in crops for c in pair):
        raise _errors.InvalidArgumentError(f"batch_to_space: block_shape {block} must be >= 1 and crops {crops} >= 0")
    blocks = int(_np.prod(block))
    if shape[0] is not None and shape[0] % blocks:
        raise _errors.InvalidArgumentError(f"batch_to_space: input batch dimension {shape[0]} is not divisible by the "
                                           f"product of block_shape {block}")
    for s, b, (c0, c1) in zip(shape[1:m + 1], block, crops):
        if c0 + c1 > s * b:
            raise _errors.InvalidArgumentError(f"batch_to_space: crops {crops} are larger than the output {s * b}")
    return _batch_to_space(x, block, crops)


def required_space_to_batch_paddings(input_shape, block_shape, base_paddings=None, name=None):
    """(paddings, crops), int32 [M, 2]: base_paddings plus the least extra at the end that makes
    each padded size a multiple of its block; crops remove that extra again."""
    size = _ints(input_shape, "input_shape")
    block = _ints(block_shape, "block_shape")
    if len(size) != len(block):
        raise ValueError(f"required_space_to_batch_paddings: input_shape {size} and block_shape {block} differ in length")
    base = [[0, 0]] * len(block) if base_paddings is None else _pairs(base_paddings, len(block), "required_space_to_batch_paddings")
    extra = [(b - (s + p0 + p1) % b) % b for s, b, (p0, p1) in zip(size, block, base)]
    paddings = [[p0, p1 + e] for (p0, p1), e in zip(base, extra)]
    crops = [[0, e] for e in extra]
    return (_core.constant(_np.asarray(paddings, _np.int32).reshape(-1, 2)),
            _core.constant(_np.asarray(crops, _np.int32).reshape(-1, 2)))


def _batch_to_space(x, block, crops):
    shape = list(x._shape_tuple)
    m = len(block)
    spatial, rest = shape[1:m + 1], shape[m + 1:]
    y = _core.reshape(x, block + [-1] + spatial + rest)
    perm = [m]
    for i in range(m):
        perm += [m + 1 + i, i]
    perm += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    y = _core.reshape(_core.transpose(y, perm), [-1] + [s * b for s, b in zip(spatial, block)] + rest)
    if any(c for pair in crops for c in pair):
        y = y[(slice(None),) + tuple(slice(c0, s * b - c1) for s, b, (c0, c1) in zip(spatial, block, crops))]
    return y


def with_space_to_batch(input, dilation_rate, padding, op, filter_shape=None, spatial_dims=None, data_format=None):  # noqa: A002
    """op(space_to_batch(input), num_spatial_dims, "VALID") moved back to space: op sees the input
    at the stride of dilation_rate (TF's required padding: SAME pads for the dilated filter)."""
    x = _core.convert_to_tensor(input)
    rate = _ints(dilation_rate, "dilation_rate")
    m = len(rate)
    if any(r < 1 for r in rate):
        raise ValueError(f"with_space_to_batch: dilation_rate must be positive, got {rate}")
    if spatial_dims is None:
        start = 2 if data_format is not None and data_format.startswith("NC") else 1
        spatial_dims = list(range(start, start + m))
    spatial_dims = [int(d) for d in spatial_dims]
    if len(spatial_dims) != m or spatial_dims != sorted(set(spatial_dims)) or spatial_dims[0] < 1:
        raise ValueError(f"with_space_to_batch: spatial_dims must be {m} ascending dims after the batch, got {spatial_dims}")
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"with_space_to_batch: padding must be 'SAME' or 'VALID', got {padding!r}")
    if all(r == 1 for r in rate):
        return op(x, m, padding)
    if padding == "SAME":
        if filter_shape is None:
            raise ValueError("with_space_to_batch: filter_shape must be given for padding='SAME'")
        fs = _ints(filter_shape, "filter_shape")
        extra = [(f - 1) * r for f, r in zip(fs, rate)]
        base = [[e // 2, e - e // 2] for e in extra]
    else:
        base = [[0, 0]] * m
    # space_to_batch blocks the dims right after the batch: the dims between that are not
    # spatial take a block of 1.
    last = spatial_dims[-1]
    block, pads, crops = [], [], []
    shape = x._shape_tuple
    for d in range(1, last + 1):
        if d in spatial_dims:
            i = spatial_dims.index(d)
            full = shape[d] + base[i][0] + base[i][1]
            extra_end = (rate[i] - full % rate[i]) % rate[i]
            block.append(rate[i])
            pads.append([base[i][0], base[i][1] + extra_end])
            crops.append([0, extra_end])
        else:
            block.append(1)
            pads.append([0, 0])
            crops.append([0, 0])
    y = op(space_to_batch(x, block, pads), m, "VALID")
    return _batch_to_space(y, block, crops)
