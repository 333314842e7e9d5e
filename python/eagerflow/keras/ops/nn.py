"""keras.ops.nn: Keras 3's neural-network functions (activations, convolutions and pooling with Keras'
channels_last/channels_first, normalizations, losses, attention) on eagerflow's ops."""
import math as _pymath

import numpy as _np

import eagerflow as _ef
from ... import cast as _cast
from ...dtypes import as_dtype
from ._dtypes import shape_of, filled, float_dtype, standardize_dtype, tensor


def _f(x):
    return tensor(x, float_dtype(x))


def _c(x, v):
    return _cast(v, x.dtype)


def relu(x):
    t = tensor(x)  # integers stay integers, as in Keras
    return _ef.nn.relu(t) if t.dtype.is_floating else _ef.maximum(t, _c(t, 0))


def relu6(x):
    t = tensor(x)
    return _ef.nn.relu6(t) if t.dtype.is_floating else _ef.clip_by_value(t, _c(t, 0), _c(t, 6))


def sigmoid(x):
    return _ef.sigmoid(_f(x))


def sparse_sigmoid(x):
    t = _f(x)
    return _ef.where(_ef.less_equal(t, _c(t, -1.0)), _ef.zeros_like(t),
                     _ef.where(_ef.greater_equal(t, _c(t, 1.0)), _ef.ones_like(t), _c(t, 0.5) * (t + _c(t, 1.0))))


def softplus(x):
    return _ef.nn.softplus(_f(x))


def softsign(x):
    return _ef.nn.softsign(_f(x))


def soft_shrink(x, threshold=0.5):
    t = _f(x)
    th = _c(t, threshold)
    return _ef.where(_ef.greater(t, th), t - th, _ef.where(_ef.less(t, -th), t + th, _ef.zeros_like(t)))


def hard_shrink(x, threshold=0.5):
    t = _f(x)
    return _ef.where(_ef.greater(_ef.abs(t), _c(t, threshold)), t, _ef.zeros_like(t))


def sparse_plus(x):
    t = _f(x)
    return _ef.where(_ef.less_equal(t, _c(t, -1.0)), _ef.zeros_like(t),
                     _ef.where(_ef.greater_equal(t, _c(t, 1.0)), t, _ef.square(t + _c(t, 1.0)) / _c(t, 4.0)))


def silu(x):
    t = _f(x)
    return t * _ef.sigmoid(t)


swish = silu


def squareplus(x, b=4):
    t = _f(x)
    return (t + _ef.sqrt(_ef.square(t) + _c(t, b))) / _c(t, 2.0)


def log_sigmoid(x):
    return _ef.math.log_sigmoid(_f(x))


def leaky_relu(x, negative_slope=0.2):
    return _ef.nn.leaky_relu(_f(x), alpha=negative_slope)


def hard_sigmoid(x):
    t = _f(x)
    return _ef.nn.relu6(t + _c(t, 3.0)) / _c(t, 6.0)


def hard_silu(x):
    t = _f(x)
    return t * hard_sigmoid(t)


hard_swish = hard_silu


def hard_tanh(x):
    t = _f(x)
    return _ef.clip_by_value(t, _c(t, -1.0), _c(t, 1.0))


def tanh_shrink(x):
    t = _f(x)
    return t - _ef.tanh(t)


def threshold(x, threshold, default_value):  # noqa: A002 - Keras' name
    t = _f(x)
    return _ef.where(_ef.greater(t, _c(t, threshold)), t, filled(t, _c(t, default_value)))


def elu(x, alpha=1.0):
    t = _f(x)
    return _ef.where(_ef.greater(t, _c(t, 0)), t, _c(t, alpha) * _ef.math.expm1(_ef.minimum(t, _c(t, 0))))


def selu(x):
    return _ef.nn.selu(_f(x))


def celu(x, alpha=1.0):
    t = _f(x)
    a = _c(t, alpha)
    return _ef.maximum(t, _c(t, 0)) + a * _ef.math.expm1(_ef.minimum(t, _c(t, 0)) / a)


