"""Keras 3's RandomShear (channels_last) on _prep_image's affine sampling."""
from . import _prep_image as pi


class RandomShear(pi._AffineLayer):
    """Keras' RandomShear: output (x, y) reads input (x + sx * y, sy * x + y), sx and sy drawn from
    x_factor's and y_factor's ranges (a number f: [-f, f]; factors in [0, 1]) and both negated
    together for half the images."""

    def __init__(self, x_factor=0.0, y_factor=0.0, interpolation="bilinear", fill_mode="reflect", fill_value=0.0,
                 data_format=None, seed=None, name=None, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, seed, data_format, name, **kwargs)
        self.x_factor = self._shear_factor(x_factor, "x_factor")
        self.y_factor = self._shear_factor(y_factor, "y_factor")

    @staticmethod
    def _shear_factor(factor, what):
        msg = f"The `factor` argument should be a number (or a list of two numbers) in the range [0, 1]. "
        values = factor if isinstance(factor, (tuple, list)) else [factor]
        if len(values) not in (1, 2) or not all(isinstance(v, (int, float)) for v in values):
            raise ValueError(msg + f"Received: {what}={factor}")
        # Keras 3.15 checks a pair against [0, 1] too, so its own config ((-f, f)) fails to load;
        # a pair here may reach down to -1, so that get_config / from_config round-trips
        low = -1.0 if len(values) == 2 else 0.0
        for v in values:
            if v > 1.0 or v < low:
                raise ValueError(msg + f"Received: input_number={v}")
        if len(values) == 2:
            return tuple(sorted(values))
        return (-abs(values[0]), abs(values[0]))

    def _matrix(self, x):
        sign = self._uniform(x, 0.0, 1.0)
        sign = 1.0 - 2.0 * pi._core.cast(sign > 0.5, "float32")
        sx = self._uniform(x, self.x_factor[0], self.x_factor[1]) * sign
        sy = self._uniform(x, self.y_factor[0], self.y_factor[1]) * sign
        one, zero = sx * 0.0 + 1.0, sx * 0.0
        return (one, sx, zero), (sy, one, zero)

    def get_config(self):
        c = super().get_config()
        c.update({"x_factor": self.x_factor, "y_factor": self.y_factor})
        return c


__all__ = ["RandomShear"]
