"""keras.ops.image: Keras 3's image functions (channels_last by default, channels_first on request)
on ef.image."""
import numpy as _np

import eagerflow as _ef
from ... import cast as _cast
from ._dtypes import filled, float_dtype, standardize_dtype, tensor


def _last(images, data_format):
    t = tensor(images)
    if data_format == "channels_first":
        r = t.shape.rank
        return _ef.transpose(t, list(range(r - 3)) + [r - 2, r - 1, r - 3]), True
    return t, False


def _back(t, moved):
    if not moved:
        return t
    r = t.shape.rank
    return _ef.transpose(t, list(range(r - 3)) + [r - 1, r - 3, r - 2])


def _check_rank(t, name):
    if t.shape.rank not in (3, 4):
        raise ValueError(f"Invalid images rank: expected rank 3 (single image) or rank 4 (batch of images). "
                         f"Received input with shape: images.shape={t.shape}")


def rgb_to_grayscale(images, data_format=None):
    t, moved = _last(images, data_format)
    _check_rank(t, "rgb_to_grayscale")
    f = tensor(t, float_dtype(t))
    w = _ef.constant([0.2989, 0.5870, 0.1140], dtype=f.dtype)
    out = _ef.reduce_sum(f * w, axis=-1, keepdims=True)
    return _back(_cast(out, t.dtype) if not t.dtype.is_floating else out, moved)


def rgb_to_hsv(images, data_format=None):
    t, moved = _last(images, data_format)
    _check_rank(t, "rgb_to_hsv")
    if not t.dtype.is_floating:
        raise ValueError(f"Invalid images dtype: expected float dtype. Received: images.dtype={standardize_dtype(t.dtype)}")
    return _back(_ef.image.rgb_to_hsv(t), moved)


def hsv_to_rgb(images, data_format=None):
    t, moved = _last(images, data_format)
    _check_rank(t, "hsv_to_rgb")
    if not t.dtype.is_floating:
        raise ValueError(f"Invalid images dtype: expected float dtype. Received: images.dtype={standardize_dtype(t.dtype)}")
    return _back(_ef.image.hsv_to_rgb(t), moved)


def resize(images, size, interpolation="bilinear", antialias=False, crop_to_aspect_ratio=False,
           pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0, data_format=None):
    t, moved = _last(images, data_format)
    _check_rank(t, "resize")
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers. Received: size={size}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("Only one of `crop_to_aspect_ratio` & `pad_to_aspect_ratio` can be `True`.")
    th, tw = int(size[0]), int(size[1])
    if crop_to_aspect_ratio:
        h, w = t.shape[-3], t.shape[-2]
        ch = min(h, int(round(w * th / tw)))
        cw = min(w, int(round(h * tw / th)))
        oh, ow = (h - ch) // 2, (w - cw) // 2
        t = t[..., oh:oh + ch, ow:ow + cw, :]
    elif pad_to_aspect_ratio:
        h, w = t.shape[-3], t.shape[-2]
        ph = max(h, int(round(w * th / tw)))
        pw = max(w, int(round(h * tw / th)))
        top, left = (ph - h) // 2, (pw - w) // 2
        pads = [[0, 0]] * (t.shape.rank - 3) + [[top, ph - h - top], [left, pw - w - left], [0, 0]]
        t = _ef.pad(t, pads, constant_values=fill_value)
    method = {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic", "lanczos3": "lanczos3",
              "lanczos5": "lanczos5", "area": "area"}.get(interpolation)
    if method is None:
        raise ValueError(f"Invalid value for argument `interpolation`. Received: interpolation={interpolation}")
    out = _ef.image.resize(t, [th, tw], method=method, antialias=antialias)
    if t.dtype.is_floating and out.dtype != t.dtype:
        out = _cast(out, t.dtype)
    elif not t.dtype.is_floating and method != "nearest":
        out = _ef.saturate_cast(_ef.round(out), t.dtype)  # bicubic overshoots: clip, as Keras, not wrap
    return _back(out, moved)


