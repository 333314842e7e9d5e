"""Keras 3's regularization layers written from ef ops: GaussianNoise, GaussianDropout,
AlphaDropout, SpatialDropout1D/2D/3D (all identity at inference) and ActivityRegularization."""
import math

import eagerflow as _ef

from .. import _core
from . import regularizers as _regularizers
from ._catalogue_base import CatalogueLayer, register
from ._layers_reshaping import _data_format

_random = _core.random  # the *_like draws take the input's shape at run time (an unknown batch in fit)


def _rate(rate, what):
    if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                         f"Received: rate={rate}")
    return rate


def _noise_slice(x, noise_shape):
    """A slice of x shaped as Keras' noise_shape (None: the input's size, 1: one draw broadcast),
    so uniform_like draws it without reading a dynamic batch size."""
    if noise_shape is None:
        return x
    index = tuple(slice(None) if n is None or n == x.shape[i] else slice(0, 1) for i, n in enumerate(noise_shape))
    for i, n in enumerate(noise_shape):
        if n not in (None, 1) and n != x.shape[i]:
            raise ValueError(f"noise_shape {tuple(noise_shape)} does not broadcast to the input shape {tuple(x.shape)}")
    return x[index]


class GaussianNoise(CatalogueLayer):
    """Adds N(0, stddev) noise in training."""

    _config = ("stddev", "seed")

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= stddev <= 1:
            raise ValueError(f"Invalid value received for argument `stddev`. Expected a float value between 0 and 1. "
                             f"Received: stddev={stddev}")
        self.stddev, self.seed = stddev, seed

    def call(self, inputs, training=False):
        if training and self.stddev > 0:
            return inputs + _random.normal_like(inputs, 0.0, self.stddev, seed=self.seed)
        return inputs


class GaussianDropout(CatalogueLayer):
    """Multiplies by N(1, rate / (1 - rate)) noise in training."""

    _config = ("rate", "seed")

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _rate(rate, "GaussianDropout"), seed

    def call(self, inputs, training=False):
        if training and 0 < self.rate < 1:
            stddev = math.sqrt(self.rate / (1.0 - self.rate))
            return inputs * _random.normal_like(inputs, 1.0, stddev, seed=self.seed)
        return inputs


class AlphaDropout(CatalogueLayer):
    """Dropout that keeps SELU's mean and variance: dropped units go to SELU's negative saturation
    and an affine map restores the moments (Klambauer et al.)."""

    _config = ("rate", "seed", "noise_shape")

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.noise_shape, self.seed = _rate(rate, "AlphaDropout"), noise_shape, seed

    def call(self, inputs, training=False):
        if not (training and 0 < self.rate < 1):
            return inputs
        alpha_p = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
        kept = _random.uniform_like(_noise_slice(inputs, self.noise_shape), seed=self.seed) >= self.rate
        kept = _ef.logical_and(kept, _ef.cast(_ef.ones_like(inputs), _ef.bool))  # broadcast to the input
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        x = _ef.where(kept, inputs, _ef.zeros_like(inputs) + alpha_p)
        return a * x + b


class _SpatialDropout(CatalogueLayer):
    """Drops whole feature maps (channels), scaled by 1 / (1 - rate), in training."""
    _rank = 1
    _config = ("rate", "seed", "data_format")

    def __init__(self, rate, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.rate, self.seed = _rate(rate, type(self).__name__), seed
        self.data_format = _data_format(data_format)

    def call(self, inputs, training=False):
        if len(inputs.shape) != self._rank + 2:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self._rank + 2}. "
                             f"Received: inputs.shape={inputs.shape}")
        if not (training and self.rate > 0):
            return inputs
        ones = [1] * self._rank
        noise = [None, None] + ones if self.data_format == "channels_first" else [None] + ones + [None]
        keep = _random.uniform_like(_noise_slice(inputs, noise), seed=self.seed) >= self.rate
        return inputs * _ef.cast(keep, inputs.dtype) * (1.0 / (1.0 - self.rate))


class SpatialDropout1D(_SpatialDropout):
    _config = ("rate", "seed")

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(rate, seed, None, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    _rank = 2


class SpatialDropout3D(_SpatialDropout):
    _rank = 3


class ActivityRegularization(CatalogueLayer):
    """Adds l1 * sum|x| + l2 * sum(x^2) of its output (per sample of the batch) to the losses."""

    _config = ("l1", "l2")

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(**kwargs)
        self.l1, self.l2 = l1, l2
        self.activity_regularizer = _regularizers.L1L2(l1=l1, l2=l2)

    def call(self, inputs):
        return inputs


register(GaussianNoise, GaussianDropout, AlphaDropout, SpatialDropout1D, SpatialDropout2D, SpatialDropout3D,
         ActivityRegularization)
