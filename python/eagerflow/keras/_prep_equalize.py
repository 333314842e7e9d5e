"""Keras 3's Equalization (channels_last): histogram equalization of each channel."""
import eagerflow as _ef

from .. import _core
from . import _prep_color as col
from . import _prep_image as pi


class Equalization(pi._ImageLayer):
    """Keras' Equalization: each channel's values (on 0..255) mapped through its histogram's
    normalised CDF over `bins` bins, rounded; as Keras', one histogram per channel over the whole
    batch, and a channel with a single occupied bin kept as it is. Transforms only when training
    (a direct call trains)."""

    def __init__(self, value_range=(0, 255), bins=256, data_format=None, name=None, **kwargs):
        super().__init__(data_format, name, **kwargs)
        self.bins = bins
        self.value_range = col._value_range(value_range)

    def __call__(self, inputs, training=None, **kwargs):
        return super().__call__(inputs, training=True if training is None else training, **kwargs)

    def _equalize(self, channel):
        bins = int(self.bins)
        channel = col._rescale(channel, self.value_range, (0, 255))
        idx = _core.clip_by_value(_core.cast(channel * (bins - 1) / 255.0, "int32"), 0, bins - 1)
        flat = _core.reshape(idx, [-1])
        # a bincount that traces: unsorted_segment_sum of ones
        hist = _ef.math.unsorted_segment_sum(_core.cast(flat, "float32") * 0.0 + 1.0, flat, bins)
        occupied = _core.reduce_sum(_core.cast(hist > 0.0, "float32"))
        cdf = _ef.math.cumsum(hist)
        cdf_min = _core.reduce_min(_core.where(cdf > 0.0, cdf, _core.zeros_like(cdf) + 3.0e38))
        denominator = cdf[-1] - cdf_min
        denominator = _core.where(denominator == 0.0, _core.ones_like(denominator), denominator)
        table = _core.clip_by_value(_ef.math.round((cdf - cdf_min) * 255.0 / denominator), 0.0, 255.0)
        lookup = _core.clip_by_value(_core.cast(_core.clip_by_value(channel / 255.0 * (bins - 1), 0.0, bins - 1.0),
                                                "int32"), 0, bins - 1)
        equalized = _core.where(occupied <= 1.0, channel, _core.gather(table, lookup))
        return col._rescale(equalized, (0, 255), self.value_range)

    def call(self, inputs, training=True):
        x = pi._float(inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs))
        if not training:
            return self._out(x)
        channels = x._shape_tuple[-1]
        return self._out(_core.stack([self._equalize(x[..., i]) for i in range(channels)], -1))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        c = super().get_config()
        c.update({"bins": self.bins, "value_range": self.value_range})
        return c


__all__ = ["Equalization"]