def pad_images(images, top_padding=None, left_padding=None, bottom_padding=None, right_padding=None,
               target_height=None, target_width=None, data_format=None):
    t, moved = _last(images, data_format)
    _check_rank(t, "pad_images")
    h, w = t.shape[-3], t.shape[-2]
    top, bottom = _resolve(top_padding, bottom_padding, target_height, h, "top_padding", "bottom_padding",
                           "target_height")
    left, right = _resolve(left_padding, right_padding, target_width, w, "left_padding", "right_padding",
                           "target_width")
    pads = [[0, 0]] * (t.shape.rank - 3) + [[top, bottom], [left, right], [0, 0]]
    return _back(_ef.pad(t, pads), moved)


def _resolve(a, b, target, size, na, nb, nt):
    if [a, b, target].count(None) != 1:
        raise ValueError(f"Must specify exactly two of {na}, {nb}, {nt}. Received: {na}={a}, {nb}={b}, {nt}={target}")
    if a is None:
        a = target - b - size
    if b is None:
        b = target - a - size
    if a < 0 or b < 0:
        raise ValueError(f"{na} and {nb} must be >= 0 (the target is smaller than the image)")
    return int(a), int(b)


def crop_images(images, top_cropping=None, left_cropping=None, bottom_cropping=None, right_cropping=None,
                target_height=None, target_width=None, data_format=None):
    t, moved = _last(images, data_format)
    _check_rank(t, "crop_images")
    h, w = t.shape[-3], t.shape[-2]
    if target_height is None:
        target_height = h - (top_cropping or 0) - (bottom_cropping or 0)
    if target_width is None:
        target_width = w - (left_cropping or 0) - (right_cropping or 0)
    top = top_cropping if top_cropping is not None else h - target_height - (bottom_cropping or 0)
    left = left_cropping if left_cropping is not None else w - target_width - (right_cropping or 0)
    if top < 0 or left < 0 or target_height <= 0 or target_width <= 0:
        raise ValueError("crop_images: the cropping is larger than the image")
    return _back(t[..., top:top + target_height, left:left + target_width, :], moved)


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    t, moved = _last(images, data_format)
    if isinstance(size, int):
        size = (size, size)
    strides = size if strides is None else ((strides, strides) if isinstance(strides, int) else strides)
    rates = (dilation_rate, dilation_rate) if isinstance(dilation_rate, int) else dilation_rate
    single = t.shape.rank == 3
    if single:
        t = _ef.expand_dims(t, 0)
    out = _ef.image.extract_patches(t, [1, size[0], size[1], 1], [1, strides[0], strides[1], 1],
                                    [1, rates[0], rates[1], 1], padding.upper())
    if single:
        out = _ef.squeeze(out, [0])
    return _back(out, moved)


def sobel_edges(images, data_format=None):
    """Keras' TensorFlow backend: tf.image.sobel_edges, (N, H, W, C, 2) with (dy, dx) last
    ((N, C, H, W, 2) for channels_first)."""
    t = tensor(images, float_dtype(images))
    if data_format == "channels_first":
        t = _ef.transpose(t, [0, 2, 3, 1])
    e = _ef.image.sobel_edges(t)
    if data_format == "channels_first":
        e = _ef.transpose(e, [0, 3, 1, 2, 4])
    return e


def gaussian_blur(images, kernel_size=(3, 3), sigma=(1.0, 1.0), data_format=None):
    t, moved = _last(images, data_format)
    f = tensor(t, float_dtype(t))
    single = f.shape.rank == 3
    if single:
        f = _ef.expand_dims(f, 0)
    c = f.shape[-1]

    def k1(n, s):
        x = _np.arange(n, dtype=_np.float64) - (n - 1) / 2.0
        g = _np.exp(-(x ** 2) / (2.0 * s * s))
        return g / g.sum()
    s0, s1 = int(kernel_size[0]), int(kernel_size[1])
    # Keras builds outer(k(size[1], sigma[1]), k(size[0], sigma[0])) and reshapes it to (size[0], size[1])
    k2 = _np.outer(k1(s1, float(sigma[1])), k1(s0, float(sigma[0]))).reshape(s0, s1)
    k2 = k2[:, :, None, None] * _np.ones([1, 1, c, 1])
    out = _ef.nn.depthwise_conv2d(f, _ef.constant(k2.astype(f.dtype.as_numpy_dtype)), [1, 1, 1, 1], "SAME")
    if single:
        out = _ef.squeeze(out, [0])
    return _back(out, moved)