def gelu(x, approximate=True):
    return _ef.nn.gelu(_f(x), approximate=approximate)


def glu(x, axis=-1):
    t = _f(x)
    if t.shape[axis] is not None and t.shape[axis] % 2:
        raise ValueError(f"axis size must be divisible by 2. Received: x.shape={t.shape} with axis={axis}")
    a, b = _ef.split(t, 2, axis=axis)
    return a * _ef.sigmoid(b)


def softmax(x, axis=-1):
    t = _f(x)
    if isinstance(axis, (tuple, list)):
        m = _ef.reduce_max(t, axis=list(axis), keepdims=True)
        e = _ef.exp(t - m)
        return e / _ef.reduce_sum(e, axis=list(axis), keepdims=True)
    return _ef.nn.softmax(t, axis=axis)


def log_softmax(x, axis=-1):
    t = _f(x)
    if isinstance(axis, (tuple, list)):
        return t - _ef.reduce_logsumexp(t, axis=list(axis), keepdims=True)
    return _ef.nn.log_softmax(t, axis=axis)


def sparsemax(x, axis=-1):
    t = _f(x)
    z = _ef.sort(t, axis=axis, descending=True)
    k = _ef.cumsum(_ef.ones_like(z), axis=axis)
    cs = _ef.cumsum(z, axis=axis)
    support = _ef.greater(_c(t, 1.0) + k * z, cs)
    k_z = _ef.reduce_sum(_cast(support, t.dtype), axis=axis, keepdims=True)
    tau = (_ef.reduce_sum(_ef.where(support, z, _ef.zeros_like(z)), axis=axis, keepdims=True) - _c(t, 1.0)) / k_z
    return _ef.maximum(t - tau, _c(t, 0))


def _tuple(v, n):
    return [int(v)] * n if isinstance(v, int) else [int(a) for a in v]


def _to_last(x, data_format):
    df = data_format or "channels_last"
    if df == "channels_first":
        r = x.shape.rank
        return _ef.transpose(x, [0] + list(range(2, r)) + [1]), True
    return x, False


def _from_last(x, moved):
    if not moved:
        return x
    r = x.shape.rank
    return _ef.transpose(x, [0, r - 1] + list(range(1, r - 1)))


def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    x, moved = _to_last(_f(inputs), data_format)
    k = tensor(kernel, standardize_dtype(x.dtype))
    n = x.shape.rank - 2
    if k.shape[-2] != x.shape[-1]:
        # grouped convolution: Keras' kernel's in-channels are channels / groups
        groups = x.shape[-1] // k.shape[-2]
        xs = _ef.split(x, groups, axis=-1)
        ks = _ef.split(k, groups, axis=-1)
        out = _ef.concat([_convolution(a, b, _tuple(strides, n), padding.upper(), _tuple(dilation_rate, n))
                          for a, b in zip(xs, ks)], -1)
        return _from_last(out, moved)
    out = _convolution(x, k, _tuple(strides, n), padding.upper(), _tuple(dilation_rate, n))
    return _from_last(out, moved)


def _convolution(x, k, strides, padding, dilations):
    if len(strides) == 3:  # ef.nn.convolution takes 1-D and 2-D; 3-D has its own op
        return _ef.nn.conv3d(x, k, [1] + strides + [1], padding, dilations=[1] + dilations + [1])
    return _ef.nn.convolution(x, k, strides=strides, padding=padding, dilations=dilations)


def depthwise_conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    x, moved = _to_last(_f(inputs), data_format)
    k = tensor(kernel, standardize_dtype(x.dtype))
    n = x.shape.rank - 2
    if n == 1:
        out = _ef.nn.depthwise_conv2d(_ef.expand_dims(x, 1), _ef.expand_dims(k, 0), [1, 1] + _tuple(strides, 1) + [1],
                                      padding.upper(), dilations=[1] + _tuple(dilation_rate, 1))
        return _from_last(_ef.squeeze(out, [1]), moved)
    out = _ef.nn.depthwise_conv2d(x, k, [1] + _tuple(strides, 2) + [1], padding.upper(), dilations=_tuple(dilation_rate, 2))
    return _from_last(out, moved)


