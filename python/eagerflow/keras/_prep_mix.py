"""Keras 3's RandomGaussianBlur, RandomColorJitter and MixUp (channels_last), random augmentations
as in _prep_image.py: one draw per call, applied only when training."""
from .. import _core
from . import _prep_color as col
from . import _prep_image as pi

_r = _core.random


def _kernel_1d(n, sigma):
    # Keras' gaussian kernel along one axis: exp(-x^2 / (2 sigma^2)) normalised, x centred on the
    # middle tap; sigma a scalar tensor so a drawn sigma traces
    x = _core.cast(_core.range(n), "float32") - (n - 1) / 2.0
    g = _core.exp(-(x * x) / (2.0 * sigma * sigma))
    return g / _core.reduce_sum(g)


def _gamma_like(like, alpha, generator):
    """Gamma(alpha) draws shaped as `like` (a batch of unknown size traces too), alpha a number or a
    scalar tensor: Marsaglia and Tsang's method, 8 rounds at once, the first accepted one kept
    (each accepts with probability > 0.95); alpha < 1 boosted by u ** (1 / alpha)."""
    a = _core.convert_to_tensor(alpha, dtype="float32") if not isinstance(alpha, _core.Tensor) else alpha
    boost = a < 1.0
    a1 = _core.where(boost, a + 1.0, a)
    d = a1 - 1.0 / 3.0
    c = 1.0 / _core.sqrt(9.0 * d)
    rounds = 8
    many = _core.tile(_core.expand_dims(like, 0), [rounds, 1])
    z = _r.normal_like(many, 0.0, 1.0, seed=generator)
    u = _r.uniform_like(many, 1e-12, 1.0, seed=generator)
    v = (1.0 + c * z) * (1.0 + c * z) * (1.0 + c * z)
    ok = (v > 0.0) & (_core.log(u) < 0.5 * z * z + d - d * v + d * _core.log(_core.maximum(v, 1e-30)))
    first = _core.argmax(_core.cast(ok, "int32"), 0)
    pick = _core.cast(_core.equal(_core.reshape(_core.range(rounds), [-1, 1]),
                                  _core.cast(_core.expand_dims(first, 0), "int32")), "float32")
    out = d * _core.reduce_sum(v * pick, [0])
    lift = _core.pow(_r.uniform_like(like, 1e-12, 1.0, seed=generator), 1.0 / a)
    return _core.where(boost, out * lift, out)