def ssim(image1, image2, max_val=1.0, filter_size=11, filter_sigma=1.5, k1=0.01, k2=0.03, data_format=None):
    a, moved = _last(image1, data_format)
    b, _ = _last(image2, data_format)
    a = tensor(a, float_dtype(a))
    b = tensor(b, standardize_dtype(a.dtype))
    return _ef.image.ssim(a, b, max_val, filter_size=filter_size, filter_sigma=filter_sigma, k1=k1, k2=k2)


def affine_transform(images, transform, interpolation="bilinear", fill_mode="constant", fill_value=0,
                     data_format=None):
    """Keras' affine_transform: each row [a0, a1, a2, b0, b1, b2, c0, c1] maps output (x, y) to input
    ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1; bilinear or nearest, constant fill."""
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(f"Invalid value for argument `interpolation`. Received: interpolation={interpolation}")
    if fill_mode != "constant":
        raise ValueError(f"fill_mode={fill_mode!r}: eagerflow's affine_transform fills with a constant only")
    t, moved = _last(images, data_format)
    f = tensor(t, float_dtype(t))
    single = f.shape.rank == 3
    if single:
        f = _ef.expand_dims(f, 0)
    tr = tensor(transform, standardize_dtype(f.dtype))
    if tr.shape.rank == 1:
        tr = _ef.expand_dims(tr, 0)
    n, h, w, c = f.shape
    ys, xs = _np.meshgrid(_np.arange(h), _np.arange(w), indexing="ij")
    xs = _ef.constant(xs.astype(f.dtype.as_numpy_dtype))[None]
    ys = _ef.constant(ys.astype(f.dtype.as_numpy_dtype))[None]
    col = [tr[:, i][:, None, None] for i in range(8)]
    k = col[6] * xs + col[7] * ys + 1.0
    sx = (col[0] * xs + col[1] * ys + col[2]) / k
    sy = (col[3] * xs + col[4] * ys + col[5]) / k
    flat = _ef.reshape(f, [-1, c])
    base = _ef.reshape(_ef.range(n) * (h * w), [-1, 1, 1])

    def sample(yi, xi):
        inside = _ef.logical_and(_ef.logical_and(yi >= 0, yi <= h - 1), _ef.logical_and(xi >= 0, xi <= w - 1))
        yc = _ef.clip_by_value(yi, 0, h - 1)
        xc = _ef.clip_by_value(xi, 0, w - 1)
        v = _ef.gather(flat, base + yc * w + xc)
        return _ef.where(_ef.expand_dims(inside, -1), v, filled(v, fill_value))
    if interpolation == "nearest":
        # TF's nearest rounds halves away from zero (std::round), not to even
        def rnd(v):
            return _cast(_ef.sign(v) * _ef.floor(_ef.abs(v) + 0.5), _ef.int32)
        out = sample(rnd(sy), rnd(sx))
    else:
        y0, x0 = _ef.floor(sy), _ef.floor(sx)
        wy, wx = _ef.expand_dims(sy - y0, -1), _ef.expand_dims(sx - x0, -1)
        y0i, x0i = _cast(y0, _ef.int32), _cast(x0, _ef.int32)
        out = (sample(y0i, x0i) * (1 - wy) * (1 - wx) + sample(y0i, x0i + 1) * (1 - wy) * wx
               + sample(y0i + 1, x0i) * wy * (1 - wx) + sample(y0i + 1, x0i + 1) * wy * wx)
    if single:
        out = _ef.squeeze(out, [0])
    return _back(out, moved)



def _homography(start, end):
    """The 8 projective parameters mapping each output point (end) to its input point (start), as
    Keras' compute_homography_matrix: one 8x8 linear solve per image."""
    rows, rhs = [], []
    zero, one = _ef.zeros_like(end[:, 0, 0]), _ef.ones_like(end[:, 0, 0])
    for i in range(4):
        ex, ey, sx, sy = end[:, i, 0], end[:, i, 1], start[:, i, 0], start[:, i, 1]
        rows.append(_ef.stack([ex, ey, one, zero, zero, zero, -sx * ex, -sx * ey], -1))
        rows.append(_ef.stack([zero, zero, zero, ex, ey, one, -sy * ex, -sy * ey], -1))
        rhs += [sx, sy]
    a = _ef.stack(rows, 1)
    b = _ef.expand_dims(_ef.stack(rhs, -1), -1)
    return _ef.squeeze(_ef.linalg.solve(a, b), [-1])


