"""Keras 3's RandomElasticTransform (channels_last): images resampled along a smoothed random
displacement field, as keras.ops.image.elastic_transform, vectorised over the batch."""
from .. import _core
from . import _prep_image as pi

_r = _core.random


def _fix(idx, size, mode):
    """Integer sample indices folded into [0, size) as keras.ops.image.map_coordinates folds them."""
    if mode in ("constant", "nearest"):
        return _core.clip_by_value(idx, 0, size - 1)
    from .. import math as efm
    if mode == "wrap":
        return efm.floormod(idx, size)
    if mode == "reflect":  # (d c b a | a b c d | d c b a)
        m = efm.floormod(idx, 2 * size)
        return _core.where(m < size, m, 2 * size - 1 - m)
    period = max(2 * size - 2, 1)  # mirror: (d c b | a b c d | c b a)
    m = efm.floormod(idx, period)
    return _core.where(m < size, m, period - m)


def _sample(images, ys, xs, order, mode, fill_value):
    """images [B, H, W, C] read at float coordinates ys, xs [B, H, W] (order 0: nearest, 1: linear)."""
    from .. import math as efm
    from .._array_ops import gather as _gather
    h, w, c = images._shape_tuple[1], images._shape_tuple[2], images._shape_tuple[3]
    flat = _core.reshape(images, [-1, c])
    ones = _core.reshape(ys[:, 0, 0] * 0.0 + 1.0, [-1, 1, 1])
    base = _core.cast(efm.cumsum(ones, axis=0) - 1.0, "int32") * (h * w)

    def nodes(coord):
        if order == 0:
            return [(_core.cast(efm.round(coord), "int32"), None)]
        lo = _core.floor(coord)
        up = coord - lo
        return [(_core.cast(lo, "int32"), 1.0 - up), (_core.cast(lo, "int32") + 1, up)]
    out = None
    for yi, wy in nodes(ys):
        for xi, wx in nodes(xs):
            v = _core.reshape(_gather(flat, _core.reshape(base + _fix(yi, h, mode) * w + _fix(xi, w, mode), [-1])),
                              [-1, h, w, c])
            if mode == "constant":
                ok = (yi >= 0) & (yi < h) & (xi >= 0) & (xi < w)
                v = _core.where(_core.expand_dims(ok, -1), v, _core.zeros_like(v) + float(fill_value))
            if wy is not None:
                v = v * _core.expand_dims(wy * wx, -1)
            out = v if out is None else out + v
    return out


class RandomElasticTransform(pi._RandomLayer):
    """Keras' RandomElasticTransform: with probability p (drawn from factor's range, [0, f] for a
    number f) each image is resampled at (y + alpha * d, x + alpha * d), d normal noise blurred by
    a Gaussian of sigma (kernel 6 * floor(sigma) + 1), alpha = 0.1 s max(h, w), sigma = 0.05 s min(h, w),
    s drawn from scale's range once per batch; clipped to value_range. As in Keras' TensorFlow
    backend, both axes share one noise draw."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                 value_range=(0, 255), seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        self.scale = self._set_factor(scale, "scale")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      "('nearest', 'bilinear').")
        if fill_mode not in ("constant", "nearest", "wrap", "mirror", "reflect"):
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one "
                                      "{'constant', 'nearest', 'wrap', 'mirror', 'reflect'}.")
        self.interpolation, self.fill_mode, self.fill_value = interpolation, fill_mode, fill_value
        self.value_range = value_range

    def _augment(self, x):
        x = pi._float(x)
        if self.scale[1] == 0 or self.factor[1] == 0:
            return x
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        probability = self._uniform(x, self.factor[0], self.factor[1])
        apply = self._uniform(x, 0.0, 1.0) < probability
        lo, hi = float(self.scale[0]), float(self.scale[1])
        zero = _core.zeros([])
        s = zero + lo if lo >= hi else _r.uniform_like(zero, lo, hi, seed=self._generator)
        alpha = float(max(h, w)) * 0.1 * s
        sigma = float(min(h, w)) * 0.05 * s
        # the largest kernel scale can give, with the taps past this draw's radius 3 * floor(sigma) zeroed:
        # the same as Keras' kernel of 6 * floor(sigma) + 1 taps ('same' zero padding)
        radius = 3 * int(min(h, w) * 0.05 * hi)
        taps = _core.cast(_core.range(2 * radius + 1), "float32") - float(radius)
        g = _core.exp(-(taps * taps) / (2.0 * sigma * sigma))
        g = _core.where(_core.abs(taps) <= 3.0 * _core.floor(sigma), g, _core.zeros_like(g))
        g = g / _core.reduce_sum(g)
        kernel = _core.reshape(_core.expand_dims(g, 1) * _core.expand_dims(g, 0), [2 * radius + 1, 2 * radius + 1, 1, 1])
        from .. import nn
        noise = _r.normal_like(x[..., :1], 0.0, 1.0, seed=self._generator) * sigma
        d = _core.squeeze(nn.depthwise_conv2d(noise, kernel, [1, 1, 1, 1], "SAME"), [3])
        ys = _core.reshape(_core.cast(_core.range(h), "float32"), [1, h, 1]) + alpha * d
        xs = _core.reshape(_core.cast(_core.range(w), "float32"), [1, 1, w]) + alpha * d
        moved = _sample(x, ys, xs, 1 if self.interpolation == "bilinear" else 0, self.fill_mode, self.fill_value)
        y = _core.where(apply, moved, x)
        return _core.clip_by_value(y, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "scale": self.scale, "interpolation": self.interpolation,
                  "fill_mode": self.fill_mode, "fill_value": self.fill_value, "value_range": self.value_range})
        return c


__all__ = ["RandomElasticTransform"]
