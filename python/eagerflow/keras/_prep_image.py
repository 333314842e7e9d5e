"""Keras 3's image preprocessing layers (channels_last): Resizing and CenterCrop, and the random
augmentations, which transform only when training (Keras' default training=True when a layer or
model is called directly; fit trains, evaluate / predict pass training=False: identity)."""
import math

from .. import _core
from . import _prep_common as pc

_r = _core.random


def _check_format(data_format, cls):
    if data_format not in (None, "channels_last"):
        raise NotImplementedError(f"{cls}: only data_format='channels_last' is supported here, got {data_format!r}")


def _batched(images):
    """(images as [B, H, W, C], whether the input was one [H, W, C] image)."""
    x = images if isinstance(images, _core.Tensor) else _core.convert_to_tensor(images)
    if x.ndim == 3:
        return _core.expand_dims(x, 0), True
    if x.ndim != 4:
        raise ValueError(f"Expected the input image to be rank 3 or 4. Received inputs.shape={tuple(x._shape_tuple)}")
    return x, False


def _unbatched(x, single):
    return _core.squeeze(x, [0]) if single else x


def _reverse(x, axes):
    from .. import reverse
    return reverse(x, axes)


def _float(x, dtype="float32"):
    return x if x.dtype.name == dtype else _core.cast(x, dtype)


def _resize(images, height, width, interpolation="bilinear", crop_to_aspect_ratio=False):
    from .. import image
    if crop_to_aspect_ratio:
        h, w = images._shape_tuple[1], images._shape_tuple[2]
        # The largest centred window with the target's aspect ratio (Keras' smart resize).
        ch = min(h, int(w * height / width))
        cw = min(w, int(h * width / height))
        ch, cw = max(ch, 1), max(cw, 1)
        top, left = (h - ch) // 2, (w - cw) // 2
        images = images[:, top:top + ch, left:left + cw, :]
    method = {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic", "area": "area",
              "lanczos3": "lanczos3", "lanczos5": "lanczos5", "mitchellcubic": "mitchellcubic",
              "gaussian": "gaussian"}.get(interpolation)
    if method is None:
        raise ValueError(f"Invalid value for argument `interpolation`: {interpolation!r}")
    return image.resize(images, [height, width], method=method)