def perspective_transform(images, start_points, end_points, interpolation="bilinear", fill_value=0, data_format=None):
    t = tensor(images)
    if t.shape.rank not in (3, 4):
        _check_rank(t, "perspective_transform")
    s = tensor(start_points, "float32")
    e = tensor(end_points, "float32")
    for name, p in (("start_points", s), ("end_points", e)):
        if p.shape.rank not in (2, 3) or list(p.shape[-2:]) != [4, 2]:
            raise ValueError(f"Invalid {name} shape: expected (4,2) for a single image or (N,4,2) for a batch. "
                             f"Received shape: {p.shape}")
    if list(s.shape) != list(e.shape):
        raise ValueError(f"start_points and end_points must have the same shape. Received start_points.shape={s.shape}, "
                         f"end_points.shape={e.shape}")
    if s.shape.rank == 2:
        s, e = _ef.expand_dims(s, 0), _ef.expand_dims(e, 0)
    h = _homography(_cast(s, _ef.float64), _cast(e, _ef.float64))
    return affine_transform(t, _cast(h, _ef.float32), interpolation=interpolation, fill_value=fill_value,
                            data_format=data_format)


def extract_patches_3d(volumes, size, strides=None, dilation_rate=1, padding="valid", data_format=None):
    """Keras' extract_patches_3d: (N, D, H, W, C) volumes to (N, d, h, w, pd*ph*pw*C) patches."""
    from . import nn
    v = tensor(volumes)
    size = (size,) * 3 if isinstance(size, int) else tuple(size)
    strides = size if strides is None else ((strides,) * 3 if isinstance(strides, int) else tuple(strides))
    if len(size) != 3 or len(strides) != 3:
        raise ValueError(f"Invalid `size` or `strides` argument: size={size}, strides={strides}")
    single = v.shape.rank == 4
    if single:
        v = _ef.expand_dims(v, 0)
    if data_format == "channels_first":
        v = _ef.transpose(v, [0, 2, 3, 4, 1])
    c = v.shape[-1]
    out_dim = size[0] * size[1] * size[2] * c
    kernel = _ef.constant(_np.eye(out_dim, dtype=v.dtype.as_numpy_dtype).reshape(size + (c, out_dim)))
    out = nn.conv(v, kernel, strides=strides, padding=padding, dilation_rate=dilation_rate)
    if data_format == "channels_first":
        out = _ef.transpose(out, [0, 4, 1, 2, 3])
    return _ef.squeeze(out, [0]) if single else out