class RandomGaussianBlur(pi._RandomLayer):
    """Keras' RandomGaussianBlur: with probability p (p drawn from factor's range, [0, f] for a
    number f) each image is blurred by a kernel_size Gaussian whose two sigmas (one pair per batch)
    are drawn from sigma's range, then clipped to value_range."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor=1.0, kernel_size=3, sigma=1.0, value_range=(0, 255), data_format=None, seed=None,
                 name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        self.kernel_size = self._kernel_size(kernel_size)
        self.sigma = self._set_factor(sigma, "sigma")
        self.value_range = value_range

    @staticmethod
    def _kernel_size(value):
        msg = f"kernel_size must be an odd number. Received: kernel_size={value}"
        if isinstance(value, (tuple, list)):
            if len(value) != 2:
                raise ValueError(f"The `kernel_size` argument should be a number (or a list of two numbers) "
                                 f"Received: kernel_size={value}")
            if value[0] % 2 == 0 or value[1] % 2 == 0:
                raise ValueError(msg)
            return value[0], value[1]
        if isinstance(value, (int, float)) and value % 2:
            return value, value
        raise ValueError(msg)

    def _augment(self, x):
        x = pi._float(x)
        probability = self._uniform(x, self.factor[0], self.factor[1])
        apply = self._uniform(x, 0.0, 1.0) < probability
        lo, hi = float(self.sigma[0]), float(self.sigma[1])
        two = _core.zeros([2])
        sig = (two + lo if lo >= hi else _r.uniform_like(two, lo, hi, seed=self._generator)) + 1e-6
        s0, s1 = int(self.kernel_size[0]), int(self.kernel_size[1])
        k2 = _core.reshape(_core.expand_dims(_kernel_1d(s1, sig[1]), 1) * _core.expand_dims(_kernel_1d(s0, sig[0]), 0),
                           [s0, s1, 1, 1])
        k2 = _core.tile(k2, [1, 1, x._shape_tuple[3], 1])
        from .. import nn
        blurred = nn.depthwise_conv2d(x, k2, [1, 1, 1, 1], "SAME")
        y = _core.where(apply, blurred, x)
        return _core.clip_by_value(y, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "kernel_size": self.kernel_size, "sigma": self.sigma,
                  "value_range": self.value_range})
        return c


class RandomColorJitter(pi._RandomLayer):
    """Keras' RandomColorJitter: RandomBrightness, RandomContrast, RandomSaturation and RandomHue
    (those whose factor is given), in that order, on value_range."""

    def __init__(self, value_range=(0, 255), brightness_factor=None, contrast_factor=None, saturation_factor=None,
                 hue_factor=None, seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.value_range = value_range
        self.brightness_factor, self.contrast_factor = brightness_factor, contrast_factor
        self.saturation_factor, self.hue_factor = saturation_factor, hue_factor
        self._steps = []
        if brightness_factor is not None:
            self._steps.append(pi.RandomBrightness(brightness_factor, value_range, seed=seed))
        if contrast_factor is not None:
            self._steps.append(pi.RandomContrast(contrast_factor, value_range, seed=seed))
        if saturation_factor is not None:
            self._steps.append(col.RandomSaturation(saturation_factor, value_range, seed=seed))
        if hue_factor is not None:
            self._steps.append(col.RandomHue(hue_factor, value_range, seed=seed))
        for step in self._steps:
            step._generator = self._generator  # one stream for the whole jitter

    def _augment(self, x):
        x = pi._float(x)
        for step in self._steps:
            x = step._augment(x)
        return x

    def get_config(self):
        c = super().get_config()
        c.update({"value_range": self.value_range, "brightness_factor": self.brightness_factor,
                  "contrast_factor": self.contrast_factor, "saturation_factor": self.saturation_factor,
                  "hue_factor": self.hue_factor})
        return c


class MixUp(pi._RandomLayer):
    """Keras' MixUp: each image becomes w * image + (1 - w) * another image of the batch (a random
    permutation), w ~ Beta(alpha, alpha) per image. Given {"images": ..., "labels": ...} it mixes
    the labels with the same weights and returns the dict, as Keras'."""

    def __init__(self, alpha=0.2, data_format=None, seed=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.alpha = alpha

    def _draw(self, x):
        first = pi._float(x[:, 0, 0, 0])
        order = _core.argsort(_r.uniform_like(first, 0.0, 1.0, seed=self._generator))
        ga, gb = _gamma_like(first, self.alpha, self._generator), _gamma_like(first, self.alpha, self._generator)
        return order, ga / (ga + gb)  # Beta(alpha, alpha)

    def _mix(self, x, order, weight):
        w = _core.reshape(weight, [-1] + [1] * (len(x._shape_tuple) - 1))
        return w * x + (1.0 - w) * _core.gather(x, order)

    def _augment(self, x):
        x = pi._float(x)
        return self._mix(x, *self._draw(x))

    def __call__(self, inputs, training=None, **kwargs):
        if isinstance(inputs, dict):  # Keras' {"images", "labels"} form (a Dataset.map's element)
            return self.call(inputs, training=True if training is None else training)
        return super().__call__(inputs, training=training, **kwargs)

    def call(self, inputs, training=True):
        if not isinstance(inputs, dict):
            return super().call(inputs, training)
        images, labels = inputs["images"], inputs.get("labels")
        if not training:
            return inputs
        x, single = pi._batched(images)
        x = pi._float(x)
        order, weight = self._draw(x)
        out = dict(inputs)
        out["images"] = self._out(self._mix(x, order, weight), single)
        if labels is not None:
            out["labels"] = self._mix(pi._float(_core.convert_to_tensor(labels)), order, weight)
        return out

    def get_config(self):
        c = super().get_config()
        c["alpha"] = self.alpha
        return c


class CutMix(MixUp):
    """Keras' CutMix: each image gets a box pasted from another image of the batch (a random
    permutation); the box covers a fraction 1 - w of the image, w ~ Beta(a, a) with a drawn from
    factor's range (plus 1e-6), and the labels mix by the box's exact area. One image (rank 3) is
    returned as it is, as Keras'."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor=1.0, seed=None, data_format=None, name=None, **kwargs):
        pi._RandomLayer.__init__(self, seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)

    def _draw(self, x):
        first = pi._float(x[:, 0, 0, 0])
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        lo, hi = float(self.factor[0]), float(self.factor[1])
        one = _core.zeros([])
        alpha = (one + lo if lo >= hi else _r.uniform_like(one, lo, hi, seed=self._generator)) + 1e-6
        ga, gb = _gamma_like(first, alpha, self._generator), _gamma_like(first, alpha, self._generator)
        ratio = _core.sqrt(1.0 - ga / (ga + gb))

        def bounds(length):
            crop = ratio * float(length)
            start = _r.uniform_like(first, 0.0, 1.0, seed=self._generator) * (float(length) - crop)
            return _core.reshape(start, [-1, 1, 1, 1]), _core.reshape(start + crop, [-1, 1, 1, 1])
        x0, x1 = bounds(w)
        y0, y1 = bounds(h)
        gx = _core.reshape(_core.cast(_core.range(w), "float32"), [1, 1, w, 1])
        gy = _core.reshape(_core.cast(_core.range(h), "float32"), [1, h, 1, 1])
        box = (gx >= x0) & (gx < x1) & (gy >= y0) & (gy < y1)
        weight = _core.reshape(1.0 - (x1 - x0) * (y1 - y0) / float(w * h), [-1])
        order = _core.argsort(_r.uniform_like(first, 0.0, 1.0, seed=self._generator))
        return order, (box, weight)

    @staticmethod
    def _paste(x, order, box):
        return _core.where(_core.logical_and(box, _core.ones_like(x) > 0.0), _core.gather(x, order), x)

    def _augment(self, x):
        x = pi._float(x)
        order, (box, _) = self._draw(x)
        return self._paste(x, order, box)

    def call(self, inputs, training=True):
        images = inputs["images"] if isinstance(inputs, dict) else inputs
        x = images if isinstance(images, _core.Tensor) else _core.convert_to_tensor(images)
        if x.ndim == 3 or not training:  # Keras: no transformation for one image
            if isinstance(inputs, dict):
                return inputs
            return self._out(x)
        if not isinstance(inputs, dict):
            return self._out(self._augment(x))
        x = pi._float(x)
        order, (box, weight) = self._draw(x)
        out = dict(inputs)
        out["images"] = self._out(self._paste(x, order, box))
        if inputs.get("labels") is not None:
            out["labels"] = self._mix(pi._float(_core.convert_to_tensor(inputs["labels"])), order, weight)
        return out

    def get_config(self):
        c = pi._RandomLayer.get_config(self)
        c["factor"] = self.factor
        return c


__all__ = ["CutMix", "MixUp", "RandomColorJitter", "RandomGaussianBlur"]