class _ImageLayer(pc.PreprocessingLayer):
    def __init__(self, data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        _check_format(data_format, type(self).__name__)
        self.data_format = "channels_last"

    def _out(self, y, single=False):
        """The result in the layer's compute dtype (bfloat16 under mixed_bfloat16), as Keras'."""
        y = _unbatched(y, single)
        dt = str(getattr(self.compute_dtype, "name", self.compute_dtype))
        return y if y.dtype.name == dt else _core.cast(y, dt)

    def get_config(self):
        c = super().get_config()
        c["data_format"] = self.data_format
        return c


class Resizing(_ImageLayer):
    """Keras' Resizing: images to (height, width), float32 (crop_to_aspect_ratio: the centred
    window of the target's aspect ratio first)."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False, pad_to_aspect_ratio=False,
                 fill_mode="constant", fill_value=0.0, antialias=False, data_format=None, name=None, **kwargs):
        super().__init__(data_format, name, **kwargs)
        if pad_to_aspect_ratio and crop_to_aspect_ratio:
            raise ValueError("Only one of `crop_to_aspect_ratio` and `pad_to_aspect_ratio` can be `True`.")
        if pad_to_aspect_ratio or antialias:
            raise NotImplementedError("Resizing: pad_to_aspect_ratio and antialias are not supported here")
        self.height, self.width = int(height), int(width)
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio
        self.pad_to_aspect_ratio = pad_to_aspect_ratio
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.antialias = antialias

    def call(self, inputs):
        x, single = _batched(inputs)
        y = _resize(_float(x), self.height, self.width, self.interpolation, self.crop_to_aspect_ratio)
        return self._out(y, single)

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        s[-3], s[-2] = self.height, self.width
        return tuple(s)

    def get_config(self):
        c = super().get_config()
        c.update({"height": self.height, "width": self.width, "interpolation": self.interpolation,
                  "crop_to_aspect_ratio": self.crop_to_aspect_ratio, "pad_to_aspect_ratio": self.pad_to_aspect_ratio,
                  "fill_mode": self.fill_mode, "fill_value": self.fill_value, "antialias": self.antialias})
        return c


class CenterCrop(_ImageLayer):
    """Keras' CenterCrop: the centred (height, width) window; an image smaller than the target is
    resized from its largest centred window of the target's aspect ratio instead."""

    def __init__(self, height, width, data_format=None, name=None, **kwargs):
        super().__init__(data_format, name, **kwargs)
        self.height, self.width = int(height), int(width)

    def call(self, inputs):
        x, single = _batched(inputs)
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        if h is None or w is None:
            raise ValueError("CenterCrop needs images of a known height and width")
        x = _float(x)
        if h >= self.height and w >= self.width:
            top, left = (h - self.height) // 2, (w - self.width) // 2
            y = x[:, top:top + self.height, left:left + self.width, :]
        else:
            y = _resize(x, self.height, self.width, "bilinear", crop_to_aspect_ratio=True)
        return self._out(y, single)

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        s[-3], s[-2] = self.height, self.width
        return tuple(s)

    def get_config(self):
        c = super().get_config()
        c.update({"height": self.height, "width": self.width})
        return c


class _RandomLayer(_ImageLayer):
    """Randomness from a SeedGenerator (seed=None: a fresh stream); `training` False is identity."""
    _FACTOR_BOUNDS = (-1, 1)

    def __init__(self, seed=None, data_format=None, name=None, **kwargs):
        super().__init__(data_format, name, **kwargs)
        self.seed = seed
        self._generator = _r.SeedGenerator(seed)

    def _set_factor(self, factor, what="factor"):
        lo_b, hi_b = self._FACTOR_BOUNDS
        msg = (f"The `{what}` argument should be a number (or a list of two numbers) in the range [{lo_b}, {hi_b}]. "
               f"Received: {what}={factor}")
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2 or factor[0] > hi_b or factor[1] < lo_b:
                raise ValueError(msg)
            return tuple(sorted(factor))
        if isinstance(factor, (int, float)):
            if factor < lo_b or factor > hi_b:
                raise ValueError(msg)
            f = abs(factor)
            return (max(-f, lo_b), f)
        raise ValueError(msg)

    def _uniform(self, x, lo, hi):
        """One draw per image of the batch x ([B, ...]), shape [B, 1, 1, 1]."""
        first = _float(x[:, 0, 0, 0])
        if float(lo) >= float(hi):  # a fixed factor, e.g. RandomRotation((0.25, 0.25))
            u = first * 0.0 + float(lo)
        else:
            u = _r.uniform_like(first, float(lo), float(hi), seed=self._generator)
        return _core.reshape(u, [-1, 1, 1, 1])

    def __call__(self, inputs, training=None, **kwargs):
        # Keras' default for these layers: a direct call transforms (training=True). Inside a model
        # the model's flag decides (fit: True; evaluate, predict and a plain model(x) here: False).
        return super().__call__(inputs, training=True if training is None else training, **kwargs)

    _identity_at_inference = False  # Keras 3's RandomCrop returns its input unchanged

    def call(self, inputs, training=True):
        if not training:
            if self._identity_at_inference:
                return inputs
            return self._out(inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs))
        x, single = _batched(inputs)
        return self._out(self._augment(x), single)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        c = super().get_config()
        c["seed"] = self.seed
        return c


class RandomFlip(_RandomLayer):
    """Keras' RandomFlip: each image flipped left-right and / or up-down with probability 1/2."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        if mode not in ("horizontal", "vertical", "horizontal_and_vertical"):
            raise ValueError(f"RandomFlip layer {self.name} received an unknown mode argument {mode}")
        self.mode = mode

    def _augment(self, x):
        x = _float(x)
        if "horizontal" in self.mode:
            flip = self._uniform(x, 0.0, 1.0) <= 0.5
            x = _core.where(flip, _reverse(x, [2]), x)
        if "vertical" in self.mode:
            flip = self._uniform(x, 0.0, 1.0) <= 0.5
            x = _core.where(flip, _reverse(x, [1]), x)
        return x

    def get_config(self):
        c = super().get_config()
        c["mode"] = self.mode
        return c


def _map_coord(c, size, mode):
    """A sampling coordinate mapped into [0, size - 1] as TF's image transforms map it."""
    n = float(size)
    if mode == "reflect":
        if size <= 1:
            return _core.zeros_like(c)
        p = 2.0 * n
        r = c - p * _core.floor(c / p)  # into [0, 2n)
        r = _core.where(r >= n, p - r - 1.0, r)
        return _core.clip_by_value(r, 0.0, n - 1.0)
    if mode == "wrap":
        if size <= 1:
            return _core.zeros_like(c)
        # TF's rule (ImageProjectiveTransformV3): whole periods of n counted by c / (n - 1)
        span = n - 1.0
        below = c + n * (_core.floor(-c / span) + 1.0)
        above = c - n * _core.floor(c / span)
        c = _core.where(c < 0.0, below, _core.where(c > span, above, c))
        return _core.clip_by_value(c, 0.0, span)
    if mode == "nearest":
        return _core.clip_by_value(c, 0.0, n - 1.0)
    return c  # constant: reads outside the image give fill_value