def map_coordinates(inputs, coordinates, order, fill_mode="constant", fill_value=0.0):
    """SciPy's map_coordinates (Keras' JAX backend is jax.scipy's): order 0 (nearest) or 1 (linear),
    fill modes constant, nearest, wrap, mirror and reflect. Keras' TensorFlow backend folds negative
    coordinates with abs() and indexes past the edge in mirror mode; SciPy's folds are used here."""
    import itertools
    x = tensor(inputs)
    coords = tensor(coordinates)
    if coords.shape[0] != x.shape.rank:
        raise ValueError(f"First dim of `coordinates` must be the same as the rank of `inputs`. "
                         f"Received inputs with shape: {x.shape} and coordinate leading dim of {coords.shape[0]}")
    if coords.shape.rank < 2:
        raise ValueError(f"Invalid coordinates rank: expected at least rank 2. Received input with shape: {coords.shape}")
    if fill_mode not in ("constant", "nearest", "wrap", "mirror", "reflect"):
        raise ValueError(f"Invalid value for argument `fill_mode`. Received: fill_mode={fill_mode}")
    if order not in (0, 1):
        raise NotImplementedError("map_coordinates does not support order > 1")
    wdt = coords.dtype if coords.dtype.is_floating else _ef.float32
    per_dim = []
    for ax, c in enumerate(_ef.unstack(coords, axis=0)):
        size = x.shape[ax]
        if order == 0:
            nodes = [(_cast(c if c.dtype.is_integer else _ef.round(c), _ef.int32), _cast(1, wdt))]
        else:
            cf = _cast(c, wdt)
            lo = _ef.floor(cf)
            up = cf - lo
            nodes = [(_cast(lo, _ef.int32), 1 - up), (_cast(lo, _ef.int32) + 1, up)]
        fixed = []
        for idx, w in nodes:
            if fill_mode == "constant":
                valid = _ef.logical_and(idx >= 0, idx < size)
                idx = _ef.clip_by_value(idx, 0, size - 1)
            else:
                valid = None
                if fill_mode == "nearest":
                    idx = _ef.clip_by_value(idx, 0, size - 1)
                elif fill_mode == "wrap":
                    idx = _ef.math.floormod(idx, size)
                elif fill_mode == "reflect":  # (d c b a | a b c d | d c b a)
                    m = _ef.math.floormod(idx, 2 * size)
                    idx = _ef.where(m < size, m, 2 * size - 1 - m)
                else:  # mirror, as SciPy (and Keras' JAX backend): (d c b | a b c d | c b a)
                    period = max(2 * size - 2, 1)
                    m = _ef.math.floormod(idx, period)
                    idx = _ef.where(m < size, m, period - m)
            fixed.append((idx, valid, w))
        per_dim.append(fixed)
    out = None
    for items in itertools.product(*per_dim):
        idx = _ef.stack([it[0] for it in items], -1)
        g = _cast(_ef.gather_nd(x, idx), wdt)
        if fill_mode == "constant":
            ok = items[0][1]
            for it in items[1:]:
                ok = _ef.logical_and(ok, it[1])
            g = _ef.where(ok, g, filled(g, fill_value))
        w = items[0][2]
        for it in items[1:]:
            w = w * it[2]
        out = g * w if out is None else out + g * w
    if x.dtype.is_integer:
        out = _ef.round(out)
    return _cast(out, x.dtype)


def elastic_transform(images, alpha=20.0, sigma=5.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                      seed=None, data_format=None):
    """Keras' elastic_transform: a random displacement field (normal noise, Gaussian-blurred with
    sigma, scaled by alpha) resamples each channel with map_coordinates. As in Keras' TensorFlow
    backend, x and y share one draw of the noise; seed follows keras.random's rules."""
    from .. import random as _random
    if interpolation not in ("bilinear", "nearest"):
        raise ValueError(f"Invalid value for argument `interpolation`. Received: interpolation={interpolation}")
    if fill_mode not in ("constant", "nearest", "wrap", "mirror", "reflect"):
        raise ValueError(f"Invalid value for argument `fill_mode`. Received: fill_mode={fill_mode}")
    t = tensor(images)
    _check_rank(t, "elastic_transform")
    single = t.shape.rank == 3
    if single:
        t = _ef.expand_dims(t, 0)
    if data_format == "channels_first":
        t = _ef.transpose(t, [0, 2, 3, 1])
    n, h, w, c = t.shape
    n = 1 if n is None else n
    dt = standardize_dtype(t.dtype)
    k = int(sigma) * 6 | 1
    d = _random.normal((n, h, w), dtype=dt, seed=seed) * _cast(sigma, t.dtype)
    d = _ef.squeeze(gaussian_blur(_ef.expand_dims(d, -1), (k, k), (sigma, sigma)), [-1])
    ys, xs = _np.meshgrid(_np.arange(h), _np.arange(w), indexing="ij")
    dy = _ef.constant(ys.astype(t.dtype.as_numpy_dtype)) + _cast(alpha, t.dtype) * d
    dx = _ef.constant(xs.astype(t.dtype.as_numpy_dtype)) + _cast(alpha, t.dtype) * d
    order = 1 if interpolation == "bilinear" else 0
    out = _ef.stack([_ef.stack([map_coordinates(t[b, :, :, ch], _ef.stack([dy[b], dx[b]]), order, fill_mode=fill_mode,
                                                fill_value=fill_value) for ch in range(c)], -1) for b in range(n)])
    if data_format == "channels_first":
        out = _ef.transpose(out, [0, 3, 1, 2])
    return _ef.squeeze(out, [0]) if single else out
