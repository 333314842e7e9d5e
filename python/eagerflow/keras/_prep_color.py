"""Keras 3's colour preprocessing layers (channels_last): AutoContrast, Solarization, RandomInvert,
RandomGrayscale, RandomPosterization, RandomColorDegeneration, RandomSaturation, RandomHue and
RandomSharpness. As Keras' they take a [B, H, W, C] batch or one [H, W, C] image with values in
value_range, draw one factor per image, and transform only when training (a direct call trains;
fit trains, evaluate and predict do not)."""
from .. import _core
from . import _prep_image as pi
from .ops import image as _oi


def _value_range(value_range):
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
        raise ValueError(f"The `value_range` argument should be a list of two numbers. "
                         f"Received: value_range={value_range}")
    return sorted(value_range)


def _rescale(x, source, target):
    """Values from the range `source` to `target` (Keras' _transform_value_range)."""
    if tuple(source) == tuple(target):
        return x
    x = (x - float(source[0])) / float(source[1] - source[0])
    return x * float(target[1] - target[0]) + float(target[0])


class _ColorLayer(pi._RandomLayer):
    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        self.value_range = _value_range(value_range)

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "value_range": self.value_range})
        return c


class AutoContrast(pi._ImageLayer):
    """Keras' AutoContrast: each image's channels stretched to fill value_range (NaN channels, a
    flat one's, kept as they were). Not random: it applies in training and inference alike."""

    def __init__(self, value_range=(0, 255), name=None, **kwargs):
        super().__init__(kwargs.pop("data_format", None), name, **kwargs)
        self.value_range = _value_range(value_range)

    def call(self, inputs):
        x, single = pi._batched(inputs)
        x = pi._float(x)
        images = _rescale(x, self.value_range, (0, 255))
        low = _core.reduce_min(images, [1, 2], keepdims=True)
        high = _core.reduce_max(images, [1, 2], keepdims=True)
        scale = 255.0 / (high - low)
        out = _core.clip_by_value(images * scale - low * scale, 0.0, 255.0)
        out = _rescale(out, (0, 255), self.value_range)
        from .. import math as efm
        out = _core.where(efm.is_nan(out), x, out)
        return self._out(out, single)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        c = super().get_config()
        c["value_range"] = self.value_range
        return c


class Solarization(pi._RandomLayer):
    """Keras' Solarization: x + addition (clipped to [0, 255]), then 255 - x wherever x is at least
    the threshold; additions from [lower, upper * 255] and thresholds likewise (factors in [0, 1];
    a number f means [0, f]). The defaults (0, 0) invert every pixel."""

    def __init__(self, addition_factor=0.0, threshold_factor=0.0, value_range=(0, 255), seed=None, name=None,
                 **kwargs):
        super().__init__(seed, kwargs.pop("data_format", None), name, **kwargs)
        self.addition_factor = self._solar_factor(addition_factor, "addition_factor")
        self.threshold_factor = self._solar_factor(threshold_factor, "threshold_factor")
        self.value_range = _value_range(value_range)

    @staticmethod
    def _solar_factor(factor, what):
        msg = (f"The `addition_factor` and `threshold_factor` arguments should be a number (or a list of two "
               f"numbers) in the range [0, 1]. Received: {what}={factor}")
        values = factor if isinstance(factor, (tuple, list)) else [factor]
        if len(values) not in (1, 2) or not all(isinstance(v, (int, float)) and 0 <= v <= 1 for v in values):
            raise ValueError(msg)
        return tuple(sorted(values)) if len(values) == 2 else (0, values[0])

    def _augment(self, x):
        x = pi._float(x)
        add = self._uniform(x, self.addition_factor[0], self.addition_factor[1] * 255)
        threshold = self._uniform(x, self.threshold_factor[0], self.threshold_factor[1] * 255)
        y = _core.clip_by_value(_rescale(x, self.value_range, (0, 255)) + add, 0.0, 255.0)
        y = _core.where(y < threshold, y, 255.0 - y)
        return _rescale(y, (0, 255), self.value_range)

    def get_config(self):
        c = super().get_config()
        c.update({"value_range": self.value_range, "addition_factor": self.addition_factor,
                  "threshold_factor": self.threshold_factor})
        return c