def _transform(images, a, b, fill_mode, interpolation, fill_value, c=None):
    """Samples images [B, H, W, C] at x_in = a0 x + a1 y + a2, y_in = b0 x + b1 y + b2 (a, b: three
    [B, 1, 1] tensors each), as Keras' affine transforms (TF's ImageProjectiveTransformV3); with
    c (two more), a projective one: both divided by c0 x + c1 y + 1."""
    from .. import math as efm
    from .._array_ops import gather as _gather
    h, w = images._shape_tuple[1], images._shape_tuple[2]
    if h is None or w is None:
        raise ValueError("random image transforms need images of a known height and width")
    ys = _core.reshape(_core.cast(_core.range(h), "float32"), [1, h, 1])
    xs = _core.reshape(_core.cast(_core.range(w), "float32"), [1, 1, w])
    k = 1.0 if c is None else c[0] * xs + c[1] * ys + 1.0
    xin = _map_coord((a[0] * xs + a[1] * ys + a[2]) / k, w, fill_mode)
    yin = _map_coord((b[0] * xs + b[1] * ys + b[2]) / k, h, fill_mode)
    c = images._shape_tuple[3]
    flat = _core.reshape(images, [-1, c])
    # Each image's offset into the flattened batch (the batch size may be unknown while tracing).
    ones = _core.reshape(_float(images[:, 0, 0, 0]) * 0.0 + 1.0, [-1, 1, 1])
    base = _core.cast(efm.cumsum(ones, axis=0) - 1.0, "int32") * (h * w)
    fill = float(fill_value)

    def read(yy, xx):
        inside = (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
        yi = _core.cast(_core.clip_by_value(yy, 0.0, h - 1.0), "int32")
        xi = _core.cast(_core.clip_by_value(xx, 0.0, w - 1.0), "int32")
        idx = _core.reshape(base + yi * w + xi, [-1])
        v = _core.reshape(_gather(flat, idx), [-1, h, w, c])
        return _core.where(_core.expand_dims(inside, -1), v, _core.zeros_like(v) + fill)

    if interpolation == "nearest":  # TF rounds halves away from zero (std::round)
        def rnd(v):
            return efm.sign(v) * _core.floor(_core.abs(v) + 0.5)
        return read(rnd(yin), rnd(xin))
    y0, x0 = _core.floor(yin), _core.floor(xin)
    wy, wx = _core.expand_dims(yin - y0, -1), _core.expand_dims(xin - x0, -1)
    top = read(y0, x0) * (1 - wx) + read(y0, x0 + 1) * wx
    bottom = read(y0 + 1, x0) * (1 - wx) + read(y0 + 1, x0 + 1) * wx
    return top * (1 - wy) + bottom * wy


class _AffineLayer(_RandomLayer):
    def __init__(self, fill_mode, interpolation, fill_value, seed, data_format, name, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        if fill_mode not in ("reflect", "wrap", "constant", "nearest"):
            raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Expected of one `{{'reflect', 'wrap', "
                                      "'constant', 'nearest'}}`.")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one `{{'nearest', "
                                      "'bilinear'}}`.")
        self.fill_mode = fill_mode
        self.interpolation = interpolation
        self.fill_value = fill_value

    def _augment(self, x):
        x = _float(x)
        a, b = self._matrix(x)
        return _transform(x, [_core.reshape(t, [-1, 1, 1]) for t in a], [_core.reshape(t, [-1, 1, 1]) for t in b],
                          self.fill_mode, self.interpolation, self.fill_value)

    def get_config(self):
        c = super().get_config()
        c.update({"fill_mode": self.fill_mode, "fill_value": self.fill_value, "interpolation": self.interpolation})
        return c


class RandomRotation(_AffineLayer):
    """Keras' RandomRotation: each image rotated counter-clockwise by factor * 2pi, the factor
    drawn from [lower, upper] (a number f: [-f, f])."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0,
                 value_range=(0, 255), data_format=None, name=None, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        self.value_range = value_range

    def _matrix(self, x):
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        ang = self._uniform(x, self.factor[0] * 2 * math.pi, self.factor[1] * 2 * math.pi)
        cos, sin = _core.cos(ang), _core.sin(ang)
        x_off = ((w - 1) - (cos * (w - 1) - sin * (h - 1))) / 2.0
        y_off = ((h - 1) - (sin * (w - 1) + cos * (h - 1))) / 2.0
        return (cos, -sin, x_off), (sin, cos, y_off)

    def get_config(self):
        c = super().get_config()
        c["factor"] = self.factor
        return c


class RandomZoom(_AffineLayer):
    """Keras' RandomZoom: zoomed out by 1 + a factor from [lower, upper] (negative: zoomed in);
    width_factor=None keeps the aspect ratio."""
    _FACTOR_BOUNDS = (-1, float("inf"))

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, name=None, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, seed, data_format, name, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self._h = self._set_factor(height_factor, "height_factor")
        self._w = None if width_factor is None else self._set_factor(width_factor, "width_factor")

    def _matrix(self, x):
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        zy = self._uniform(x, 1.0 + self._h[0], 1.0 + self._h[1])
        zx = zy if self._w is None else self._uniform(x, 1.0 + self._w[0], 1.0 + self._w[1])
        zero = zx * 0.0
        return (zx, zero, (w - 1) / 2.0 * (1.0 - zx)), (zero, zy, (h - 1) / 2.0 * (1.0 - zy))

    def get_config(self):
        c = super().get_config()
        c.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return c


class RandomTranslation(_AffineLayer):
    """Keras' RandomTranslation: each image shifted by factors of its height and width (positive:
    down / right)."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, name=None, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, seed, data_format, name, **kwargs)
        self.height_factor = height_factor
        self.width_factor = width_factor
        self._h = self._set_factor(height_factor, "height_factor")
        self._w = self._set_factor(width_factor, "width_factor")

    def _matrix(self, x):
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        dy = self._uniform(x, self._h[0], self._h[1]) * float(h)
        dx = self._uniform(x, self._w[0], self._w[1]) * float(w)
        one, zero = dx * 0.0 + 1.0, dx * 0.0
        return (one, zero, -dx), (zero, one, -dy)

    def get_config(self):
        c = super().get_config()
        c.update({"height_factor": self.height_factor, "width_factor": self.width_factor})
        return c