def separable_conv(inputs, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None,
                   dilation_rate=1):
    d = depthwise_conv(inputs, depthwise_kernel, strides, padding, data_format, dilation_rate)
    return conv(d, pointwise_kernel, 1, "valid", data_format, 1)


def conv_transpose(inputs, kernel, strides=1, padding="valid", output_padding=None, data_format=None, dilation_rate=1):
    x, moved = _to_last(_f(inputs), data_format)
    k = tensor(kernel, standardize_dtype(x.dtype))
    n = x.shape.rank - 2
    s, dr = _tuple(strides, n), _tuple(dilation_rate, n)
    ksz = list(k.shape[:n])
    op = [None] * n if output_padding is None else _tuple(output_padding, n)
    out_sp = []
    for i in range(n):
        L = x.shape[1 + i]
        ke = (ksz[i] - 1) * dr[i] + 1
        if op[i] is None:
            out_sp.append(L * s[i] if padding == "same" else L * s[i] + max(ke - s[i], 0))
        else:
            pad = (ke // 2) if padding == "same" else 0
            out_sp.append((L - 1) * s[i] + ke - 2 * pad + op[i])
    batch = x.shape[0] if x.shape[0] is not None else _ef.cast(shape_of(x)[0], _ef.int32)
    out_shape = [batch] + out_sp + [k.shape[-2]] if x.shape[0] is not None else \
        _ef.stack([batch] + [_ef.constant(v, dtype=_ef.int32) for v in out_sp + [k.shape[-2]]])
    out = _ef.nn.conv_transpose(x, k, out_shape, strides=s, padding=padding.upper(), dilations=dr)
    return _from_last(out, moved)


def _pool(kind):
    def op(inputs, pool_size, strides=None, padding="valid", data_format=None):
        x, moved = _to_last(_f(inputs), data_format)
        n = x.shape.rank - 2
        ps = _tuple(pool_size, n)
        st = ps if strides is None else _tuple(strides, n)
        out = _ef.nn.pool(x, ps, kind, strides=st, padding=padding.upper())
        return _from_last(out, moved)
    return op


max_pool = _pool("MAX")
average_pool = _pool("AVG")


def _adaptive(reduce):
    def op(inputs, output_size, data_format=None):
        x, moved = _to_last(_f(inputs), data_format)
        n = x.shape.rank - 2
        osz = _tuple(output_size, n)
        for ax in range(n):
            L = x.shape[1 + ax]
            parts = []
            for i in range(osz[ax]):
                lo, hi = (i * L) // osz[ax], -((-(i + 1) * L) // osz[ax])
                sl = [slice(None)] * x.shape.rank
                sl[1 + ax] = slice(lo, hi)
                parts.append(reduce(x[tuple(sl)], axis=1 + ax, keepdims=True))
            x = _ef.concat(parts, 1 + ax)
        return _from_last(x, moved)
    return op


adaptive_average_pool = _adaptive(_ef.reduce_mean)
adaptive_max_pool = _adaptive(_ef.reduce_max)


def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
    t = _f(x)
    ax = axis % t.shape.rank
    shape = [-1 if i == ax else 1 for i in range(t.shape.rank)]

    def r(v):
        return None if v is None else _ef.reshape(tensor(v, standardize_dtype(t.dtype)), shape)
    out = (t - r(mean)) * _ef.math.rsqrt(r(variance) + _c(t, epsilon))
    if scale is not None:
        out = out * r(scale)
    if offset is not None:
        out = out + r(offset)
    return out


def moments(x, axes, keepdims=False, synchronized=False):
    t = _f(x)
    acc = t if t.dtype not in (_ef.float16, _ef.bfloat16) else _cast(t, _ef.float32)
    m = _ef.reduce_mean(acc, axis=list(axes), keepdims=True)
    v = _ef.reduce_mean(_ef.square(acc - _ef.stop_gradient(m)), axis=list(axes), keepdims=True)
    if not keepdims:
        m, v = _ef.squeeze(m, list(axes)), _ef.squeeze(v, list(axes))
    return _cast(m, t.dtype), _cast(v, t.dtype)


def layer_normalization(x, gamma=None, beta=None, axis=-1, epsilon=None, **kwargs):
    t = _f(x)
    out_dt = t.dtype
    if out_dt in (_ef.float16, _ef.bfloat16):
        t = _cast(t, _ef.float32)  # Keras normalizes half precision in float32
    eps = _epsilon() if epsilon is None else epsilon
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    m, v = moments(t, axes, keepdims=True)
    out = (t - m) * _ef.math.rsqrt(v + _c(t, eps))
    if gamma is not None:
        out = out * tensor(gamma, standardize_dtype(t.dtype))
    if beta is not None:
        out = out + tensor(beta, standardize_dtype(t.dtype))
    return _cast(out, out_dt)


def _epsilon():
    from .. import config
    return config.epsilon()


def rms_normalization(x, scale=None, axis=-1, epsilon=None):
    t = _f(x)
    eps = _epsilon() if epsilon is None else epsilon
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    out = t * _ef.math.rsqrt(_ef.reduce_mean(_ef.square(t), axis=axes, keepdims=True) + _c(t, eps))
    if scale is not None:
        out = out * tensor(scale, standardize_dtype(t.dtype))
    return out


def normalize(x, axis=-1, order=2, epsilon=None):
    t = _f(x)
    eps = _epsilon() if epsilon is None else epsilon
    if order == 2:
        sq = _ef.reduce_sum(_ef.square(t), axis=axis, keepdims=True)
        return t * _ef.math.rsqrt(_ef.maximum(sq, _c(t, eps * eps)))
    n = _ef.reduce_sum(_ef.pow(_ef.abs(t), _c(t, order)), axis=axis, keepdims=True) ** _c(t, 1.0 / order)
    return t / _ef.maximum(n, _c(t, eps))


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    if sparse:
        raise ValueError("sparse=True: eagerflow's one_hot gives dense tensors")
    t = tensor(x, "int32")
    out = _ef.one_hot(t, int(num_classes), dtype=as_dtype(standardize_dtype(dtype)))
    if axis != -1 and axis != out.shape.rank - 1:
        out = _ef.transpose(out, _moved(out.shape.rank, axis))
    return out


def _moved(rank, axis):
    order = list(range(rank - 1))
    order.insert(axis % rank, rank - 1)
    return order


def multi_hot(inputs, num_classes=None, axis=-1, dtype=None, sparse=False, **kwargs):
    if num_classes is None:
        num_classes = kwargs.pop("num_tokens", None)
    if num_classes is None:
        raise ValueError("Argument `num_classes` must be specified.")
    t = tensor(inputs, "int32")
    if t.shape.rank == 1:
        t, squeeze = _ef.expand_dims(t, 0), True
    else:
        squeeze = False
    oh = _ef.one_hot(t, int(num_classes), dtype=_ef.float32)
    out = _ef.reduce_max(oh, axis=-2)
    out = _cast(out, as_dtype(standardize_dtype(dtype)))
    if squeeze:
        out = _ef.squeeze(out, [0])
    if axis != -1:
        out = _ef.transpose(out, _moved(out.shape.rank, axis))
    return out


def _clip_prob(p):
    eps = 1e-7
    return _ef.clip_by_value(p, _c(p, eps), _c(p, 1.0 - eps))


def binary_crossentropy(target, output, from_logits=False):
    o = _f(output)
    y = tensor(target, standardize_dtype(o.dtype))
    if list(y.shape) != list(o.shape) and None not in y.shape and None not in o.shape:
        raise ValueError(f"Arguments `target` and `output` must have the same shape. Received: target.shape={y.shape}, "
                         f"output.shape={o.shape}")
    if from_logits:
        return _ef.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=o)
    o = _clip_prob(o)
    return -(y * _ef.math.log(o) + (_c(o, 1.0) - y) * _ef.math.log(_c(o, 1.0) - o))


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    o = _f(output)
    y = tensor(target, standardize_dtype(o.dtype))
    if from_logits:
        return -_ef.reduce_sum(y * _ef.nn.log_softmax(o, axis=axis), axis=axis)
    o = o / _ef.reduce_sum(o, axis=axis, keepdims=True)
    return -_ef.reduce_sum(y * _ef.math.log(_clip_prob(o)), axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    o = _f(output)
    y = tensor(target, "int32")
    if y.shape.rank == o.shape.rank and y.shape[-1] == 1:
        y = _ef.squeeze(y, [-1])
    oh = _ef.one_hot(y, o.shape[axis], dtype=o.dtype)
    return categorical_crossentropy(oh, o, from_logits=from_logits, axis=axis)


def ctc_loss(target, output, target_length, output_length, mask_index=0):
    o = _f(output)
    return _ef.nn.ctc_loss(labels=tensor(target, "int32"), logits=o, label_length=tensor(target_length, "int32"),
                           logit_length=tensor(output_length, "int32"), logits_time_major=False,
                           blank_index=mask_index)


def dot_product_attention(query, key, value, bias=None, mask=None, scale=None, is_causal=False, flash_attention=None,
                          attn_logits_soft_cap=None):
    q = _f(query)
    dt = standardize_dtype(q.dtype)
    k, v = tensor(key, dt), tensor(value, dt)
    if q.shape.rank != 4:
        raise ValueError(f"`dot_product_attention` only supports 4D inputs (B, T, N, H). Received: query.shape={q.shape}")
    if flash_attention:
        raise ValueError("Flash attention is not supported by eagerflow's dot_product_attention")
    h = q.shape[-1]
    s = 1.0 / _pymath.sqrt(h) if scale is None else scale
    # (B, T, N, H) -> (B, N, T, H); grouped-query heads repeat the key/value heads
    qt, kt, vt = (_ef.transpose(a, [0, 2, 1, 3]) for a in (q, k, v))
    if kt.shape[1] != qt.shape[1]:
        rep = qt.shape[1] // kt.shape[1]
        kt, vt = _ef.repeat(kt, rep, axis=1), _ef.repeat(vt, rep, axis=1)
    logits = _ef.matmul(qt, kt, transpose_b=True) * _c(qt, s)
    if attn_logits_soft_cap is not None:
        cap = _c(qt, attn_logits_soft_cap)
        logits = _ef.tanh(logits / cap) * cap
    if bias is not None:
        logits = logits + tensor(bias, dt)
    keep = None
    if mask is not None:
        keep = tensor(mask, "bool")
    if is_causal:
        tq, tk = logits.shape[-2], logits.shape[-1]
        causal = _ef.constant(_np.tril(_np.ones([tq, tk], bool)))
        keep = causal if keep is None else _ef.logical_and(keep, causal)
    if keep is not None:
        keep = _ef.broadcast_to(keep, shape_of(logits))
        logits = _ef.where(keep, logits, filled(logits, _c(logits, _np.finfo(_np.float32).min
                                                                         if dt != "float16" else -65504.0)))
    probs = _ef.nn.softmax(logits, axis=-1)
    return _ef.transpose(_ef.matmul(probs, vt), [0, 2, 1, 3])


def depth_to_space(x, block_size, data_format="channels_last"):
    t = tensor(x)
    return _ef.nn.depth_to_space(t, block_size, data_format="NHWC" if data_format == "channels_last" else "NCHW")


def space_to_depth(x, block_size, data_format="channels_last"):
    t = tensor(x)
    return _ef.nn.space_to_depth(t, block_size, data_format="NHWC" if data_format == "channels_last" else "NCHW")


def psnr(x1, x2, max_val):
    a = _f(x1)
    b = tensor(x2, standardize_dtype(a.dtype))
    if list(a.shape) != list(b.shape):
        raise ValueError(f"Input shapes {a.shape} and {b.shape} must match for PSNR calculation.")
    mse = _ef.reduce_mean(_ef.square(a - b))
    return _c(a, 20.0) * _ef.math.log(_c(a, max_val)) / _c(a, _pymath.log(10.0)) - \
        _c(a, 10.0) * _ef.math.log(mse) / _c(a, _pymath.log(10.0))


def unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's unfold (im2col) on NCHW input: (N, C*kh*kw, L), as keras.ops.unfold."""
    t = tensor(x)
    kh, kw = _tuple(kernel_size, 2)
    dh, dw = _tuple(dilation, 2)
    ph, pw = _tuple(padding, 2)
    sh, sw = _tuple(stride, 2)
    n, c, hh, ww = t.shape
    t = _ef.pad(t, [[0, 0], [0, 0], [ph, ph], [pw, pw]])
    oh = (hh + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (ww + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    cols = []
    for i in range(kh):
        for j in range(kw):
            cols.append(t[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw])
    out = _ef.stack(cols, axis=2)  # N, C, kh*kw, oh, ow
    return _ef.reshape(out, [-1 if n is None else n, c * kh * kw, oh * ow])


def fold(x, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """PyTorch's fold (col2im), the adjoint of unfold: overlapping patches are summed."""
    t = tensor(x)
    kh, kw = _tuple(kernel_size, 2)
    dh, dw = _tuple(dilation, 2)
    ph, pw = _tuple(padding, 2)
    sh, sw = _tuple(stride, 2)
    hh, ww = _tuple(output_size, 2)
    n, ckk, _ = t.shape
    c = ckk // (kh * kw)
    oh = (hh + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (ww + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    # scatter every column entry to its padded-image position, summing overlaps
    idx = _np.zeros([kh * kw, oh * ow], _np.int64)
    for i in range(kh):
        for j in range(kw):
            rows = (_np.arange(oh) * sh + i * dh)[:, None]
            colsj = (_np.arange(ow) * sw + j * dw)[None, :]
            idx[i * kw + j] = (rows * (ww + 2 * pw) + colsj).reshape(-1)
    hp, wp = hh + 2 * ph, ww + 2 * pw
    b = t.shape[0]
    v = _ef.reshape(t, [b * c, kh * kw * oh * ow])
    v = _ef.transpose(v)
    seg = _ef.constant(_np.tile(idx.reshape(-1), 1).astype(_np.int32))
    summed = _ef.math.unsorted_segment_sum(v, seg, hp * wp)
    img = _ef.reshape(_ef.transpose(summed), [b, c, hp, wp])
    return img[:, :, ph:ph + hh, pw:pw + ww]


def ctc_decode(inputs, sequence_lengths, strategy="greedy", beam_width=100, top_paths=1, merge_repeated=True,
               mask_index=0):
    x = _f(inputs)
    lengths = tensor(sequence_lengths, "int32")
    logits = _ef.transpose(x, [1, 0, 2])
    if strategy == "greedy":
        decoded, neg = _ef.nn.ctc_greedy_decoder(logits, lengths, merge_repeated=merge_repeated, blank_index=mask_index)
    elif strategy == "beam_search":
        decoded, neg = _ef.nn.ctc_beam_search_decoder(logits, lengths, beam_width=beam_width, top_paths=top_paths)
    else:
        raise ValueError(f"Invalid strategy {strategy}. Supported values are 'greedy' and 'beam_search'.")
    batch, t_max = x.shape[0], x.shape[1]
    dense = [_ef.sparse.to_dense(_ef.sparse.reset_shape(d, [batch, t_max]) if hasattr(_ef.sparse, "reset_shape") else d,
                                 default_value=-1) for d in decoded]
    dense = [_ef.pad(d, [[0, 0], [0, t_max - d.shape[1]]], constant_values=-1) if d.shape[1] is not None else d
             for d in dense]
    return _ef.stack([_cast(d, _ef.int32) for d in dense]), neg


def polar(abs_, angle):
    from .core import polar as _polar
    return _polar(abs_, angle)