class RandomInvert(pi._RandomLayer):
    """Keras' RandomInvert: an image becomes value_range[1] - x when a uniform draw falls below
    its invert probability (itself drawn from factor's range, [0, f] for a number f)."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor=1.0, value_range=(0, 255), seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        self.value_range = value_range

    def _augment(self, x):
        x = pi._float(x)
        probability = self._uniform(x, self.factor[0], self.factor[1])
        invert = self._uniform(x, 0.0, 1.0) < probability
        return _core.where(invert, float(self.value_range[1]) - x, x)

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "value_range": self.value_range})
        return c


class RandomGrayscale(pi._RandomLayer):
    """Keras' RandomGrayscale: each image to grayscale (0.2989 R + 0.5870 G + 0.1140 B in every
    channel) with probability factor."""

    def __init__(self, factor=0.5, data_format=None, seed=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        if factor < 0 or factor > 1:
            raise ValueError(f"`factor` should be between 0 and 1. Received: factor={factor}")
        self.factor = factor

    def _augment(self, x):
        x = pi._float(x)
        gray = _oi.rgb_to_grayscale(x)
        apply = self._uniform(x, 0.0, 1.0) < float(self.factor)
        return _core.where(apply, gray + _core.zeros_like(x), x)

    def get_config(self):
        c = super().get_config()
        del c["seed"]  # Keras' RandomGrayscale config has none
        c["factor"] = self.factor
        return c


class RandomPosterization(_ColorLayer):
    """Keras' RandomPosterization: each image kept to its top `bits` bits per 8-bit channel, bits
    drawn from [lower, upper) (factor f: [1, f); a pair (b, b): always b)."""
    _FACTOR_BOUNDS = (1, 8)

    def _augment(self, x):
        x = pi._float(x)
        lo, hi = self.factor
        bits = self._uniform(x, lo, hi)
        if lo != hi:
            bits = _core.floor(bits)
        step = _core.pow(_core.full_like(bits, 2.0), 8.0 - bits)
        y = _core.floor(_rescale(x, self.value_range, (0, 255)))  # Keras casts to uint8
        y = _core.floor(y / step) * step
        return _rescale(y, (0, 255), self.value_range)


class RandomColorDegeneration(_ColorLayer):
    """Keras' RandomColorDegeneration: x + f * (grayscale(x) - x), f from factor's range, clipped to
    value_range (f = 1: grayscale)."""

    def _augment(self, x):
        x = pi._float(x)
        f = self._uniform(x, self.factor[0], self.factor[1])
        y = x + f * (_oi.rgb_to_grayscale(x) - x)
        return _core.clip_by_value(y, float(self.value_range[0]), float(self.value_range[1]))


class RandomSaturation(_ColorLayer):
    """Keras' RandomSaturation: the HSV saturation times f / (1 - f + 1e-7), f from factor's range
    (0.5: unchanged, 0: grayscale, 1: fully saturated), clipped to value_range."""
    _FACTOR_BOUNDS = (0, 1)

    def _augment(self, x):
        x = pi._float(x)
        f = self._uniform(x, self.factor[0], self.factor[1])
        f = _core.squeeze(f / (1.0 - f + 1e-7), [3])
        hsv = _oi.rgb_to_hsv(x)
        s = _core.clip_by_value(hsv[..., 1] * f, float(self.value_range[0]), float(self.value_range[1]))
        return _oi.hsv_to_rgb(_core.stack([hsv[..., 0], s, hsv[..., 2]], -1))


class RandomHue(_ColorLayer):
    """Keras' RandomHue: the hue turned by +-f / 2 of the circle (sign by a coin, f from factor's
    range), on values scaled from value_range to [0, 1] and back."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor, value_range=(0, 255), data_format=None, seed=None, name=None, **kwargs):
        super().__init__(factor, value_range, data_format, seed, name, **kwargs)
        self.value_range = value_range  # Keras keeps RandomHue's as given

    def _augment(self, x):
        x = pi._float(x)
        sign = _core.where(self._uniform(x, 0.0, 1.0) > 0.5, -1.0 + 0.0 * x[:, :1, :1, :1],
                           1.0 + 0.0 * x[:, :1, :1, :1])
        f = _core.squeeze(sign * self._uniform(x, self.factor[0], self.factor[1]) * 0.5, [3])
        hsv = _oi.rgb_to_hsv(_rescale(x, self.value_range, (0, 1)))
        h = hsv[..., 0] + f
        h = _core.where(h > 1.0, h - 1.0, h)
        h = _core.where(h < 0.0, h + 1.0, h)
        y = _core.clip_by_value(_oi.hsv_to_rgb(_core.stack([h, hsv[..., 1], hsv[..., 2]], -1)), 0.0, 1.0)
        return _rescale(y, (0, 1), self.value_range)


class RandomSharpness(_ColorLayer):
    """Keras' RandomSharpness: x + (1 - 2f) * (smooth(x) - x), smooth the 3x3 kernel
    [[1, 1, 1], [1, 5, 1], [1, 1, 1]] / 13 ('same', zero padded), f from factor's range (0.5:
    unchanged, 0: smoothed, 1: sharpened), clipped to value_range."""
    _FACTOR_BOUNDS = (0, 1)

    def _augment(self, x):
        x = pi._float(x)
        f = self._uniform(x, self.factor[0], self.factor[1]) * 2.0
        channels = x._shape_tuple[3]
        a, b = 1.0 / 13.0, 5.0 / 13.0
        kernel = _core.convert_to_tensor([[a, a, a], [a, b, a], [a, a, a]])
        kernel = _core.tile(_core.reshape(kernel, [3, 3, 1, 1]), [1, 1, channels, 1])
        from .. import nn
        smooth = nn.depthwise_conv2d(x, kernel, [1, 1, 1, 1], "SAME")
        y = x + (1.0 - f) * (smooth - x)
        return _core.clip_by_value(y, float(self.value_range[0]), float(self.value_range[1]))


__all__ = ["AutoContrast", "RandomColorDegeneration", "RandomGrayscale", "RandomHue", "RandomInvert",
           "RandomPosterization", "RandomSaturation", "RandomSharpness", "Solarization"]