class RandomContrast(_RandomLayer):
    """Keras' RandomContrast: (x - mean) * f + mean per image and channel, f from
    [1 - lower, 1 + upper], clipped to value_range."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        self.value_range = value_range

    def _augment(self, x):
        x = _float(x)
        f = self._uniform(x, 1.0 - self.factor[0], 1.0 + self.factor[1])
        m = _core.reduce_mean(x, [1, 2], keepdims=True)
        return _core.clip_by_value((x - m) * f + m, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "value_range": self.value_range})
        return c


class RandomBrightness(_RandomLayer):
    """Keras' RandomBrightness: factor * (value_range span) added per image, clipped to value_range."""

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        if len(value_range) != 2:
            raise ValueError(f"The `value_range` argument should be a list of two numbers. "
                             f"Received: value_range={value_range}")
        self.value_range = sorted(value_range)

    def _augment(self, x):
        x = _float(x)
        span = float(self.value_range[1] - self.value_range[0])
        delta = self._uniform(x, self.factor[0] * span, self.factor[1] * span)
        return _core.clip_by_value(x + delta, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "value_range": self.value_range})
        return c


class RandomCrop(_RandomLayer):
    """Keras' RandomCrop: one random (height, width) window for the whole batch when training
    (an image smaller than the target is resized to it); identity at inference, as Keras 3's."""

    _identity_at_inference = True

    def __init__(self, height, width, seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.height, self.width = int(height), int(width)

    def _augment(self, x):
        x = _float(x)
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        if h > self.height and w > self.width:
            one = x[:1, 0, 0, 0]
            top = _core.cast(_r.uniform_like(one, 0.0, float(h - self.height + 1), seed=self._generator), "int32")
            left = _core.cast(_r.uniform_like(one, 0.0, float(w - self.width + 1), seed=self._generator), "int32")
            rows = _core.reshape(top, []) + _core.range(self.height)
            cols = _core.reshape(left, []) + _core.range(self.width)
            return _core.gather(_core.gather(x, rows, axis=1), cols, axis=2)
        y = x[:, :self.height, :self.width, :]
        if y._shape_tuple[1] != self.height or y._shape_tuple[2] != self.width:
            y = _resize(x, self.height, self.width)
        return y

    def compute_output_shape(self, input_shape):
        s = list(input_shape)
        s[-3], s[-2] = self.height, self.width
        return tuple(s)

    def get_config(self):
        c = super().get_config()
        c.update({"height": self.height, "width": self.width})
        return c
