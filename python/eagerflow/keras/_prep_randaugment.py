"""Keras 3's RandAugment and AugMix: chains of augmentations picked at random (one per batch)
from Keras' eleven operations."""
from .. import _core
from . import _prep_color as col
from . import _prep_equalize as eq
from . import _prep_image as pi
from . import _prep_shear as sh

_r = _core.random


# Keras' order; AugMix(all_ops=False) takes the first seven
_NAMES = ["random_shear", "random_translation", "random_rotation", "random_posterization", "solarization",
          "auto_contrast", "equalization", "random_brightness", "random_color_degeneration", "random_contrast",
          "random_sharpness"]
_RAND_AUGMENT_ORDER = ["random_shear", "random_translation", "random_rotation", "random_brightness",
                       "random_color_degeneration", "random_contrast", "random_sharpness", "random_posterization",
                       "solarization", "auto_contrast", "equalization"]


def _operations(f, value_range, interpolation, seed, generator, names=_RAND_AUGMENT_ORDER):
    """Keras' sub-layers at strength f (a (lower, upper) pair), drawing from `generator`."""
    make = {
        "random_shear": lambda: sh.RandomShear(f, f, interpolation=interpolation, seed=seed),
        "random_translation": lambda: pi.RandomTranslation(f, f, interpolation=interpolation, seed=seed),
        "random_rotation": lambda: pi.RandomRotation(f, interpolation=interpolation, seed=seed),
        "random_brightness": lambda: pi.RandomBrightness(f, value_range, seed=seed),
        "random_color_degeneration": lambda: col.RandomColorDegeneration(f, value_range, seed=seed),
        "random_contrast": lambda: pi.RandomContrast(f, value_range, seed=seed),
        "random_sharpness": lambda: col.RandomSharpness(f, value_range, seed=seed),
        "random_posterization": lambda: col.RandomPosterization(max(1, int(8 * f[1])), value_range, seed=seed),
        "solarization": lambda: col.Solarization(f, f, value_range, seed=seed),
        "auto_contrast": lambda: col.AutoContrast(value_range),
        "equalization": lambda: eq.Equalization(value_range),
    }
    ops = [make[n]() for n in names]
    for op in ops:
        if isinstance(op, pi._RandomLayer):
            op._generator = generator  # one stream for the whole layer
    return ops


def _apply(op, x):
    if isinstance(op, col.AutoContrast):
        return op.call(x)
    if isinstance(op, eq.Equalization):
        return op.call(x, training=True)
    return op._augment(x)


def _one_of(ops, x, generator, skip=False):
    """One of ops on x, drawn uniformly for the whole batch (skip: x itself is one more choice)."""
    n = len(ops) + (1 if skip else 0)
    pick = _core.floor(_r.uniform_like(_core.zeros([]), 0.0, float(n), seed=generator))
    out = x
    for k, op in enumerate(ops):
        out = _core.where(pick == float(k), pi._float(_apply(op, x)), out)
    return out


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
        self._ops = _operations(self.factor, value_range, interpolation, seed, self._generator)

    def _augment(self, x):
        x = pi._float(x)
        for _ in range(self.num_ops):
            x = _one_of(self._ops, x, self._generator)
        return x

    def get_config(self):
        c = super().get_config()
        c.update({"value_range": self.value_range, "num_ops": self.num_ops, "factor": self.factor,
                  "interpolation": self.interpolation})
        return c


class AugMix(pi._RandomLayer):
    """Keras' AugMix: num_chains chains of up to chain_depth operations (each step one of the
    operations, or none), mixed with Dirichlet(alpha) weights, then w * image + (1 - w) * mix,
    w ~ Beta(alpha, alpha), clipped to value_range. all_ops=False leaves out brightness, colour,
    contrast and sharpness. Unlike Keras' TensorFlow path, the operations are drawn on every call
    (Keras draws them in Python, once per trace)."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, value_range=(0, 255), num_chains=3, chain_depth=3, factor=0.3, alpha=1.0, all_ops=True,
                 interpolation="bilinear", seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.value_range, self.num_chains, self.chain_depth = value_range, num_chains, chain_depth
        self.factor = self._set_factor(factor)
        self.alpha, self.all_ops, self.interpolation = alpha, all_ops, interpolation
        names = _NAMES if all_ops else _NAMES[:7]
        self._ops = _operations(self.factor, value_range, interpolation, seed, self._generator, names)

    def _augment(self, x):
        from ._prep_mix import _gamma_like
        x = pi._float(x)
        g = _gamma_like(_core.zeros([self.num_chains]), self.alpha, self._generator)
        mixing = g / _core.reduce_sum(g)
        ga = _gamma_like(_core.zeros([1]), self.alpha, self._generator)
        gb = _gamma_like(_core.zeros([1]), self.alpha, self._generator)
        w = _core.reshape(ga / (ga + gb), [])
        mixed = _core.zeros_like(x)
        for i in range(self.num_chains):
            chain = x
            for _ in range(self.chain_depth):
                chain = _one_of(self._ops, chain, self._generator, skip=True)
            mixed = mixed + chain * mixing[i]
        y = w * x + (1.0 - w) * mixed
        return _core.clip_by_value(y, float(self.value_range[0]), float(self.value_range[1]))

    def get_config(self):
        c = super().get_config()
        c.update({"value_range": self.value_range, "num_chains": self.num_chains, "chain_depth": self.chain_depth,
                  "factor": self.factor, "alpha": self.alpha, "all_ops": self.all_ops,
                  "interpolation": self.interpolation})
        return c


__all__ = ["AugMix", "RandAugment"]
