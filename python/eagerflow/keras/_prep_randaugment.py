"""Keras 3's RandAugment: num_ops augmentations, each picked at random (one per batch) from Keras'
eleven, applied in turn."""
from .. import _core
from . import _prep_color as col
from . import _prep_equalize as eq
from . import _prep_image as pi
from . import _prep_shear as sh

_r = _core.random


class RandAugment(pi._RandomLayer):
    """Keras' RandAugment(value_range=(0, 255), num_ops=2, factor=0.5, interpolation="bilinear"):
    num_ops times, one of RandomShear, RandomTranslation, RandomRotation, RandomBrightness,
    RandomColorDegeneration, RandomContrast, RandomSharpness, RandomPosterization, Solarization,
    AutoContrast and Equalization (uniformly, for the whole batch), each at strength factor."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, value_range=(0, 255), num_ops=2, factor=0.5, interpolation="bilinear", seed=None,
                 data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.value_range, self.num_ops, self.interpolation = value_range, num_ops, interpolation
        self.factor = self._set_factor(factor)
        f = self.factor
        self._ops = [
            sh.RandomShear(f, f, interpolation=interpolation, seed=seed),
            pi.RandomTranslation(f, f, interpolation=interpolation, seed=seed),
            pi.RandomRotation(f, interpolation=interpolation, seed=seed),
            pi.RandomBrightness(f, value_range, seed=seed),
            col.RandomColorDegeneration(f, value_range, seed=seed),
            pi.RandomContrast(f, value_range, seed=seed),
            col.RandomSharpness(f, value_range, seed=seed),
            col.RandomPosterization(max(1, int(8 * f[1])), value_range, seed=seed),
            col.Solarization(f, f, value_range, seed=seed),
            col.AutoContrast(value_range),
            eq.Equalization(value_range),
        ]
        for op in self._ops:
            if isinstance(op, pi._RandomLayer):
                op._generator = self._generator  # one stream for the whole layer

    def _apply(self, op, x):
        if isinstance(op, col.AutoContrast):
            return op.call(x)
        if isinstance(op, eq.Equalization):
            return op.call(x, training=True)
        return op._augment(x)

    def _augment(self, x):
        x = pi._float(x)
        n = len(self._ops)
        for _ in range(self.num_ops):
            pick = _core.floor(_r.uniform_like(_core.zeros([]), 0.0, float(n), seed=self._generator))
            out = x
            for k, op in enumerate(self._ops):
                out = _core.where(pick == float(k), pi._float(self._apply(op, x)), out)
            x = out
        return x

    def get_config(self):
        c = super().get_config()
        c.update({"value_range": self.value_range, "num_ops": self.num_ops, "factor": self.factor,
                  "interpolation": self.interpolation})
        return c


__all__ = ["RandAugment"]
