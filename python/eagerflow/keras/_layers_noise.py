"""Keras 3's regularization layers written from ef ops: GaussianNoise, GaussianDropout,
AlphaDropout, SpatialDropout1D/2D/3D (all identity at inference) and ActivityRegularization."""
import math

import eagerflow as _ef

from . import regularizers as _regularizers
from ._catalogue_base import CatalogueLayer, register
from ._layers_reshaping import _data_format


def _rate(rate, what):
    if not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise ValueError(f"Invalid value received for argument `rate`. Expected a float value between 0 and 1. "
                         f"Received: rate={rate}")
    return rate


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
            return inputs + _ef.random.normal(_ef.shape(inputs), stddev=self.stddev, dtype=inputs.dtype)
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
            return inputs * _ef.random.normal(_ef.shape(inputs), mean=1.0, stddev=stddev, dtype=inputs.dtype)
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
        shape = _ef.shape(inputs)
        if self.noise_shape is not None:
            shape = [s if n is None else n for s, n in zip(_ef.unstack(shape), self.noise_shape)]
        kept = _ef.random.uniform(shape, dtype=inputs.dtype) >= self.rate
        kept = _ef.broadcast_to(kept, _ef.shape(inputs))
        a = ((1 - self.rate) * (1 + self.rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * self.rate
        x = _ef.where(kept, inputs, _ef.fill(_ef.shape(inputs), _ef.cast(alpha_p, inputs.dtype)))
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
        shape = _ef.unstack(_ef.shape(inputs))
        ones = [1] * self._rank
        if self.data_format == "channels_first":
            noise = [shape[0], shape[1]] + ones
        else:
            noise = [shape[0]] + ones + [shape[-1]]
        return _ef.nn.dropout(inputs, self.rate, noise_shape=_ef.stack([_ef.cast(n, _ef.int32) for n in noise]))


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
