"""Keras 3's RandomErasing (channels_last): a random box of each image replaced by a fill."""
from .. import _core
from . import _prep_image as pi

_r = _core.random


class RandomErasing(pi._RandomLayer):
    """Keras' RandomErasing: with probability p (drawn from factor's range, [0, f] for a number f)
    a box of each image is filled: its sides are sqrt(s) of the image's, s drawn from scale's range
    for each side, at a uniform position; the fill is fill_value (a number or three, one per
    channel) or, for None, normal noise times value_range[1], clipped to value_range."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor=1.0, scale=(0.02, 0.33), fill_value=None, value_range=(0, 255), seed=None,
                 data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        self.scale = self._set_factor(scale, "scale")
        if fill_value is not None and not isinstance(fill_value, (int, float)) and \
                not (isinstance(fill_value, (tuple, list)) and len(fill_value) == 3):
            raise ValueError("The `fill_value` argument should be a number (or a list of three numbers) ")
        self.fill_value, self.value_range = fill_value, value_range

    def _augment(self, x):
        x = pi._float(x)
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        first = x[:, 0, 0, 0]

        def side():
            lo, hi = float(self.scale[0]), float(self.scale[1])
            return _core.sqrt(first * 0.0 + lo if lo >= hi else _r.uniform_like(first, lo, hi, seed=self._generator))
        sx, sy = side(), side()

        def bounds(length, ratio):
            crop = ratio * float(length)
            start = _r.uniform_like(first, 0.0, 1.0, seed=self._generator) * (float(length) - crop)
            return _core.reshape(start, [-1, 1, 1, 1]), _core.reshape(start + crop, [-1, 1, 1, 1])
        x0, x1 = bounds(w, sx)
        y0, y1 = bounds(h, sy)
        gx = _core.reshape(_core.cast(_core.range(w), "float32"), [1, 1, w, 1])
        gy = _core.reshape(_core.cast(_core.range(h), "float32"), [1, h, 1, 1])
        box = (gx >= x0) & (gx < x1) & (gy >= y0) & (gy < y1)
        probability = self._uniform(x, self.factor[0], self.factor[1])
        apply = self._uniform(x, 0.0, 1.0) < probability
        if self.fill_value is None:
            fill = _r.normal_like(x, 0.0, 1.0, seed=self._generator) * float(self.value_range[1])
        elif isinstance(self.fill_value, (tuple, list)):
            fill = _core.zeros_like(x) + _core.convert_to_tensor([float(v) for v in self.fill_value])
        else:
            fill = _core.zeros_like(x) + float(self.fill_value)
        fill = _core.clip_by_value(fill, float(self.value_range[0]), float(self.value_range[1]))
        erase = _core.logical_and(_core.logical_and(box, apply), _core.ones_like(x) > 0.0)
        return _core.where(erase, fill, x)

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "scale": self.scale, "fill_value": self.fill_value,
                  "value_range": self.value_range})
        return c


__all__ = ["RandomErasing"]
